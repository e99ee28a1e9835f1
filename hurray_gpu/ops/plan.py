"""Planning a dequantization: descriptor -> kernel name, launch scalars and buffer roles.

Pure functions of the descriptor: every rule is checked here, before anything is allocated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor import RowMajor
from hurray_gpu.format.descriptor.quant import (
    MXFP,
    NF4,
    SCALE_TYPE_SIZES,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
)
from hurray_gpu.format.descriptor.validate import validate_descriptor
from hurray_gpu.kernels.dequant import (
    MODE_MX,
    MODE_NF4,
    MODE_NONE,
    OUT_DTYPES,
    affine_kernel_name,
    divmagic,
    lut_kernel_name,
)

__all__ = ["ELEMENTS_PER_ITEM", "DequantPlan", "elements_per_item", "plan_dequantize",
           "plan_unpack"]

# The most elements one work item may take (the ``ept`` argument).
MAX_EPT = 4096
# Every index a kernel computes is a u32: element counts and byte extents must stay below
# (with room for the last work item's ``first + ept``).
U32_LIMIT = (1 << 32) - 2 * MAX_EPT
# Consecutive elements per work item: amortises the index split and the parameter loads.
# Long runs suit CPUs (host C, pocl, lavapipe); GPUs want short ones for coalescing.
ELEMENTS_PER_ITEM = 1024
ELEMENTS_PER_GPU_ITEM = 4
_INT_UNPACK = {"bool": "uint8", "int4": "int8", "uint4": "uint8", "int2": "int8",
               "uint2": "uint8"}


@dataclass(frozen=True)
class DequantPlan:
    """One launch: the kernel, its scalars, and which tensor buffer feeds each parameter.

    Attributes:
        kernel: the registered kernel name.
        out_dtype: the Hurray name of the result's element type.
        shape: the result's shape (the input's logical shape).
        count: elements in the result.
        scalars: every scalar parameter of the kernel.
        inputs: buffer parameter -> tensor buffer index.
        lut: the storage type whose value table feeds ``lut`` (``"nf4"`` for NF4), or None.
    """

    kernel: str
    out_dtype: str
    shape: tuple[int, ...]
    count: int
    scalars: dict[str, Any]
    inputs: dict[str, int] = field(default_factory=dict)
    lut: str | None = None


def _fail(message: str, fix: str, field_name: str | None = None) -> HurrayFormatError:
    return HurrayFormatError(message, field=field_name, fix=fix)


def _check_common(desc: Any) -> tuple[int, ...]:
    """Validate ``desc`` and return its static shape (row-major dense layouts only)."""
    validate_descriptor(desc, permissive=False)
    if not desc.interpretable:
        raise UnsupportedOpError("the tensor's type, layout or quantization must not be "
                                 "interpreted", fix="dequantize only standard tensors.")
    if desc.layout_tag == 0x0A:
        raise UnsupportedOpError(
            "block-paged tensors have no single dense plan",
            fix="call dequantize(), which gathers the pages through the block table first.")
    if not isinstance(desc.layout, RowMajor):
        raise UnsupportedOpError(
            f"dequantize needs a row-major tensor, not layout 0x{desc.layout_tag:02X}",
            fix="transcode the tensor to row-major first.")
    if desc.is_dynamic:
        raise UnsupportedOpError("the shape has a dynamic dimension", fix="resolve it first.")
    shape = tuple(int(d) for d in desc.shape)
    count = math.prod(shape)
    if count >= U32_LIMIT or desc.byte_offset + (count * desc.dtype.bits + 7) // 8 >= U32_LIMIT:
        raise UnsupportedOpError(f"{count} elements exceed the kernels' 32-bit indexing",
                                 fix="split the tensor into parts of fewer than 2**32 bytes.")
    return shape


def _split(shape: tuple[int, ...], axis: int) -> dict[str, int]:
    """Scalars that split a linear index around ``axis`` (see ``INDEX_SPLIT``)."""
    inner = max(1, math.prod(shape[axis + 1:]))
    size = max(1, shape[axis])
    dm1, dsh1 = divmagic(inner)
    dm2, dsh2 = divmagic(size)
    return {"inner": inner, "dm1": dm1, "dsh1": dsh1, "ssize": size, "dm2": dm2, "dsh2": dsh2}


def _no_split() -> dict[str, int]:
    return {"inner": 1, "dm1": 1, "dsh1": 0, "ssize": 1, "dm2": 1, "dsh2": 0, "omul": 0,
            "kshift": 0, "nparam": 0}


def _out(dtype: str) -> str:
    if dtype not in OUT_DTYPES:
        raise UnsupportedOpError(f"cannot dequantize to {dtype!r}",
                                 fix=f"use one of {sorted(OUT_DTYPES)}.")
    return dtype


def _zp_range(storage: Any) -> tuple[int, int]:
    if storage.signed:
        return -(1 << (storage.bits - 1)), (1 << (storage.bits - 1)) - 1
    return 0, min((1 << storage.bits) - 1, (1 << 31) - 1)


def elements_per_item(dev: Any) -> int:
    """Elements per work item on ``dev``: short runs on real GPUs, long ones on CPUs."""
    cpu_like = getattr(dev, "emulated", False) or getattr(dev, "kind", "") in ("cpu",
                                                                              "reference")
    return ELEMENTS_PER_ITEM if cpu_like else ELEMENTS_PER_GPU_ITEM


def _affine(desc: Any, q: Any, shape: tuple[int, ...], out: str) -> DequantPlan:
    storage = desc.dtype
    lo, hi = _zp_range(storage)
    s: dict[str, Any] = {"n": math.prod(shape), "ept": ELEMENTS_PER_ITEM,
                         "doff": desc.byte_offset, "bits": storage.bits,
                         "sgn": int(storage.signed), "zlo": lo, "zhi": hi, "zoff": 0,
                         "stype": 3, "zmode": 0, **_no_split()}
    inputs: dict[str, int] = {"data": 0}
    if isinstance(q, PerTensorAffine):
        s.update(mode=0, sval=q.scale, zval=q.zero_point)
        return DequantPlan(affine_kernel_name(out), out, shape, s["n"], s, inputs)
    s.update(mode=1, sval=0.0, zval=0, **_split(shape, q.axis))
    if isinstance(q, PerChannelAffine):
        s.update(nparam=shape[q.axis], omul=0, kshift=0)
    else:
        nb = -(-shape[q.axis] // q.block_size)
        s.update(nparam=nb * (s["n"] // max(1, shape[q.axis])), omul=nb,
                 kshift=q.block_size.bit_length() - 1, stype=q.scale_type_tag)
    inputs["scales"] = q.scale_buffer_index
    if q.zero_point_buffer_index is not None:
        inputs["zps"] = q.zero_point_buffer_index
        s["zmode"] = 1
        if q.zero_point_buffer_index == q.scale_buffer_index:
            s["zoff"] = s["nparam"] * SCALE_TYPE_SIZES[s["stype"]]
    if s["zoff"] + 8 * s["nparam"] >= U32_LIMIT:
        raise UnsupportedOpError("the parameter buffers exceed the kernels' 32-bit indexing",
                                 fix="split the tensor along its outer dimensions.")
    return DequantPlan(affine_kernel_name(out), out, shape, s["n"], s, inputs)


def _lut(desc: Any, q: Any, shape: tuple[int, ...], out: str) -> DequantPlan:
    n = math.prod(shape)
    s: dict[str, Any] = {"n": n, "ept": ELEMENTS_PER_ITEM, "doff": desc.byte_offset,
                         "bits": desc.dtype.bits, "chk": 0, "mode": MODE_NONE, **_no_split()}
    inputs = {"data": 0}
    lut = desc.dtype.name
    if q is not None:
        size = shape[q.axis]
        per_axis = -(-size // q.block_size)
        s.update(_split(shape, q.axis), omul=per_axis, kshift=q.block_size.bit_length() - 1,
                 nparam=per_axis * (n // max(1, size)))
        s["mode"] = MODE_NF4 if isinstance(q, NF4) else MODE_MX
        inputs["scales"] = q.scale_buffer_index
        lut = "nf4" if isinstance(q, NF4) else lut
    else:
        s["chk"] = int(desc.dtype.name == "float8_e8m0")
    return DequantPlan(lut_kernel_name(out), out, shape, n, s, inputs, lut)


def plan_dequantize(desc: Any, dtype: str = "float32", *, ept: int | None = None) -> DequantPlan:
    """Plan the dequantization (or float unpacking) of a tensor described by ``desc``.

    Args:
        desc: the TensorDescriptor (validated again here: it may come from anywhere).
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``.
        ept: elements per work item (see :func:`elements_per_item`); default 1024.

    Returns:
        The launch plan.

    Raises:
        HurrayFormatError: the descriptor breaks a rule of the spec.
        UnsupportedOpError: a layout other than row-major, an unquantized type wider than 8
            bits, an unknown output dtype, or a tensor beyond 32-bit indexing.
    """
    out = _out(dtype)
    shape = _check_common(desc)
    q = desc.quantization
    if isinstance(q, (PerTensorAffine, PerChannelAffine, PerBlockAffine)):
        plan = _affine(desc, q, shape, out)
    elif isinstance(q, (NF4, MXFP)) or (q is None and desc.dtype.bits <= 8):
        plan = _lut(desc, q, shape, out)
    else:
        raise UnsupportedOpError(f"{desc.dtype.name} tensors without quantization have "
                                 "nothing to dequantize",
                                 fix="convert wide types with .numpy().astype().")
    if ept is not None:
        if not 1 <= ept <= MAX_EPT:
            raise UnsupportedOpError(f"ept {ept} is outside [1, {MAX_EPT}]",
                                     fix=f"use 1-{MAX_EPT}.")
        plan.scalars["ept"] = ept
    return plan


def plan_unpack(desc: Any, dtype: str | None = None, *, ept: int | None = None) -> DequantPlan:
    """Plan unpacking an unquantized sub-byte or small-float tensor.

    Args:
        desc: the TensorDescriptor.
        dtype: None for the natural wider type (int8 for int4/int2, uint8 for uint4/uint2
            and bool, float32 for float8/6/4), or ``"float32"``/``"float16"``/``"bfloat16"``.
        ept: elements per work item of the float kernels (default 1024).

    Returns:
        The launch plan.

    Raises:
        HurrayFormatError: the descriptor breaks a rule of the spec.
        UnsupportedOpError: a quantized tensor, or a type this cannot unpack.
    """
    if desc.quantization is not None:
        raise UnsupportedOpError("the tensor is quantized", fix="call dequantize() instead.")
    name = desc.dtype.name
    if dtype is None:
        dtype = _INT_UNPACK.get(name, "float32")
    if dtype in OUT_DTYPES:
        return plan_dequantize(desc, dtype, ept=ept)
    if _INT_UNPACK.get(name) != dtype:
        raise UnsupportedOpError(f"cannot unpack {name} to {dtype!r}",
                                 fix="unpack to float32/float16/bfloat16 or to its natural "
                                     "wider integer (int8/uint8).")
    shape = _check_common(desc)
    n = math.prod(shape)
    s = {"n": n, "doff": desc.byte_offset, "bits": desc.dtype.bits,
         "sgn": int(desc.dtype.signed)}
    return DequantPlan("unpack_int_u8", dtype, shape, n, s, {"data": 0})
