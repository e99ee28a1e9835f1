"""Where the io layer and Tensor meet the descriptor codec.

Keeps the container code independent of the descriptor package's internal layout, and turns
descriptor-relative error offsets into offsets within the enclosing stream or file.
"""

from __future__ import annotations

from typing import Any

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format import descriptor as _d

COMPOSITE_TAG = 0x0B


def decode(raw: bytes, *, offset: int = 0, permissive: bool = False) -> Any:
    """Decode one complete descriptor; error offsets are shifted by ``offset``.

    Args:
        raw: exactly the descriptor's bytes.
        offset: absolute position of ``raw`` in its input.
        permissive: the decoder's permissive mode.

    Returns:
        The TensorDescriptor.

    Raises:
        HurrayFormatError: the descriptor is malformed or breaks a spec rule.
    """
    try:
        return _d.decode_descriptor(raw, permissive=permissive)
    except HurrayFormatError as exc:
        if not offset or exc.offset is None:
            raise
        raise exc.shifted(offset) from None


def encode(desc: Any) -> bytes:
    """Encode (and validate) a TensorDescriptor."""
    return desc.encode(permissive=not desc.interpretable)


def handles(desc: Any) -> tuple[Any, ...]:
    """The buffer table (BufferHandle objects with byte_size, alignment, device_tag, ...)."""
    return tuple(desc.buffers)


def layout_tag(desc: Any) -> int:
    """The wire layout tag."""
    return int(desc.layout_tag)


def is_head(desc: Any) -> bool:
    """True for a composite head (layout 0x0B)."""
    return layout_tag(desc) == COMPOSITE_TAG


def is_unknown_layout(desc: Any) -> bool:
    """True when a permissive decode met a layout tag it cannot frame."""
    return isinstance(desc.layout, _d.UnknownLayout)


def member_count(desc: Any) -> int:
    """A head's member_count."""
    return int(desc.layout.member_count)


def composition_rule(desc: Any) -> int:
    """A head's composition_rule."""
    return int(desc.layout.composition_rule)


def shape(desc: Any) -> tuple[Any, ...]:
    """The shape (None marks a dynamic dimension)."""
    return tuple(desc.shape)


def type_tag(desc: Any) -> int:
    """The wire type tag."""
    return int(desc.type_tag)


def is_quantized(desc: Any) -> bool:
    """True when the descriptor carries a quantization section."""
    return desc.quantization is not None


def shard(desc: Any) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(parent_shape, shard_offset)`` or None."""
    s = desc.shard
    return None if s is None else (tuple(s.parent_shape), tuple(s.shard_offset))


def member_role(desc: Any) -> int | None:
    """The Composite Member section's member_role, or None when absent."""
    m = desc.composite_member
    return None if m is None else int(m.member_role)


def require_producer_synced(desc: Any, offset: int | None) -> None:
    """Cross-machine rule (Hurray spec, Buffer Protocol): every buffer must declare sync_mode 0.

    Raises:
        HurrayFormatError: naming the first buffer that does not.
    """
    for i, h in enumerate(handles(desc)):
        if h.sync_mode != 0:
            raise HurrayFormatError(
                f"buffers[{i}].sync_mode is {h.sync_mode}; cross-machine transfers allow only 0 "
                "(producer synced)", field=f"buffers[{i}].sync_mode", offset=offset,
                fix="synchronise on the producer and declare sync_mode 0 before sending.")
