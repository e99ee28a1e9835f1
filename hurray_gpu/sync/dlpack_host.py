"""The host side of DLPack export: what a host tensor's DLTensor describes."""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.sync.dlpack_types import KDL_CPU, DLPackError, dtype_code

__all__ = ["element_strides", "host_view"]


def element_strides(t: Any) -> tuple[int, ...]:
    """Strides in elements for a row-major, column-major or strided descriptor.

    Raises:
        DLPackError: any other layout, or a composite/quantized/dynamic-shape tensor.
    """
    desc = t.descriptor
    if t.is_composite or desc.layout_tag not in (0x01, 0x02, 0x03):
        raise DLPackError(f"layout {t.layout_name} is not expressible with DLPack strides",
                          fix="call .materialize() for a dense row-major copy first.")
    if desc.quantization is not None:
        raise DLPackError("a quantized tensor has no DLPack form",
                          fix="call .dequantize('float32') first.")
    if None in desc.shape:
        raise DLPackError("a dynamic dimension cannot be exported",
                          fix="resolve the shape (slice the tensor) first.")
    shape = [int(d) for d in desc.shape]
    if desc.layout_tag == 0x03:
        return tuple(int(s) for s in desc.layout.strides)
    order = range(len(shape) - 1, -1, -1) if desc.layout_tag == 0x01 else range(len(shape))
    strides, step = [0] * len(shape), 1
    for axis in order:
        strides[axis] = step
        step *= max(shape[axis], 1)
    return tuple(strides)


def host_view(t: Any, version: tuple[int, int] | None, copy: bool | None) -> dict[str, Any]:
    """The DLTensor fields for a host tensor, copying only where DLPack needs it.

    Raises:
        DLPackError: a layout, dtype or read-only buffer the consumer cannot take.
    """
    strides = element_strides(t)
    shape = tuple(int(d) for d in t.descriptor.shape)
    dtype = t.dtype
    if dtype.name == "bool":
        # DLPack bool is one byte per element; Hurray packs 8 per byte: only a copy works.
        if copy is False:
            raise DLPackError("bool is bit-packed in Hurray but one byte per element in DLPack",
                              fix="pass copy=None or True to export an unpacked copy.")
        arr = np.ascontiguousarray(t.numpy())
        return _view(arr.reshape(-1).view(np.uint8), shape, _c_strides(shape), (6, 8), 0,
                     False, True, arr)
    code, bits = dtype_code(dtype.name, version or (0, 0))
    if dtype.sub_byte and t.descriptor.layout_tag != 0x01:
        raise DLPackError(f"packed {dtype.name} is exported only row-major",
                          fix="call .materialize() first.")
    buf = t.buffers[0].array if t.buffers else np.empty(0, np.uint8)
    readonly = not buf.flags.writeable
    copied = bool(copy) or (readonly and version is None and copy is None)
    if readonly and version is None and copy is False:
        raise DLPackError("a read-only buffer cannot be flagged in a legacy DLPack capsule",
                          fix="pass max_version=(1, 0) or copy=True.")
    if copied:
        from hurray_gpu.io._memory import aligned_copy

        buf = aligned_copy(buf.copy(), 64)
        readonly = False
    return _view(buf, shape, strides, (code, bits), int(t.descriptor.byte_offset), readonly,
                 copied, (t, buf))


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return tuple(reversed(out))


def _view(buf: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...],
          code: tuple[int, int], byte_offset: int, readonly: bool, copied: bool,
          keep: Any) -> dict[str, Any]:
    data = buf.ctypes.data if buf.size else 0
    return {"data": data, "device": (KDL_CPU, 0), "shape": shape, "strides": strides,
            "code": code[0], "bits": code[1], "byte_offset": byte_offset,
            "readonly": readonly, "copied": copied, "keep": keep}
