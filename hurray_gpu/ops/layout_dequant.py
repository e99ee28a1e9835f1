"""Fused layout conversion + dequantization: one pass from quantized storage in any dense layout
to a row-major float tensor (no intermediate copy), with the dequant kernels' own formulas.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor.layouts import RowMajor
from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.kernels.dequant_variants import fused_kernel
from hurray_gpu.kernels.layout import AXIS_TABLE
from hurray_gpu.ops.layout_plan import plan_dense
from hurray_gpu.ops.layout_run import cached_tables, dense_result, device_buffers
from hurray_gpu.runtime.buffer import Buffer

__all__ = ["materialize_dequant"]


def _err_template(dev: Any, plan: Any, words: int) -> Buffer:
    """Build ``[0 | nx, ny | x | y | z tables]`` on the device (AXIS_TABLE launches)."""
    lp = Buffer.from_bytes(dev, np.ascontiguousarray(plan.records, np.uint32))
    table = Buffer(dev, 4 * words)
    table.copyin(np.array([0, plan.scalars["nx"], plan.scalars["ny"]], np.uint32))
    at = 3
    for d0, nd, entries, base in plan.regions:
        dev.run(AXIS_TABLE, dst=table, lp=lp, n=entries, d0=d0, nd=nd, base=base, dat=at)
        at += max(entries, 1)
    return table


def _err_tables(dev: Any, plan: Any) -> tuple[Buffer, int]:
    """The err buffer of a sep launch: ``[0 | nx, ny | x | y | z tables]`` and its length.

    The kernel writes the flag word, so each launch gets its own copy of a template that is
    built once per plan and device (when small; see ``layout_run.cached_tables``).
    """
    words = 3 + sum(max(r[2], 1) for r in plan.regions)
    key = ("err", np.ascontiguousarray(plan.records, np.uint32).tobytes(),
           tuple(plan.regions), int(plan.scalars["nx"]), int(plan.scalars["ny"]))
    template = cached_tables(dev, key, words, lambda: [_err_template(dev, plan, words)])[0]
    err = Buffer(dev, 4 * words)
    err.copy_from(template)
    return err, words


def _launch(dev: Any, qplan: Any, kernel: Any, inputs: dict[str, Buffer],
            scalars: dict[str, Any], out: Buffer, err: Buffer) -> None:
    from hurray_gpu.ops.errors_explain import check_flag, explain_invalid

    dev.run(kernel, dst=out, err=err, **inputs, **scalars)
    check_flag(err, kernel.name, lambda: explain_invalid(qplan, inputs))


def materialize_dequant(t: Any, dtype: str) -> Any:
    """Dequantize a quantized dense-layout tensor straight into row-major ``dtype``.

    Args:
        t: a quantized Tensor with a dense layout (any of row/col-major, strided, tiled,
            Morton, Hilbert).
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.

    Returns:
        The row-major Tensor on ``t``'s device.

    Raises:
        HurrayFormatError: a bad layout or buffer size (before launch), or an invalid
            quantization parameter flagged by the kernel.
        UnsupportedOpError: an unsupported dtype, scheme or size.
    """
    from hurray_gpu.ops.dequantize import bind_inputs
    from hurray_gpu.ops.plan import plan_dequantize

    desc, dev = t.descriptor, t.device
    bufs = device_buffers(t, dev)
    plan = plan_dense(desc, bufs[0].nbytes)
    data = dataclasses.replace(desc.buffers[0], byte_size=buffer_size(desc.dtype, plan.count))
    row = dataclasses.replace(desc, layout=RowMajor(), byte_offset=0,
                              buffers=(data, *desc.buffers[1:]))
    qplan = plan_dequantize(row, dtype)
    kernel = fused_kernel(qplan.kernel, plan.addr)
    scalars = {**qplan.scalars, "doff": plan.doff}
    inputs = bind_inputs(qplan, dev, bufs)
    if plan.addr == "sep":
        err, scalars["ntt"] = _err_tables(dev, plan)
        scalars["nspan"] = max(plan.span, 1)
    else:
        err = Buffer(dev, 4)
        err.copyin(np.zeros(1, np.uint32))
        scalars.update(hp=plan.scalars["hp"], hr=plan.scalars["hr"])
    out_dtype = by_name(qplan.out_dtype)
    out = Buffer(dev, max(buffer_size(out_dtype, plan.count), 1))
    if plan.count:
        try:
            _launch(dev, qplan, kernel, inputs, scalars, out, err)
        except BaseException:
            out.free()
            raise
    return dense_result(dev, out_dtype, plan.shape, out)
