"""Launching the layout kernels: device buffers for a tensor, axis tables, the dense gather and
wrapping results as row-major Tensors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.buffer import Buffer
from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.descriptor import TensorDescriptor
from hurray_gpu.format.dtypes import buffer_size
from hurray_gpu.kernels.layout import AXIS_TABLE, gather_kernel
from hurray_gpu.ops.layout_plan import DensePlan

__all__ = ["device_buffers", "dense_result", "run_dense"]


def device_buffers(t: Any, dev: Any) -> list[Buffer]:
    """``t``'s buffers as Buffers on ``dev`` (host arrays are copied onto the cpu device).

    Raises:
        HurrayFormatError: a buffer holds fewer bytes than its handle declares.
    """
    out = [b if isinstance(b, Buffer) else Buffer.from_bytes(dev, np.ascontiguousarray(b))
           for b in t.buffers]
    for i, (b, h) in enumerate(zip(out, t.descriptor.buffers, strict=True)):
        if b.nbytes < h.byte_size:
            raise HurrayFormatError(
                f"buffers[{i}] holds {b.nbytes} bytes but the descriptor declares {h.byte_size}",
                field=f"buffers[{i}].byte_size", fix="pass exactly byte_size bytes per buffer.")
    return out


def _tables(dev: Any, plan: DensePlan, wait: bool) -> tuple[list[Buffer], float]:
    lp = Buffer.from_bytes(dev, np.ascontiguousarray(plan.records, np.uint32))
    tables, took = [], 0.0
    for d0, nd, entries, base in plan.regions:
        table = Buffer(dev, 4 * max(entries, 1))
        took += dev.run(AXIS_TABLE, dst=table, lp=lp, n=entries, d0=d0, nd=nd, base=base,
                        dat=0, wait=wait) or 0.0
        tables.append(table)
    return tables, took


def run_dense(dev: Any, plan: DensePlan, src: Buffer, out: Buffer, *,
              wait: bool = False) -> float:
    """Gather ``src`` (a dense layout) into row-major ``out`` as ``plan`` says.

    Args:
        dev: the device holding both buffers.
        plan: from :func:`~hurray_gpu.ops.layout_plan.plan_dense`.
        src: buffer 0 of the tensor.
        out: at least ``count`` elements (packed units for sub-byte types).
        wait: synchronise and return the elapsed kernel seconds.

    Returns:
        Elapsed seconds when ``wait`` (else 0.0).
    """
    if plan.count == 0:
        return 0.0
    args: dict[str, Any] = {"dst": out, "src": src, **plan.scalars}
    took = 0.0
    if plan.addr == "sep":
        tables, took = _tables(dev, plan, wait)
        args.update(tx=tables[0], ty=tables[1], tz=tables[2])
    return took + (dev.run(gather_kernel(plan.addr, plan.mover), wait=wait, **args) or 0.0)


def dense_result(dev: Any, dtype: Any, shape: tuple[int, ...], out: Buffer) -> Any:
    """A row-major Tensor over ``out`` (trimmed to the dtype's exact size) on ``dev``."""
    from hurray_gpu.tensor import Tensor
    from hurray_gpu.tensor_device import host_view, is_host

    size = buffer_size(dtype, int(np.prod(shape, dtype=np.int64)) if shape else 1)
    if out.nbytes != size:
        out = out.view(0, size)
    desc = TensorDescriptor.dense(dtype, shape, device_tag=dev.tag)
    return Tensor.from_parts(desc, [host_view(out) if is_host(dev) else out])


def alloc_out(dev: Any, plan: DensePlan, dtype: Any) -> Buffer:
    """The output Buffer of a dense plan: whole packed units, at least one byte."""
    if plan.mover == "packed":
        nbytes = int(plan.scalars["nunits"]) * int(plan.scalars["upb"])
    else:
        nbytes = buffer_size(dtype, plan.count)
    return Buffer(dev, max(nbytes, 1))
