"""Quantized sparse tensors -> dense row-major floats on the device, in one scatter pass.

Index buffers are validated by the sparse check kernels first; then each stored code is
dequantized with the parameters of its own coordinate (per-channel and per-block schemes index
them through the logical position, Hurray spec, Quantization) and lands in a zeroed output.
Unstored elements are implicitly zero (+0.0), whatever the scheme's zero point.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from hurray_gpu.format.descriptor.layouts import RowMajor
from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.kernels.dequant_variants import sparse_dequant_kernel
from hurray_gpu.ops.layout_host import moved_params
from hurray_gpu.ops.layout_run import dense_result
from hurray_gpu.runtime.buffer import Buffer

__all__ = ["materialize_sparse_quant", "row_major_view"]


def row_major_view(desc: Any) -> tuple[Any, list[int]]:
    """A dense row-major descriptor over ``desc``'s logical shape with the same quantization.

    Parameter buffers are renumbered to follow the data buffer (1, 2), as a dense descriptor
    holds them, so the dequantization planner validates the scheme and the parameter sizes.

    Returns:
        The descriptor and the original buffer index of each of its buffers.
    """
    quant, params = moved_params(desc.quantization, 1)
    count = math.prod(int(d) for d in desc.shape)
    data = dataclasses.replace(desc.buffers[0], byte_size=buffer_size(desc.dtype, count))
    row = dataclasses.replace(
        desc, layout=RowMajor(), byte_offset=0,
        buffers=(data, *(desc.buffers[i] for i in params)),
        quantization=quant)
    return row, [0, *params]


def materialize_sparse_quant(t: Any, dtype: str, bufs: list[Buffer],
                             named: list[tuple[str, Buffer]], levels: list[tuple[int, ...]],
                             dims: tuple[int, ...]) -> Any:
    """Dequantize-scatter a quantized COO/CSR/CSC/CSF tensor into a row-major ``dtype`` tensor.

    Args:
        t: the sparse Tensor (its values buffer holds ``nnz`` storage codes).
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        bufs: ``t``'s buffers on its device; ``named``/``levels``: its index buffers, as
            ``layout_sparse`` checked their sizes.
        dims: the logical shape.

    Returns:
        The dense Tensor on ``t``'s device.

    Raises:
        HurrayFormatError: index buffers breaking the sparse invariants, or an invalid scale,
            zero point or e8m0 byte (any block's, stored elements or not).
        UnsupportedOpError: an output type other than the float ones, or sizes beyond 32-bit
            indexing.
    """
    from hurray_gpu.ops.dequantize import bind_inputs
    from hurray_gpu.ops.errors_explain import check_flag, explain_invalid
    from hurray_gpu.ops.layout_sparse import validated_indices, zeroed
    from hurray_gpu.ops.plan import plan_dequantize

    desc, dev = t.descriptor, t.device
    row, order = row_major_view(desc)
    qplan = plan_dequantize(row, dtype)
    kind, index_args = validated_indices(t, dev, named, levels, dims,
                                         extra_items=qplan.scalars["nparam"])
    # Check items read a code at position 0, so an empty values buffer gets a stand-in.
    data = bufs[0] if bufs[0].nbytes else Buffer.from_bytes(dev, bytes(4))
    inputs = bind_inputs(qplan, dev, [data, *(bufs[i] for i in order[1:])])
    kernel = sparse_dequant_kernel(qplan.kernel, kind)
    scalars = {p.name: qplan.scalars[p.name] for p in kernel.scalars if p.name in qplan.scalars}
    scalars["doff"] = 0
    out_dtype = by_name(qplan.out_dtype)
    out = zeroed(dev, buffer_size(out_dtype, qplan.count))
    err = Buffer(dev, 4)
    err.copyin(np.zeros(1, np.uint32))
    try:
        if qplan.count:
            dev.run(kernel, dst=out, err=err, **index_args, **inputs, **scalars)
        check_flag(err, qplan.kernel, lambda: explain_invalid(qplan, inputs))
    except BaseException:
        out.free()
        raise
    return dense_result(dev, out_dtype, dims, out)
