"""``materialize``: any Hurray tensor -> a dense row-major tensor on the same device.

Dense layouts gather on the device (offsets computed there from the layout parameters);
quantized tensors are then dequantized; composites assemble their members.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.ops.layout_host import element, relayout, sparsify
from hurray_gpu.ops.layout_plan import DENSE_TAGS, plan_dense
from hurray_gpu.ops.layout_run import alloc_out, dense_result, device_buffers, run_dense

__all__ = ["element", "materialize", "materialize_layout", "relayout", "sparsify"]

_FLOAT_OUT = ("float32", "float16", "bfloat16")
_SPARSE_TAGS = (0x06, 0x07, 0x08, 0x09)


def materialize_layout(t: Any) -> Any:
    """Gather a dense-layout tensor into row-major storage of the same type (no dequant).

    Args:
        t: a Tensor with a row/col-major, strided, tiled, Morton or Hilbert layout.

    Returns:
        A row-major Tensor of ``t.dtype`` on ``t``'s device; quantization parameters are not
        carried (see :func:`materialize`).

    Raises:
        HurrayFormatError: layout fields that break the spec, or a layout addressing bytes
            outside buffer 0 (checked before launch).
        UnsupportedOpError: a non-dense layout, or sizes beyond 32-bit indexing.
    """
    dev = t.device
    src = device_buffers(t, dev)[0]
    plan = plan_dense(t.descriptor, src.nbytes)
    out = alloc_out(dev, plan, t.dtype)
    try:
        run_dense(dev, plan, src, out)
    except BaseException:
        out.free()
        raise
    return dense_result(dev, t.dtype, plan.shape, out)


def _float_convert(t: Any, dtype: str, kernel: str) -> Any:
    """Round/widen between float32 and float16/bfloat16 with the basic convert kernels."""
    from hurray_gpu.format.dtypes import buffer_size
    from hurray_gpu.runtime.buffer import Buffer

    dev, count = t.device, math.prod(int(d) for d in t.shape)
    src = device_buffers(t, dev)[0]
    out = Buffer(dev, max(buffer_size(by_name(dtype), count), 1))
    dev.run(kernel, dst=out, src=src, n=count)
    return dense_result(dev, by_name(dtype), tuple(int(d) for d in t.shape), out)


def _convert(t: Any, dtype: str) -> Any:
    """Change the element type of a row-major tensor (dequantize, unpack or widen)."""
    from hurray_gpu.ops.dequantize import dequantize, unpack

    if t.descriptor.quantization is not None:
        return dequantize(t, dtype)
    if t.dtype.bits <= 8:
        return unpack(t, dtype)
    from hurray_gpu.kernels.dialect.kernel import FLOAT_TYPES

    kernel = f"{FLOAT_TYPES.get(t.dtype.name)}_to_{FLOAT_TYPES.get(dtype or '')}"
    if kernel in ("f32_to_f16", "f32_to_bf16", "f16_to_f32", "bf16_to_f32"):
        return _float_convert(t, dtype, kernel)
    raise UnsupportedOpError(f"cannot convert unquantized {t.dtype.name} to {dtype}",
                             fix="materialize without dtype and convert with NumPy.")


def _dense(t: Any, dtype: str | None) -> Any:
    desc = t.descriptor
    quantized = desc.quantization is not None
    if quantized or (dtype in _FLOAT_OUT and desc.dtype.bits <= 8
                     and by_name(dtype) != desc.dtype):
        # One pass: the dequant/unpack formula reads each code at its layout offset.
        from hurray_gpu.ops.layout_dequant import materialize_dequant

        return materialize_dequant(t, dtype or "float32")
    result = materialize_layout(t)
    if dtype is None or by_name(dtype) == desc.dtype:
        return result
    return _convert(result, dtype)


def materialize(t: Any, dtype: str | None = None, *,
                seq_lens: Sequence[int] | None = None) -> Any:
    """Return ``t`` as a dense row-major tensor on the same device.

    Args:
        t: a Tensor: dense (row/col-major, strided, tiled, Morton, Hilbert), sparse (COO,
            CSR, CSC, CSF), block-paged, or a composite head with its members.
        dtype: the result's element type. Quantized tensors dequantize to it (default
            ``"float32"``); unquantized ones keep their type unless ``dtype`` is given
            (sub-byte and 8-bit floats unpack to ``float32/float16/bfloat16``).
        seq_lens: block-paged only: the token count of each sequence (may be omitted
            when every sequence's pages are full).

    Returns:
        A row-major Tensor (a composite group returns a tuple of its materialized members).

    Raises:
        HurrayFormatError: a descriptor or index buffer that breaks the spec (checked
            before any kernel dereferences it), naming the first bad position.
        UnsupportedOpError: a layout or type conversion this build cannot do.
    """
    if dtype is not None and dtype not in _FLOAT_OUT:
        by_name(dtype)  # an unknown name raises HurrayFormatError
    tag = t.descriptor.layout_tag
    if tag in DENSE_TAGS:
        return _dense(t, dtype)
    if tag == 0x0B:
        from hurray_gpu.ops.layout_composite import materialize_composite

        return materialize_composite(t, dtype)
    if tag in _SPARSE_TAGS:
        from hurray_gpu.ops.layout_sparse import materialize_sparse

        return materialize_sparse(t, dtype)
    desc = t.descriptor
    if tag == 0x0A and (desc.quantization is not None or (
            dtype in _FLOAT_OUT and desc.dtype.bits <= 8 and by_name(dtype) != desc.dtype)):
        # One pass: each token row's codes are read from its page and dequantized/unpacked.
        from hurray_gpu.ops.dequant_paged import dequantize_paged

        return dequantize_paged(t, dtype or "float32", seq_lens)
    if tag == 0x0A:
        from hurray_gpu.ops.layout_paged import materialize_paged

        return materialize_paged(t, dtype, seq_lens)
    raise UnsupportedOpError(f"layout 0x{tag:02X} cannot be materialized",
                             fix="private and extension layouts need an out-of-band reader.")
