"""Descriptor framing shared by streams and files: the 10-byte prefix that sizes a descriptor."""

from __future__ import annotations

import struct

from hurray_gpu.errors import HurrayFormatError

DESCRIPTOR_MAGIC = b"HRRY"
PREFIX_SIZE = 10
MIN_DESCRIPTOR_SIZE = 20
DEFAULT_MAX_DESCRIPTOR_SIZE = 16 << 20
DEFAULT_MAX_COMPOSITE_DEPTH = 8
_FIX = "the input is not a Hurray descriptor stream; check that it was written by a Hurray writer."


def descriptor_length(prefix: bytes | bytearray | memoryview, offset: int, max_size: int) -> int:
    """Validate a descriptor's first 10 bytes and return its ``descriptor_length``.

    Args:
        prefix: at least the first 10 bytes of the descriptor.
        offset: absolute offset of the descriptor in its input, for errors.
        max_size: the largest descriptor accepted.

    Returns:
        The declared total descriptor length (header included).

    Raises:
        HurrayFormatError: bad magic, bad major version, or a length < 20 or > ``max_size``.
    """
    magic = bytes(prefix[:4])
    if magic != DESCRIPTOR_MAGIC:
        raise HurrayFormatError(f"descriptor magic is {magic!r}, expected b'HRRY'",
                                field="magic", offset=offset, fix=_FIX)
    if prefix[4] != 1:
        raise HurrayFormatError(f"descriptor version_major is {prefix[4]}; only 1 is supported",
                                field="version_major", offset=offset + 4,
                                fix="re-encode the tensor as a Hurray 1.x descriptor.")
    (length,) = struct.unpack_from("<I", prefix, 6)
    if length < MIN_DESCRIPTOR_SIZE:
        raise HurrayFormatError(f"descriptor_length {length} is below the 20-byte header",
                                field="descriptor_length", offset=offset + 6, fix=_FIX)
    if length > max_size:
        raise HurrayFormatError(
            f"descriptor_length {length} exceeds the reader limit of {max_size} bytes",
            field="descriptor_length", offset=offset + 6,
            fix="raise max_descriptor_size if this input is trusted.")
    return length
