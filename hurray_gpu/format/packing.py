"""Pack and unpack Hurray element buffers (Hurray spec, Memory Layout: Sub-Byte Types):
LSB-first sub-byte packing and little-endian byte views for whole-byte types. Vectorised
NumPy; no per-element Python loops.
"""

from __future__ import annotations

import numpy as np

from hurray_gpu.errors import HurrayFormatError, UnsupportedOpError
from hurray_gpu.format.dtypes import (
    DType,
    _count,
    _require_interpretable,
    buffer_size,
    from_numpy_dtype,
)

__all__ = ["as_bytes", "pack", "pack_codes", "to_codes", "unpack", "unpack_codes"]

_E8M0_INVALID = (0x00, 0xFF)  # Hurray spec, Element Types: both are invalid codes


def as_bytes(buf: object) -> np.ndarray:
    """View a bytes-like object or NumPy array as a flat uint8 array (no copy when possible).

    Args:
        buf: bytes, bytearray, memoryview or any C-contiguous-able NumPy array.

    Returns:
        A 1-D uint8 array over the same bytes.

    Raises:
        HurrayFormatError: if ``buf`` is not bytes-like.
    """
    if isinstance(buf, np.ndarray):
        if buf.dtype.hasobject:  # its buffer would expose raw PyObject pointers
            raise HurrayFormatError("buffer is a NumPy object array", field="buffer",
                                    fix="pass bytes or a numeric NumPy array.")
        return np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
    try:
        view = memoryview(buf)  # type: ignore[arg-type]
        if "O" in view.format:
            raise TypeError("object buffer")
        return np.frombuffer(view.cast("B"), dtype=np.uint8)
    except (TypeError, ValueError):
        raise HurrayFormatError(f"buffer must be bytes-like, got {type(buf).__name__}",
                                field="buffer", fix="pass bytes, memoryview or a NumPy array."
                                ) from None


def _le(dt: np.dtype) -> np.dtype:
    return dt.newbyteorder("<") if dt.kind in "iufc" else dt


def pack_codes(codes: np.ndarray, dtype: DType) -> np.ndarray:
    """Pack raw per-element codes (the low ``bits`` of each uint8) into a sub-byte buffer.

    Element ``i`` lands in bits ``[i*B, i*B+B)`` of the little-endian bit stream; 6-bit types
    go in groups of 4 elements per 3 bytes. Unused trailing bits are zero.

    Args:
        codes: uint8 codes, each below ``2**bits`` (flattened in C order).
        dtype: a sub-byte element type.

    Returns:
        A uint8 array of ``buffer_size(dtype, codes.size)`` bytes.

    Raises:
        HurrayFormatError: if a code does not fit in ``bits`` bits.
        UnsupportedOpError: if ``dtype`` is not a sub-byte type.
    """
    bits = _sub_byte_bits(dtype)
    flat = _checked_codes(codes, dtype, bits)
    if bits == 1:
        return np.packbits(flat, bitorder="little")
    if bits == 6:
        return _pack6(flat)
    per = 8 // bits
    padded = _pad(flat, per).reshape(-1, per)
    out = padded[:, 0].copy()
    for j in range(1, per):  # per <= 4: loops over bit lanes, not elements
        out |= padded[:, j] << np.uint8(j * bits)
    return out


def _checked_codes(codes: object, dtype: DType, bits: int) -> np.ndarray:
    arr = np.asarray(codes)
    if arr.dtype.kind not in "biu":
        _reject(f"{dtype} codes must be unsigned integers, got {arr.dtype}",
                "pass uint8 codes, or use pack() to convert values.")
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >> bits):
        _reject(f"a {dtype} code is outside 0..{(1 << bits) - 1} "
                f"(range {int(arr.min())}..{int(arr.max())})",
                f"mask codes to their low {bits} bits.")
    return np.ascontiguousarray(arr, dtype=np.uint8).reshape(-1)


def _pad(flat: np.ndarray, group: int) -> np.ndarray:
    extra = -flat.size % group
    return np.concatenate([flat, np.zeros(extra, np.uint8)]) if extra else flat


def _pack6(flat: np.ndarray) -> np.ndarray:
    g = _pad(flat, 4).reshape(-1, 4).astype(np.uint32)
    word = g[:, 0] | (g[:, 1] << 6) | (g[:, 2] << 12) | (g[:, 3] << 18)
    out = np.empty((word.size, 3), np.uint8)
    out[:, 0] = word & 0xFF
    out[:, 1] = (word >> 8) & 0xFF
    out[:, 2] = word >> 16
    return out.reshape(-1)


def unpack_codes(buf: object, dtype: DType, count: int, *, strict: bool = True) -> np.ndarray:
    """Read ``count`` raw codes (uint8, one per element) out of a sub-byte buffer.

    Bytes past ``buffer_size(dtype, count)`` are ignored (over-sized buffers are legal).

    Args:
        buf: the packed buffer (bytes-like or NumPy array).
        dtype: a sub-byte element type.
        count: the number of elements.
        strict: reject nonzero unused trailing bits in the last byte or 3-byte group.

    Returns:
        A uint8 array of ``count`` codes.

    Raises:
        HurrayFormatError: if the buffer is too short or (strict) trailing bits are set.
        UnsupportedOpError: if ``dtype`` is not a sub-byte type.
    """
    bits = _sub_byte_bits(dtype)
    data = _checked_bytes(buf, dtype, count)
    if strict:
        _check_trailing(data, dtype, bits, _count(count))
    n = _count(count)
    if bits == 1:
        return np.unpackbits(data, count=n, bitorder="little")
    if bits == 6:
        g = data.reshape(-1, 3).astype(np.uint32)
        word = g[:, 0] | (g[:, 1] << 8) | (g[:, 2] << 16)
        out = np.empty((word.size, 4), np.uint8)
        for j in range(4):
            out[:, j] = (word >> (6 * j)) & 0x3F
        return out.reshape(-1)[:n]
    per, mask = 8 // bits, np.uint8((1 << bits) - 1)
    out = np.empty((data.size, per), np.uint8)
    for j in range(per):
        out[:, j] = (data >> np.uint8(j * bits)) & mask
    return out.reshape(-1)[:n]


def _sub_byte_bits(dtype: DType) -> int:
    _require_interpretable(dtype)
    if not dtype.sub_byte:
        raise UnsupportedOpError(f"{dtype} is not a sub-byte type",
                                 fix="use pack()/unpack(), which handle every type.")
    return dtype.bits


def _checked_bytes(buf: object, dtype: DType, count: int) -> np.ndarray:
    n = _count(count)
    need = buffer_size(dtype, n)
    data = as_bytes(buf)
    if data.size < need:
        raise HurrayFormatError(
            f"buffer holds {data.size} bytes but {n} {dtype} elements need {need}",
            field="buffer", fix="pass the whole buffer, or a count that matches it "
                                "(Hurray spec, Element Types: Buffer Size Calculation).")
    return data[:need]


def _check_trailing(data: np.ndarray, dtype: DType, bits: int, n: int) -> None:
    group_elems, group_bytes = dtype.packing_group
    used = n % group_elems
    if used == 0:
        return
    last = data[-group_bytes:].astype(np.uint32)
    word = int(sum(int(b) << (8 * i) for i, b in enumerate(last)))
    if word >> (used * bits):
        raise HurrayFormatError(
            f"unused trailing bits of the last {group_bytes}-byte group of a {n}-element "
            f"{dtype} buffer are not zero (group 0x{word:0{2 * group_bytes}X})",
            field="buffer", offset=data.size - group_bytes,
            fix="zero the unused trailing bits when writing the buffer.")


def to_codes(values: object, dtype: DType) -> np.ndarray:
    """Convert values to ``dtype.numpy`` (checked), then return one uint8 code per element.

    Args:
        values: array-like; see ``pack`` for the conversion rules.
        dtype: a sub-byte element type.

    Returns:
        A flat uint8 array of codes.

    Raises:
        HurrayFormatError, UnsupportedOpError: as ``pack``.
    """
    bits = _sub_byte_bits(dtype)
    arr = _convert(values, dtype).reshape(-1)
    if dtype.kind == "bool":
        return (arr.view(np.uint8) != 0).view(np.uint8)
    return arr.view(np.uint8) & np.uint8((1 << bits) - 1)


def pack(values: object, dtype: DType) -> np.ndarray:
    """Encode values as the bytes of a Hurray buffer of ``dtype`` (C order, little-endian).

    Conversion rules: an array already of ``dtype.numpy`` is used as is. Otherwise integer
    targets accept integer/bool sources whose values are all in range; float targets accept
    bool/integer/float sources, rounded to nearest-even by ml_dtypes, except that NaN or Inf
    into float4/float6 (which cannot hold them) is rejected; complex targets accept any
    numeric source; bool accepts bool, or integers that are all 0 or 1. float8_e8m0 results
    must avoid the forbidden codes 0x00 and 0xFF. Sub-byte types are packed LSB-first with
    zeroed trailing bits; whole-byte types are a little-endian byte copy or view.

    Args:
        values: array-like of elements (any shape; flattened in C order).
        dtype: the target element type.

    Returns:
        A 1-D uint8 array of exactly ``buffer_size(dtype, values.size)`` bytes. For
        whole-byte types already in little-endian ``dtype.numpy`` it may share memory with
        ``values``.

    Raises:
        HurrayFormatError: (field ``"values"``) for out-of-range or unrepresentable values.
        UnsupportedOpError: for float128, private and unknown types, or unmappable sources.
    """
    _require_interpretable(dtype)
    if dtype.sub_byte:
        return pack_codes(to_codes(values, dtype), dtype)
    arr = _convert(values, dtype)
    if dtype.name == "float8_e8m0":
        _check_e8m0(arr.view(np.uint8), "values")
    return np.ascontiguousarray(arr.astype(_le(arr.dtype), copy=False)).reshape(-1).view(np.uint8)


def unpack(buf: object, dtype: DType, count: int, *, strict: bool = True) -> np.ndarray:
    """Decode ``count`` elements of ``dtype`` from a Hurray buffer.

    Args:
        buf: the buffer (bytes-like or NumPy array); extra bytes past the size are ignored.
        dtype: the element type.
        count: the number of elements.
        strict: reject nonzero unused trailing bits (sub-byte types) and the forbidden
            float8_e8m0 codes 0x00 and 0xFF.

    Returns:
        A 1-D array of ``dtype.numpy`` (ml_dtypes types unpacked one element per byte). For
        whole-byte types it is a view of ``buf`` where possible (read-only for ``bytes``).

    Raises:
        HurrayFormatError: if the buffer is too short, or (strict) holds invalid bits/codes.
        UnsupportedOpError: for float128, private and unknown types.
    """
    target = _numpy_of(dtype)
    if dtype.sub_byte:
        codes = unpack_codes(buf, dtype, count, strict=strict)
        return codes.astype(np.bool_) if dtype.kind == "bool" else codes.view(target)
    data = _checked_bytes(buf, dtype, count)
    if strict and dtype.name == "float8_e8m0":
        _check_e8m0(data, "buffer")
    if data.ctypes.data % target.alignment:
        data = data.copy()  # np.frombuffer on a misaligned slice would still work, but slowly
    return data.view(_le(target))


def _numpy_of(dtype: DType) -> np.dtype:
    _require_interpretable(dtype)
    if dtype.numpy is None:
        raise UnsupportedOpError(
            f"{dtype} has no exact NumPy dtype (np.longdouble is not IEEE binary128 on x86)",
            fix="handle float128 buffers as raw bytes (16 per element), or convert them to "
                "float64 with a binary128-aware library.")
    return dtype.numpy


def _check_e8m0(codes: np.ndarray, field: str) -> None:
    bad = (codes == _E8M0_INVALID[0]) | (codes == _E8M0_INVALID[1])
    if bad.any():
        index = int(np.argmax(bad))
        raise HurrayFormatError(
            f"float8_e8m0 element {index} is code 0x{int(codes[index]):02X}; Hurray forbids "
            "0x00 and 0xFF", field=field, offset=index if field == "buffer" else None,
            fix="scales must be positive powers of two in 2^-126..2^127 (codes 0x01-0xFE).")


def _convert(values: object, dtype: DType) -> np.ndarray:
    target = _numpy_of(dtype)
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise HurrayFormatError(f"values are not a regular array: {exc}", field="values",
                                fix="pass a NumPy array or a rectangular nested list.") from None
    if arr.dtype == target:
        return np.ascontiguousarray(arr)
    source = _source_kind(arr.dtype)
    if dtype.kind in ("int", "uint"):
        _check_int_range(arr, source, dtype)
    elif dtype.kind == "bool":
        _check_bool_source(arr, source)
    elif source == "complex" and dtype.kind != "complex":
        _reject(f"complex values cannot be stored as {dtype}", "take .real or .imag first.")
    elif dtype.bits in (4, 6) and source == "float" and not np.isfinite(
            arr.astype(np.float64, copy=False)).all():
        _reject(f"{dtype} has no NaN or Inf", "replace non-finite values before packing.")
    return np.ascontiguousarray(arr.astype(target))


def _source_kind(dt: np.dtype) -> str:
    if dt.kind in "biufc":
        return {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}[dt.kind]
    return from_numpy_dtype(dt).kind


def _check_int_range(arr: np.ndarray, source: str, dtype: DType) -> None:
    if source not in ("int", "uint", "bool"):
        _reject(f"{source} values cannot be stored as {dtype} without rounding",
                "round and cast to an integer dtype first.")
    if arr.size == 0 or source == "bool":
        return
    lo = -(1 << (dtype.bits - 1)) if dtype.signed else 0
    hi = (1 << (dtype.bits - 1)) - 1 if dtype.signed else (1 << dtype.bits) - 1
    vmin, vmax = int(arr.min()), int(arr.max())
    if vmin < lo or vmax > hi:
        _reject(f"values span {vmin}..{vmax}, outside the {dtype} range {lo}..{hi}",
                "clip or requantise the values first.")


def _check_bool_source(arr: np.ndarray, source: str) -> None:
    if source not in ("int", "uint") or (arr.size and not np.isin(arr, (0, 1)).all()):
        _reject("bool buffers take bool values, or integers that are all 0 or 1",
                "convert with `values != 0` first.")


def _reject(message: str, fix: str) -> None:
    raise HurrayFormatError(message, field="values", fix=fix)
