"""Sparse (COO, CSR, CSC, CSF) -> dense row-major on the device: index buffers are validated by
check kernels first (a bad index is a HurrayFormatError naming its position); then each stored
value is scattered to its row-major index, quantized values dequantized on the way with their
own coordinate's parameters.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format import addressing as ad
from hurray_gpu.format.descriptor.layouts import COO, CSC, CSR, RowMajor
from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.kernels import loop_steps
from hurray_gpu.kernels.dequant_variants import sparse_dequant_kernel
from hurray_gpu.kernels.layout_sparse import (
    CHECK_COO,
    CHECK_HI,
    CHECK_TREE,
    COO_DUP,
    COO_MARK,
    COPY_WORDS,
    PACK_CODES,
    ZERO_WORDS,
    code_scatter_kernel,
    csr_rows_kernel,
    scatter_kernel,
)
from hurray_gpu.ops.dequantize import convert
from hurray_gpu.ops.layout_plan import dense_result, device_buffers, dims_of
from hurray_gpu.ops.plan import (
    bind_inputs,
    check_flag,
    explain_invalid,
    moved_params,
    plan_dequantize,
)
from hurray_gpu.runtime.buffer import Buffer

__all__ = [
    "materialize_sparse", "materialize_sparse_quant", "row_major_view", "validated_indices",
    "zeroed"]


def _entries(b: Buffer, name: str, want: int | None) -> int:
    if b.nbytes % 8 or (want is not None and b.nbytes != 8 * want):
        need = "a multiple of 8" if want is None else str(8 * want)
        raise HurrayFormatError(f"{name} holds {b.nbytes} bytes, expected {need}", field=name,
                                fix="index buffers hold one little-endian u64 per entry.")
    return b.nbytes // 8


def _index_bufs(desc: Any, bufs: list[Buffer], dims: tuple[int, ...]
                ) -> tuple[list[tuple[str, Buffer]], list[tuple[int, ...]]]:
    """Index buffers in ix order, and tree levels as (pos#, crd#, extent, mode, dense)."""
    lay, nnz = desc.layout, int(desc.layout.nnz)
    if isinstance(lay, COO):
        _entries(bufs[1], "indices", nnz * len(dims))
        return [("indices", bufs[1])], []
    if isinstance(lay, (CSR, CSC)):
        major = 0 if isinstance(lay, CSR) else 1
        _entries(bufs[1], "indices", nnz)
        _entries(bufs[2], "ptr", dims[major] + 1)
        tree: list[tuple[int, ...]] = [(-1, -1, dims[major], major, 1),
                                       (1, 0, dims[1 - major], 1 - major, 0)]
        return [("indices", bufs[1]), ("ptr", bufs[2])], tree
    named: list[tuple[str, Buffer]] = []
    levels: list[tuple[int, ...]] = []
    parents = 1
    for level, mode in enumerate(lay.mode_order):
        pos, crd = bufs[2 * level + 1], bufs[2 * level + 2]
        _entries(pos, f"pos_{level}", parents + 1)
        count = _entries(crd, f"crd_{level}", nnz if level == len(dims) - 1 else None)
        named += [(f"pos_{level}", pos), (f"crd_{level}", crd)]
        levels.append((2 * level, 2 * level + 1, dims[mode], mode, 0))
        parents = count
    return named, levels


def _concat(dev: Any, named: list[tuple[str, Buffer]]) -> tuple[Buffer, list[int]]:
    """One u32-word buffer of every index array; returns it and each array's word offset."""
    offsets, total = [], 0
    for _, b in named:
        offsets.append(total)
        total += b.nbytes // 4
    ix = Buffer(dev, max(4 * total, 8))
    for (_, b), at in zip(named, offsets, strict=True):
        dev.run(COPY_WORDS, dst=ix, src=b, n=b.nbytes // 4, dat=at)
    return ix, offsets


def _raise_if(err: Buffer, explain: Any) -> None:
    if int(err.numpy(np.uint32)[0]):
        explain()
        raise HurrayFormatError("an index buffer breaks the sparse invariants",
                                field="indices", fix="repair the index buffers.")


def _explain(t: Any) -> Any:
    """Re-check the (downloaded) index buffers with the NumPy reference to name the position."""
    def run() -> None:
        host = t.to("cpu")
        desc, dims = host.descriptor, tuple(int(d) for d in host.descriptor.shape)
        lay, nnz = desc.layout, int(desc.layout.nnz)
        # Index buffers only: quantization parameter buffers follow them.
        count = {COO: 1, CSR: 2, CSC: 2}.get(type(lay), 2 * len(dims))
        u64 = [np.asarray(b, np.uint8).view("<u8") for b in host.buffers[1:1 + count]]
        vals = np.zeros(nnz, np.uint8)
        big = max(math.prod(dims), 1)
        if isinstance(lay, COO):
            ad.coo_to_dense(dims, vals, u64[0].reshape(-1, len(dims)),
                            is_sorted=bool(lay.is_sorted), max_elements=big)
        elif isinstance(lay, CSR):
            ad.csr_to_dense(dims, vals, u64[0], u64[1], max_elements=big)
        elif isinstance(lay, CSC):
            ad.csc_to_dense(dims, vals, u64[0], u64[1], max_elements=big)
        else:
            ad.csf_to_dense(dims, lay.mode_order, vals, u64, max_elements=big)
    return run


def _validate(t: Any, dev: Any, ix: Buffer, offs: list[int], lens: list[int],
              levels: list[tuple[int, ...]], mt: Buffer, dims: tuple[int, ...],
              nix: int) -> None:
    err = Buffer(dev, 4)
    err.copyin(np.zeros(1, np.uint32))
    dev.run(CHECK_HI, err=err, ix=ix, n=nix // 2)
    lay, nnz = t.descriptor.layout, int(t.descriptor.layout.nnz)
    if isinstance(lay, COO):
        dev.run(CHECK_COO, err=err, ix=ix, mt=mt, nnz=nnz, rank=len(dims),
                srt=int(bool(lay.is_sorted)))
        _raise_if(err, _explain(t))
        if not lay.is_sorted and nnz > 1:
            mark = Buffer(dev, 4 * max(math.prod(dims), 1))
            common = {"mark": mark, "ix": ix, "mt": mt, "nnz": nnz, "rank": len(dims),
                      "n": math.prod(dims)}
            dev.run(COO_MARK, **common)
            dev.run(COO_DUP, err=err, **common)
    for pos, crd, extent, _, dense in levels:
        if dense:
            continue
        ncrd, nodes = lens[crd] // 2, lens[pos] // 2 - 1
        dev.run(CHECK_TREE, err=err, ix=ix, nodes=nodes, pos_off=offs[pos],
                crd_off=offs[crd], ncrd=ncrd, extent=extent, nix=nix, span=loop_steps(dev))
    _raise_if(err, _explain(t))


def _meta(levels: list[tuple[int, ...]], offs: list[int], lens: list[int],
          dims: tuple[int, ...]) -> np.ndarray:
    strides = [math.prod(dims[k + 1:]) for k in range(len(dims))]
    if not levels:
        return np.array([v for k, n in enumerate(dims) for v in (n, strides[k])], np.uint32)
    rows = []
    for pos, crd, extent, mode, dense in levels:
        pos_count = 0 if dense else lens[pos] // 2
        rows.append([0 if dense else offs[crd], 0 if dense else offs[pos], pos_count,
                     strides[mode], extent, dense])
    return np.array(rows, np.uint32).reshape(-1)


def zeroed(dev: Any, nbytes: int) -> Buffer:
    out = Buffer(dev, max(-(-nbytes // 4) * 4, 4))
    dev.run(ZERO_WORDS, dst=out, n=out.nbytes // 4)
    return out


def _scatter(dev: Any, dtype: Any, dims: tuple[int, ...], kind: str,
             args: dict[str, Any]) -> Buffer:
    """Zeroed dense output, then the values scattered (sub-byte: codes, then packed)."""
    count = math.prod(dims)
    if dtype.bits < 8:
        codes = zeroed(dev, count)
        dev.run(code_scatter_kernel(kind), dst=codes, n=count, bits=dtype.bits, **args)
        per, width = (4, 3) if dtype.bits == 6 else (8 // dtype.bits, 1)
        out = Buffer(dev, max(-(-count // per) * width, 1))
        dev.run(PACK_CODES, dst=out, src=codes, n=count, bits=dtype.bits, epu=per,
                upb=width)
        return out
    item = dtype.bits // 8
    word = next(w for w in (4, 2, 1) if item % w == 0)
    out = zeroed(dev, buffer_size(dtype, count))
    dev.run(scatter_kernel(kind, {4: "u32", 2: "u16", 1: "u8"}[word]), dst=out, n=count,
            wpe=item // word, **args)
    return out


def materialize_sparse(t: Any, dtype: str | None) -> Any:
    """Scatter a COO/CSR/CSC/CSF tensor into a dense row-major tensor on its device.

    Raises:
        HurrayFormatError: index buffers that break the invariants (found on the device
            before the scatter; the message names the first bad position).
        UnsupportedOpError: sizes beyond 32-bit indexing.
    """
    desc, dev = t.descriptor, t.device
    dims = dims_of(desc)
    bufs = device_buffers(t, dev)
    nnz = int(desc.layout.nnz)
    if bufs[0].nbytes < buffer_size(desc.dtype, nnz):
        raise HurrayFormatError(f"values hold {bufs[0].nbytes} bytes for nnz {nnz}",
                                field="buffers[0].byte_size", fix="write nnz values.")
    named, levels = _index_bufs(desc, bufs, dims)
    if desc.quantization is not None:
        # Stored codes dequantize with their own coordinate's parameters as they scatter.
        return materialize_sparse_quant(t, dtype or "float32", bufs, named, levels, dims)
    if isinstance(desc.layout, CSR) and desc.dtype.bits >= 8 and math.prod(dims):
        result = dense_result(dev, desc.dtype, dims, _csr_rows(t, dev, bufs, dims))
    else:
        result = _generic(t, dev, bufs, named, levels, dims)
    if dtype is None or dtype == desc.dtype.name:
        return result

    return convert(result, dtype)


def _seg_for(dev: Any, nrows: int, ncols: int) -> int:
    """Columns per work item of the CSR kernel on ``dev``.

    GPUs take one output element per item (coalesced writes; the binary searches read a
    cached row). On CPU emulations per-item overhead dominates: pocl is fastest with whole
    rows, lavapipe with 64 columns, and one element per item is the slowest on both.
    """
    if getattr(dev, "dialect", "") == "c":
        return _host_seg(nrows, ncols)
    if getattr(dev, "emulated", False):
        return ncols if dev.kind == "opencl" else min(ncols, 64)
    return 1


def _host_seg(nrows: int, ncols: int) -> int:
    """Columns per work item on host C: whole rows, split only to give every core whole chunks
    of items (the host runs 4096 items per chunk)."""
    per_row = -(-4096 * max(os.cpu_count() or 1, 1) // max(nrows, 1))
    return min(ncols, max(-(-ncols // per_row), 256))


def _csr_rows(t: Any, dev: Any, bufs: list[Buffer], dims: tuple[int, ...]) -> Buffer:
    """CSR -> dense in one launch that checks each index just before using it (sizes checked
    here, so no kernel index wraps)."""
    desc, (nrows, ncols) = t.descriptor, dims
    nnz, item = int(desc.layout.nnz), desc.dtype.bits // 8
    word = next(w for w in (4, 2, 1) if item % w == 0)
    wpe = item // word
    if max(nrows * ncols * wpe, nnz * wpe, 2 * nnz + 2, 2 * nrows + 2) >= 1 << 32:
        raise UnsupportedOpError("the CSR tensor exceeds 32-bit indexing",
                                 fix="split the tensor into row blocks.")
    err = Buffer(dev, 4)
    err.copyin(np.zeros(1, np.uint32))
    out = Buffer(dev, max(buffer_size(desc.dtype, nrows * ncols), 1))
    # An item's loops: its zeroing and its walk (each entry a copy loop when wpe > 1) over
    # seg columns, and two binary searches (at most 33 passes each).
    seg = min(_seg_for(dev, nrows, ncols), loop_steps(dev, 2 * wpe + 2, 80))
    try:
        dev.run(csr_rows_kernel({4: "u32", 2: "u16", 1: "u8"}[word]), dst=out, vals=bufs[0],
                ci=bufs[1], rp=bufs[2], err=err, nrows=nrows, ncols=ncols, nnz=nnz, wpe=wpe,
                seg=seg)
        _raise_if(err, _explain(t))
    except BaseException:
        out.free()
        raise
    return out


def validated_indices(t: Any, dev: Any, named: list[tuple[str, Buffer]],
                      levels: list[tuple[int, ...]], dims: tuple[int, ...],
                      extra_items: int = 0) -> tuple[str, dict[str, Any]]:
    """Concatenate and validate a sparse tensor's index buffers on the device.

    Args:
        extra_items: work items a scatter launches beyond nnz (kept within 32-bit indexing).

    Returns:
        The scatter kind (``"coo"``/``"tree"``) and its index arguments: ix, mt, nnz, nix,
        and rank or nlev.

    Raises:
        HurrayFormatError: an index buffer breaks the sparse invariants.
        UnsupportedOpError: index buffers beyond 32-bit indexing.
    """
    nnz = int(t.descriptor.layout.nnz)
    ix, offs = _concat(dev, named)
    lens = [b.nbytes // 4 for _, b in named]
    nix = sum(lens)
    if 2 * (nix + nnz) + extra_items >= 1 << 32:
        raise UnsupportedOpError("index buffers beyond 32-bit indexing",
                                 fix="split the tensor.")
    mt = Buffer.from_bytes(dev, _meta(levels, offs, lens, dims).tobytes() or bytes(8))
    _validate(t, dev, ix, offs, lens, levels, mt, dims, nix)
    kind = "coo" if isinstance(t.descriptor.layout, COO) else "tree"
    shape = {"rank": len(dims)} if kind == "coo" else {"nlev": len(levels)}
    return kind, {"ix": ix, "mt": mt, "nnz": nnz, "nix": nix, **shape}


def _generic(t: Any, dev: Any, bufs: list[Buffer], named: list[tuple[str, Buffer]],
             levels: list[tuple[int, ...]], dims: tuple[int, ...]) -> Any:
    """Any sparse layout: validation kernels over the concatenated indices, then a scatter."""
    kind, args = validated_indices(t, dev, named, levels, dims)
    out = _scatter(dev, t.descriptor.dtype, dims, kind, {"vals": bufs[0], **args})
    return dense_result(dev, t.descriptor.dtype, dims, out)


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
