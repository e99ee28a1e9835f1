"""Dequantization and unpacking plans: which kernel a tensor needs and its launch arguments
(checked against the descriptor before any kernel runs), the lookup tables some schemes use, the
launch itself, and, when a kernel flags an invalid parameter, the host-side explanation that
names the bad entry.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hurray_gpu.errors import DeviceError, HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.descriptor.layouts import RowMajor
from hurray_gpu.format.descriptor.quant import (
    MXFP,
    NF4,
    SCALE_TYPE_SIZES,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
)
from hurray_gpu.format.descriptor.validate import validate_descriptor
from hurray_gpu.format.dtypes import buffer_size, by_name, value_table
from hurray_gpu.kernels import get_kernel
from hurray_gpu.kernels.dequant import (
    ERR_INVALID,
    MODE_MX,
    MODE_NF4,
    MODE_NONE,
    OUT_DTYPES,
    SCALE_WIDTH,
    affine_kernel_name,
    divmagic,
    lut_kernel_name,
    ref_u32_at,
)
from hurray_gpu.parts import dense_descriptor, make_tensor, tensor_builder
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.cache import LRUCache
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.program import Launch

__all__ = [
    "DequantPlan", "ELEMENTS_PER_ITEM", "NF4_BITS", "Prepared", "bad_affine_params",
    "bind_inputs", "check_buffer_sizes", "check_flag", "clear_prepared", "dense_descriptor",
    "device_table", "elements_per_item", "explain_invalid", "feeds", "launch", "moved_params",
    "nf4_table", "plan_dequantize", "plan_unpack", "prepare", "repeat", "table_values",
]


NF4_BITS = (
    0xBF800000, 0xBF3239B1, 0xBF066B30, 0xBECA32A0, 0xBE91A24D, 0xBE3D353F, 0xBDBA7871,
    0x00000000, 0x3DA2FAFF, 0x3E24CAE3, 0x3E7C04DD, 0x3EAD033A, 0x3EE1A4B8, 0x3F1007AB,
    0x3F3913B3, 0x3F800000,
)

_CACHE: weakref.WeakKeyDictionary[Any, dict[str, Buffer]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_STANDARD = MemoryClass.STANDARD  # Prepared.run reads it per call: a global beats an enum


def nf4_table() -> np.ndarray:
    """The 16 NF4 levels as float32 (bit-exact from the facts sheet)."""
    return np.array(NF4_BITS, np.uint32).view(np.float32)


def table_values(name: str) -> np.ndarray:
    """The f32 value of every code of storage type ``name`` (``"nf4"`` for the NF4 levels)."""
    return nf4_table() if name == "nf4" else value_table(by_name(name))


def device_table(device: Any, name: str) -> Buffer:
    """The value table ``name`` as an f32 Buffer on ``device`` (uploaded once, then reused).

    Args:
        device: an opened Device.
        name: a storage type name of 8 bits or fewer, or ``"nf4"``.

    Returns:
        A read-only (by convention) Buffer of ``2**bits`` float32 values.
    """
    with _LOCK:
        tables = _CACHE.setdefault(device, {})
        cached = tables.get(name)
        if cached is None:
            cached = Buffer.from_bytes(device, table_values(name).tobytes())
            tables[name] = cached
        return cached


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _host(buf: Any) -> np.ndarray:
    return np.frombuffer(bytes(buf.copyout()), np.uint8)


def _bad_scales(stype: int, raw: np.ndarray, count: int) -> np.ndarray:
    words = ref_u32_at(raw, 0, count, SCALE_WIDTH[stype])
    if stype == 3:
        return ((words & 0x7F800000) == 0x7F800000) | ((words & 0x7FFFFFFF) == 0)
    if stype == 1:
        return ((words & 0x7C00) == 0x7C00) | ((words & 0x7FFF) == 0)
    return ((words & 0x7F80) == 0x7F80) | ((words & 0x7FFF) == 0)


def bad_affine_params(plan: Any, bufs: dict[str, Any]) -> np.ndarray:
    """Per affine parameter entry: invalid scale or zero point, as the kernels test them.

    Args:
        plan: the launched DequantPlan (affine, with parameter buffers).
        bufs: the Buffers bound to its ``scales`` and ``zps`` parameters.
    """
    s = plan.scalars
    count = int(s["nparam"])
    bad = _bad_scales(int(s["stype"]), _host(bufs["scales"]), count)
    if int(s["zmode"]):
        zps = ref_u32_at(_host(bufs["zps"]), int(s["zoff"]), count, 4).view(np.int32)
        bad |= (zps < int(s["zlo"])) | (zps > int(s["zhi"]))
    return bad


def _explain_affine(plan: Any, bufs: dict[str, Any]) -> HurrayFormatError:
    s = plan.scalars
    count, stype = int(s["nparam"]), int(s["stype"])
    index = _first(_bad_scales(stype, _host(bufs["scales"]), count))
    if index is not None:
        return HurrayFormatError(
            f"scale entry {index} is zero, infinite or NaN", field="scales",
            offset=index * SCALE_WIDTH[stype],
            fix="every per-channel/per-block scale must be finite and non-zero.")
    zps = ref_u32_at(_host(bufs["zps"]), int(s["zoff"]), count, 4).view(np.int32)
    index = _first((zps < int(s["zlo"])) | (zps > int(s["zhi"])))
    value = None if index is None else int(zps[index])
    return HurrayFormatError(
        f"zero point entry {index} = {value} is outside the storage range "
        f"[{s['zlo']}, {s['zhi']}]", field="zero_points",
        offset=None if index is None else int(s["zoff"]) + 4 * index,
        fix="zero points must be representable in the storage type.")


def _explain_lut(plan: Any, bufs: dict[str, Any]) -> HurrayFormatError:
    s = plan.scalars
    mode, count = int(s["mode"]), int(s["nparam"])
    if mode == MODE_NF4:
        words = ref_u32_at(_host(bufs["scales"]), 0, count, 4)
        index = _first(((words & 0x7F800000) == 0x7F800000) | (words > 0x80000000))
        return HurrayFormatError(
            f"NF4 absmax entry {index} is negative, infinite or NaN", field="scales",
            offset=None if index is None else 4 * index,
            fix="NF4 absmax values must be finite and >= 0.")
    if mode == MODE_MX:
        scales = _host(bufs["scales"])[:count]
        index = _first((scales == 0x00) | (scales == 0xFF))
        code = None if index is None else f"0x{int(scales[index]):02X}"
        return HurrayFormatError(
            f"MX scale byte {index} is {code}, a reserved float8_e8m0 code", field="scales",
            offset=index, fix="float8_e8m0 scales 0x00 and 0xFF are invalid (Hurray spec, "
                              "MXFP); rewrite the scale buffer.")
    return HurrayFormatError(
        "a float8_e8m0 element is 0x00 or 0xFF, which Hurray forbids", field="buffer",
        fix="float8_e8m0 data must avoid the reserved codes 0x00 and 0xFF.")


def explain_invalid(plan: Any, bufs: dict[str, Any]) -> HurrayFormatError:
    """The error describing the first invalid parameter of a flagged launch.

    Args:
        plan: the DequantPlan that was launched.
        bufs: the Buffers bound to each buffer parameter.

    Returns:
        A HurrayFormatError naming the buffer, entry and byte offset.
    """
    if plan.kernel.startswith("dequant_affine"):
        return _explain_affine(plan, bufs)
    return _explain_lut(plan, bufs)


def check_flag(err: Any, kernel: str, invalid: Callable[[], HurrayFormatError]) -> None:
    """Raise what a dequant kernel's ``err[0]`` flag reports (nothing when it is clear).

    Args:
        err: the flag Buffer the kernel wrote.
        kernel: the kernel's name, for the message.
        invalid: builds the error naming the invalid parameter (runs only when flagged).

    Raises:
        HurrayFormatError: an invalid scale, zero point or e8m0 code.
        DeviceError: a parameter index out of range (inconsistent launch scalars).
    """
    code = int(err.numpy(np.uint32)[0])
    if code == ERR_INVALID:
        raise invalid()
    if code:
        raise DeviceError(f"{kernel} computed a parameter index out of range",
                          fix="report this: the planner produced inconsistent scalars.")


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


def _by_descriptor(planner: Callable[..., DequantPlan]) -> Callable[..., DequantPlan]:
    """Keep each plan by its descriptor object, which is immutable: a tensor dequantized again
    (or planned before and after a move that kept its descriptor) is planned once."""
    done: LRUCache[tuple[int, Any, Any], tuple[Any, DequantPlan]] = LRUCache(PLAN_CACHE)

    @functools.wraps(planner)
    def planned(desc: Any, dtype: Any = _DEFAULT, *, ept: int | None = None) -> DequantPlan:
        key = (id(desc), dtype, ept)
        hit = done.get(key)
        if hit is not None and hit[0] is desc:
            return hit[1]
        plan = planner(desc, ept=ept) if dtype is _DEFAULT else planner(desc, dtype, ept=ept)
        done.put(key, (desc, plan))  # the descriptor is kept, so its id is not reused
        return plan
    return planned


_DEFAULT: Any = object()
PLAN_CACHE = 256


@_by_descriptor
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


@_by_descriptor
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


def check_buffer_sizes(desc: Any, bufs: Sequence[Buffer]) -> None:
    """Every buffer must hold what its handle declares: kernels never read past a Buffer."""
    if len(bufs) != len(desc.buffers):
        raise HurrayFormatError(f"{len(bufs)} buffers for {len(desc.buffers)} handles",
                                field="buffer_count", fix="pass one buffer per handle.")
    for i, (b, h) in enumerate(zip(bufs, desc.buffers, strict=True)):
        if b.nbytes < h.byte_size:
            raise HurrayFormatError(
                f"buffers[{i}] holds {b.nbytes} bytes but the descriptor declares {h.byte_size}",
                field=f"buffers[{i}].byte_size", fix="pass exactly byte_size bytes per buffer.")


def feeds(plan: DequantPlan, dev: Any) -> tuple[Any, ...]:
    """What feeds each buffer parameter of ``plan``'s kernel, in signature order: a tensor
    buffer index, ``"dst"`` (the result), ``"err"`` (the flag) or a device table. Parameters
    a plan does not use are fed the data buffer (never read)."""
    return tuple(p.name if p.name in ("dst", "err") else plan.inputs[p.name]
                 if p.name in plan.inputs else device_table(dev, plan.lut)
                 if p.name == "lut" and plan.lut else plan.inputs["data"]
                 for p in get_kernel(plan.kernel).buffers)


def bind_inputs(plan: DequantPlan, dev: Any, bufs: Sequence[Buffer]) -> dict[str, Buffer]:
    """Map each kernel buffer parameter except ``dst`` and ``err`` to a Buffer.

    Parameters a plan does not use are bound to the data buffer (never read).
    """
    return {p.name: bufs[s] if isinstance(s, int) else s
            for p, s in zip(get_kernel(plan.kernel).buffers, feeds(plan, dev), strict=True)
            if p.name not in ("dst", "err")}


def launch(plan: DequantPlan, dev: Any, inputs: dict[str, Buffer], out: Buffer,
           err: Buffer | None = None, wait: bool = False) -> float | None:
    """Run a planned kernel into ``out`` and raise if it flagged invalid parameters.

    Args:
        plan: from :func:`plan_dequantize` or :func:`plan_unpack`.
        dev: the device holding every Buffer.
        inputs: from :func:`bind_inputs`.
        out: the result Buffer (``count`` elements of ``out_dtype``).
        err: a 4-byte Buffer for the kernel's flag (default: a flag of this thread's).
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
    flag = host = None
    if any(p.name == "err" for p in kernel.buffers):
        flag, host = _cleared_flag(dev, err)
        args["err"] = flag
    took = dev.run(kernel, wait=wait, **args)
    if flag is not None and (host is None or host[0]):
        check_flag(flag, plan.kernel, lambda: explain_invalid(plan, inputs))
    return took


_FLAGS = threading.local()
_ZERO = np.zeros(1, np.uint32)


def _cleared_flag(dev: Any, err: Buffer | None = None) -> tuple[Buffer, np.ndarray | None]:
    """A kernel's error flag, cleared: ``err``, else on a host device this thread's own flag
    with its u32 view (host kernels finish before the launch returns, so it is read in place,
    with no allocation or copy when there is nothing to report), else a new Buffer."""
    if err is None and dev.allocator.host_memory:
        flags = _FLAGS.__dict__  # this thread's, by device (the flag Buffer holds it anyway)
        found = flags.get(dev)
        if found is None or found[0].allocation.freed:
            buf = Buffer(dev, 4)
            found = flags[dev] = (buf, buf.array.view(np.uint32))
        found[1][0] = 0
        return found  # type: ignore[no-any-return]
    err = err if err is not None else Buffer(dev, 4)
    return err.copyin(_ZERO), None


def _picker(order: list[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """The items of a sequence at ``order``, as a tuple."""
    return operator.itemgetter(*order) if len(order) > 1 else lambda a: tuple(a[i] for i in order)


class Prepared:
    """A repeat of a kernel call over a tensor's buffers, planned for one descriptor object, a
    device and the buffers' sizes (:func:`prepare`): the launch with its scalars checked
    (:meth:`~hurray_gpu.runtime.program.Program.bind`), what feeds each buffer parameter, and
    the result's descriptor, encoded. Calling it with the tensor's buffers allocates the
    result, launches once (the launch checks every buffer it is given) and wraps the result:
    nothing is validated or planned again. On a host device the launch is the program's
    :meth:`~hurray_gpu.runtime.program.Program.host_call`, with the same checks made here.
    """

    __slots__ = ("desc", "sizes", "launch", "plan", "flagged", "out_bytes", "result", "raw",
                 "host", "tables", "pick", "build", "dev", "fixed", "moving")

    def __init__(self, desc: Any, sizes: list[int], launch: Launch, feeds: tuple[Any, ...],
                 out_bytes: int, result: tuple[Any, bytes], plan: DequantPlan | None) -> None:
        self.desc, self.sizes, self.launch, self.plan = desc, sizes, launch, plan
        self.dev = launch.program.device
        self.flagged = "err" in feeds
        self.out_bytes, (self.result, self.raw) = out_bytes, result
        # The arguments in signature order, picked from [tensor buffers, tables, dst, err]
        # (the tables are held here, so alive; they are checked live on every call).
        self.tables = [s for s in feeds if isinstance(s, Buffer)]
        n, k = len(sizes), len(self.tables)
        order = [s if s.__class__ is int else n + k if s == "dst" else n + k + 1 if s == "err"
                 else n + self.tables.index(s) for s in feeds]
        self.pick = _picker(order)
        # The host call's: the tables' addresses are set once, the rest picked per call from
        # [tensor buffers, dst, err].
        self.fixed = [t.allocation for t in self.tables]
        self.moving = _picker([i if i < n else i - k for i in order if not n <= i < n + k])
        read_only = all(p.access == "r" for p, s in zip(launch.program.kernel.buffers, feeds,
                                                        strict=True) if s not in ("dst", "err"))
        fixed = {p: self.fixed[i - n] for p, i in enumerate(order) if n <= i < n + k}
        self.host = launch.program.host_call(launch, fixed) if read_only and out_bytes else None
        self.build = tensor_builder()

    def run(self, bufs: Sequence[Buffer]) -> Any:
        """The result over ``bufs`` (see :meth:`__call__`), or None when their sizes are not
        the planned ones (the call must be planned for them)."""
        host, dev = self.host, self.dev
        if host is None:
            return self(bufs) if [b.allocation.nbytes for b in bufs] == self.sizes else None
        allocs = []
        for b, size in zip(bufs, self.sizes, strict=True):
            a = b.allocation
            if a.nbytes != size:
                return None
            if b.device is not dev or a.base is not None or a.freed:
                return self(bufs)  # a view, or the checked launch says what is wrong
            allocs.append(a)
        for a in self.fixed:
            if a.freed:  # its address was taken when prepared: the checked launch refuses it
                return self(bufs)
        out = dev.allocator.take(self.out_bytes, _STANDARD)
        allocs.append(out)
        flag = words = None
        if self.flagged:
            flag, words = _cleared_flag(dev)
            allocs.append(flag.allocation)
        # The result is wrapped before the launch: a kernel that streams about the cache's size
        # evicts what Python touches, and each object touched after it costs a miss.
        result = Buffer.adopt(dev, out)
        tensor = self.build(self.result, (result,), (), self.raw, dev, _STANDARD, None, None)
        try:
            host(self.moving(allocs))
        except BaseException:
            result.free()
            raise
        if words is not None and words[0]:
            self._flagged(flag, bufs, result)  # type: ignore[arg-type]
        return tensor

    def _flagged(self, err: Buffer, bufs: Sequence[Buffer], out: Buffer) -> None:
        """Raise what the kernel flagged in ``err``, if anything (the result is dropped)."""
        kernel, plan = self.launch.program.kernel, self.plan
        args = self.pick([*bufs, *self.tables, out, err])
        try:
            check_flag(err, kernel.name, lambda: explain_invalid(plan, {
                p.name: a for p, a in zip(kernel.buffers, args, strict=True)}))
        except BaseException:
            out.free()
            raise

    def __call__(self, bufs: Sequence[Buffer]) -> Any:
        """The result Tensor of this call over ``bufs`` (the tensor's buffers, as planned).

        Raises:
            HurrayFormatError: an invalid parameter flagged by the kernel.
            UnsupportedOpError: a buffer the launch cannot take (freed, another device).
        """
        dev = self.launch.program.device
        out = Buffer(dev, self.out_bytes)
        err, host = _cleared_flag(dev) if self.flagged else (None, None)
        try:
            self.launch(self.pick([*bufs, *self.tables, out, err]))
        except BaseException:
            out.free()
            raise
        if err is not None and (host is None or host[0]):
            self._flagged(err, bufs, out)
        return make_tensor(self.result, (out,), raw=self.raw, device=dev,
                           memory_class=out.memory_class)


# Prepared calls by (operation, id of the descriptor, output type, device, output limit); each
# keeps its descriptor, so the id is not reused while the entry lives.
_PREPARED: dict[tuple[Any, ...], Prepared] = {}
PREPARED_CALLS = 256


def clear_prepared() -> None:
    """Drop every prepared call (and the device tables they hold)."""
    _PREPARED.clear()


def repeat(key: tuple[Any, ...], t: Any) -> Any:
    """The result of the call prepared under ``key`` run over ``t``'s buffers, when it was
    prepared for ``t``'s descriptor (this very object: descriptors are immutable) and
    buffers of exactly these sizes; None when there is none."""
    hit = _PREPARED.get(key)
    return hit.run(t.buffers) if hit is not None and hit.desc is t.descriptor else None


def prepare(key: tuple[Any, ...] | None, desc: Any, bufs: Sequence[Buffer], dev: Any,
            kernel: Any, scalars: dict[str, Any], feeds: tuple[Any, ...], out_dtype: Any,
            shape: tuple[int, ...], plan: DequantPlan | None = None) -> Prepared:
    """A call of ``kernel`` over ``bufs``, whose every check the caller has made for ``desc``
    and these buffer sizes; kept under ``key`` unless None, which must hold ``id(desc)``, the
    device and every other argument the call depends on (see :func:`repeat`).

    Args:
        feeds: what feeds each buffer parameter (see :func:`feeds`).
        out_dtype, shape: the row-major result; ``dst`` is exactly its size.
        plan: a dequant plan, to explain a flagged invalid parameter.
    """
    made = Prepared(desc, [b.allocation.nbytes for b in bufs], dev.program(kernel).bind(scalars),
                    feeds, buffer_size(out_dtype, math.prod(shape)),
                    dense_descriptor(out_dtype, shape, dev.tag), plan)
    if key is not None:
        # Evict the oldest entry, not all of them: a clear-all dropped the calls just
        # prepared alongside this one (a test that prepares five saw its first re-planned).
        while len(_PREPARED) >= PREPARED_CALLS:
            _PREPARED.pop(next(iter(_PREPARED)), None)
        _PREPARED[key] = made
    return made


def moved_params(q: Any, first: int) -> tuple[Any, list[int]]:
    """``q`` with its parameter buffers renumbered from ``first`` (a shared scale/zero-point
    buffer stays shared), and their old indices in the new order."""
    names = [n for n in ("scale_buffer_index", "zero_point_buffer_index")
             if getattr(q, n, None) is not None]
    old = sorted({int(getattr(q, n)) for n in names})
    moved = {n: first + old.index(int(getattr(q, n))) for n in names}
    return (dataclasses.replace(q, **moved) if moved else q), old
