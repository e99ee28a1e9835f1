"""Public dequantization and unpacking on the tensor's device: ``dequantize`` and ``unpack``.

The result is a dense row-major Tensor on the same device; invalid parameters found by the
kernel raise HurrayFormatError instead of returning data.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.buffer import Buffer
from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor import TensorDescriptor
from hurray_gpu.format.descriptor.validate import validate_descriptor
from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.kernels import get_kernel
from hurray_gpu.ops.errors_explain import check_flag, explain_invalid
from hurray_gpu.ops.plan import DequantPlan, elements_per_item, plan_dequantize, plan_unpack
from hurray_gpu.ops.plan import _out as _out_dtype
from hurray_gpu.ops.tables import device_table

__all__ = ["bind_inputs", "dequantize", "launch", "unpack"]


def _device_buffers(t: Any, dev: Any) -> list[Buffer]:
    """The tensor's buffers as Buffers on ``dev`` (host arrays are copied onto the cpu device)."""
    return [b if isinstance(b, Buffer) else Buffer.from_bytes(dev, np.ascontiguousarray(b))
            for b in t.buffers]


def _check_sizes(desc: Any, bufs: list[Buffer]) -> None:
    """Every buffer must hold what its handle declares: kernels never read past a Buffer."""
    if len(bufs) != len(desc.buffers):
        raise HurrayFormatError(f"{len(bufs)} buffers for {len(desc.buffers)} handles",
                                field="buffer_count", fix="pass one buffer per handle.")
    for i, (b, h) in enumerate(zip(bufs, desc.buffers, strict=True)):
        if b.nbytes < h.byte_size:
            raise HurrayFormatError(
                f"buffers[{i}] holds {b.nbytes} bytes but the descriptor declares {h.byte_size}",
                field=f"buffers[{i}].byte_size", fix="pass exactly byte_size bytes per buffer.")


def bind_inputs(plan: DequantPlan, dev: Any, bufs: list[Buffer]) -> dict[str, Buffer]:
    """Map each kernel buffer parameter except ``dst`` and ``err`` to a Buffer.

    Parameters a plan does not use are bound to the data buffer (never read).
    """
    bound = {name: bufs[index] for name, index in plan.inputs.items()}
    kernel = get_kernel(plan.kernel)
    for param in kernel.buffers:
        if param.name not in bound and param.name not in ("dst", "err"):
            bound[param.name] = device_table(dev, plan.lut) if param.name == "lut" and plan.lut \
                else bound["data"]
    return bound


def launch(plan: DequantPlan, dev: Any, inputs: dict[str, Buffer], out: Buffer,
           err: Buffer | None = None, wait: bool = False) -> float | None:
    """Run a planned kernel into ``out`` and raise if it flagged invalid parameters.

    Args:
        plan: from :func:`plan_dequantize` or :func:`plan_unpack`.
        dev: the device holding every Buffer.
        inputs: from :func:`bind_inputs`.
        out: the result Buffer (``count`` elements of ``out_dtype``).
        err: a 4-byte Buffer for the kernel's flag (allocated when None).
        wait: return the kernel's elapsed seconds.

    Returns:
        Seconds when ``wait``, else None.

    Raises:
        HurrayFormatError: an invalid scale, zero point or e8m0 code.
    """
    if plan.count == 0:
        return 0.0 if wait else None
    kernel = get_kernel(plan.kernel)
    args: dict[str, Any] = {**inputs, **plan.scalars, "dst": out}
    flagged = any(p.name == "err" for p in kernel.buffers)
    if flagged:
        err = err if err is not None else Buffer(dev, 4)
        err.copyin(np.zeros(1, np.uint32))
        args["err"] = err
    took = dev.run(kernel, wait=wait, **args)
    if flagged:
        assert err is not None
        check_flag(err, plan.kernel, lambda: explain_invalid(plan, inputs))
    return took


def _result(plan: DequantPlan, dev: Any, out: Buffer) -> Any:
    from hurray_gpu.tensor import Tensor
    from hurray_gpu.tensor_device import host_view, is_host

    desc = TensorDescriptor.dense(plan.out_dtype, plan.shape, device_tag=dev.tag)
    return Tensor.from_parts(desc, [host_view(out) if is_host(dev) else out])


def _run(t: Any, planner: Any, dtype: str | None, device: Any) -> Any:
    # Plan first: a hostile descriptor fails before any transfer or allocation.
    planner(t.descriptor, dtype)
    if device is not None:
        t = t.to(device)
    dev = t.device
    plan = planner(t.descriptor, dtype, ept=elements_per_item(dev))
    bufs = _device_buffers(t, dev)
    _check_sizes(t.descriptor, bufs)
    out = Buffer(dev, buffer_size(by_name(plan.out_dtype), plan.count))
    try:
        launch(plan, dev, bind_inputs(plan, dev, bufs), out)
    except BaseException:
        out.free()
        raise
    return _result(plan, dev, out)


def dequantize(t: Any, dtype: str = "float32", device: Any = None, *,
               seq_lens: Any = None) -> Any:
    """Dequantize ``t`` on its device (each scheme's Dequantization Formula in the Hurray spec,
    bit-exact on every backend).

    Affine schemes compute ``f32(scale) * f32(i32(q - zero_point))`` (the subtraction wraps
    in 32-bit two's complement), NF4 ``absmax * NF4[q]``, MXFP ``2^(e-127) * value(q)``; the
    f32 result is rounded to ``dtype`` to nearest even. Unquantized types of 8 bits or fewer
    (int4, bool, float8/6/4, ...) are unpacked to their values.

    Args:
        t: a Tensor (host or device) with a row-major layout.
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        device: move ``t`` there first (any spec :func:`hurray_gpu.device` accepts).
        seq_lens: block-paged tensors only: tokens per sequence (default ``t.seq_lens``,
            else full pages, docs/format.md, Token counts per sequence).

    Returns:
        A dense row-major Tensor of ``dtype`` and ``t.shape`` on the same device (block-paged
        tensors: their logical ``[total_tokens, heads, dim]``, per-page-slot scales applied
        through the block table).

    Raises:
        HurrayFormatError: a malformed descriptor or buffer size (before any launch), or an
            invalid parameter found by the kernel (zero/non-finite scale, zero point out of
            range, e8m0 scale 0x00/0xFF).
        UnsupportedOpError: a non-row-major layout, an unsupported dtype or a tensor too big
            for 32-bit indexing.
    """
    if t.descriptor.layout_tag == 0x0A:
        from hurray_gpu.ops.dequant_paged import dequantize_paged

        _out_dtype(dtype)
        validate_descriptor(t.descriptor, permissive=False)
        # t.to() makes a plain Tensor: take an exported tensor's seq_lens first.
        lens = seq_lens if seq_lens is not None else getattr(t, "seq_lens", None)
        return dequantize_paged(t if device is None else t.to(device), dtype, lens)
    if seq_lens is not None:
        raise UnsupportedOpError("seq_lens applies to block-paged tensors only",
                                 fix="drop seq_lens.")
    return _run(t, plan_dequantize, dtype, device)


def unpack(t: Any, dtype: str | None = None, device: Any = None) -> Any:
    """Unpack an unquantized sub-byte or small-float tensor on its device.

    Args:
        t: a Tensor of bool, int4/uint4/int2/uint2, float4/6/8 (row-major).
        dtype: None for the natural wider type (int8/uint8 for integers and bool, float32
            for floats), or ``"float32"``/``"float16"``/``"bfloat16"``.
        device: move ``t`` there first.

    Returns:
        A dense row-major Tensor on the same device.

    Raises:
        HurrayFormatError: a malformed descriptor, or float8_e8m0 data with code 0x00/0xFF.
        UnsupportedOpError: a quantized tensor or an impossible target type.
    """
    return _run(t, plan_unpack, dtype, device)
