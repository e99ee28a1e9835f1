"""Cross-member validation of composite tensors (Hurray spec, Composite / Virtual
Tensor: Validation).

The descriptor codec checks each descriptor alone; these are the rules that need the head and its
members together, run once all N members have arrived.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format import codec as _codec

PARTITION, OVERLAY, GROUP = 1, 2, 3
ROLE_CORRECTION, ROLE_BASE = 0, 1
_FIX = ("re-emit the composite with members that satisfy the Hurray spec, Composite / Virtual "
        "Tensor: Validation.")


def _fail(message: str, field: str, offset: int | None) -> HurrayFormatError:
    return HurrayFormatError(message, field=field, offset=offset, fix=_FIX)


def validate_members(head: Any, members: Sequence[Any], offsets: Sequence[int | None] = ()
                     ) -> None:
    """Check a head against its complete member list.

    Args:
        head: the head TensorDescriptor (layout tag 0x0B).
        members: the member descriptors in emission order.
        offsets: optional input offset of each member, for error messages.

    Raises:
        HurrayFormatError: wrong member count, shard/parent mismatch, dtype mismatch,
            bad overlay roles, or (partition) a gap or overlap.
    """
    rule, count = _codec.composition_rule(head), _codec.member_count(head)
    offs = list(offsets) + [None] * (len(members) - len(offsets))
    if count != len(members):
        raise _fail(f"composite head declares member_count {count} but {len(members)} members "
                    "were given", "member_count", None)
    if rule == OVERLAY and count == 0:
        raise _fail("overlay composite has member_count 0; it needs a base member",
                    "member_count", None)
    if rule not in (PARTITION, OVERLAY, GROUP):
        return  # private composition rules carry no public semantics
    head_shape = _codec.shape(head)
    for i, member in enumerate(members):
        _check_member(head, head_shape, rule, i, member, offs[i])
    if rule == PARTITION:
        _check_exact_cover(head_shape, members)


def _check_member(head: Any, head_shape: tuple[int, ...], rule: int, i: int, member: Any,
                  offset: int | None) -> None:
    role = _codec.member_role(member)
    if rule != OVERLAY:
        if role is not None:
            raise _fail(f"member {i} of a {'partition' if rule == PARTITION else 'group'} "
                        "composite carries a Composite Member section", "flags", offset)
        if rule == GROUP:
            return
    shard = _codec.shard(member)
    if shard is None:
        raise _fail(f"member {i} of a partition/overlay composite has no shard section",
                    "flags", offset)
    parent, _ = shard
    if tuple(parent) != head_shape:
        raise _fail(f"member {i} shard parent_shape {list(parent)} != head shape "
                    f"{list(head_shape)}", "parent_shape", offset)
    _check_dtype(head, i, member, offset)
    if rule == OVERLAY:
        _check_overlay_role(head_shape, i, member, role, shard, offset)


def _check_dtype(head: Any, i: int, member: Any, offset: int | None) -> None:
    head_tag, member_tag = _codec.type_tag(head), _codec.type_tag(member)
    if _codec.is_head(member) or not _codec.is_quantized(member):
        if member_tag != head_tag:
            raise _fail(f"member {i} type_tag 0x{member_tag:02X} != head type_tag "
                        f"0x{head_tag:02X}", "type_tag", offset)
        return
    # A quantized member decodes to floating values; the consumer evaluates them in the head's
    # type, so the head must be a floating type.
    if head_tag not in (0x01, 0x02, 0x03, 0x04):
        raise _fail(f"member {i} is quantized (decodes to floating values) but the head "
                    f"type_tag 0x{head_tag:02X} is not a float type", "type_tag", offset)


def _check_overlay_role(head_shape: tuple[int, ...], i: int, member: Any, role: int | None,
                        shard: tuple[tuple[int, ...], tuple[int, ...]],
                        offset: int | None) -> None:
    if role is None:
        raise _fail(f"overlay member {i} has no Composite Member section", "flags", offset)
    if i == 0:
        if role != ROLE_BASE:
            raise _fail("the first overlay member must be the base (member_role 0x01)",
                        "member_role", offset)
        if any(shard[1]) or _codec.shape(member) != head_shape:
            raise _fail("the overlay base must span the head (zero shard_offset and the head's "
                        "shape)", "shard_offset", offset)
    elif role != ROLE_CORRECTION:
        raise _fail(f"overlay member {i} has member_role 0x{role:02X}; only the first member "
                    "is the base, the others must be corrections (0x00)", "member_role", offset)


def _check_exact_cover(head_shape: tuple[int, ...], members: Sequence[Any]) -> None:
    lows, highs, volume = [], [], 0
    for member in members:
        _, offset = _codec.shard(member) or ((), ())
        lo = tuple(offset)
        hi = tuple(a + b for a, b in zip(lo, _codec.shape(member), strict=True))
        lows.append(lo)
        highs.append(hi)
        volume += int(np.prod([h - lo_ for lo_, h in zip(lo, hi, strict=True)], dtype=object))
    total = int(np.prod(list(head_shape), dtype=object))
    # Boxes lie inside the head (shard bounds), so more volume than the head means an overlap.
    # With equal volume, "no overlap" is the same as "exact cover".
    if volume > total:
        _find_overlap(lows, highs)
    if volume != total:
        raise _fail(f"partition members cover {volume} elements but the head has {total}: "
                    "there is a gap", "shard_offset", None)
    _find_overlap(lows, highs, total if total <= _PAINT_LIMIT else None, head_shape)


# Heads up to this many elements are checked by painting a coverage grid: O(elements + members).
_PAINT_LIMIT = 1 << 22


def _overlap_error(i: int, j: int) -> HurrayFormatError:
    i, j = min(i, j), max(i, j)
    return _fail(f"partition members {i} and {j} overlap", "shard_offset", None)


def _find_overlap(lows: list[tuple[int, ...]], highs: list[tuple[int, ...]],
                  total: int | None = None, head_shape: tuple[int, ...] = ()) -> None:
    """Raise on the first pair of overlapping non-empty boxes."""
    n = len(lows)
    if n < 2:
        return
    if not lows[0]:  # rank 0: every box is the single element
        raise _overlap_error(0, 1)
    if total is not None:
        grid = np.full(tuple(head_shape), -1, dtype=np.int32 if n < 2**31 else np.int64)
        for i, (lo, hi) in enumerate(zip(lows, highs, strict=True)):
            box = tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))
            taken = grid[box]
            if taken.size and (taken >= 0).any():
                raise _overlap_error(int(taken[taken >= 0].flat[0]), i)
            grid[box] = i
        return
    _sweep(lows, highs)


def _sweep(lows: list[tuple[int, ...]], highs: list[tuple[int, ...]]) -> None:
    """Sort along the dimension with the most distinct starts and compare only boxes whose
    extents along it intersect (sweep and prune)."""
    # Descriptors guarantee shard_offset + shape <= parent_shape < 2**64, so uint64 is exact.
    lo = np.array(lows, dtype=np.uint64)
    hi = np.array(highs, dtype=np.uint64)
    keep = np.all(lo < hi, axis=1)  # empty boxes overlap nothing
    index = np.nonzero(keep)[0]
    lo, hi = lo[keep], hi[keep]
    if len(index) < 2:
        return
    axis = int(np.argmax([len(np.unique(lo[:, k])) for k in range(lo.shape[1])]))
    order = np.argsort(lo[:, axis], kind="stable")
    lo, hi, index = lo[order], hi[order], index[order]
    active = np.empty(0, dtype=np.int64)
    for i in range(len(index)):
        # Boxes sorted before i start at or before it; only those still open along axis meet it.
        active = active[hi[active, axis] > lo[i, axis]]
        if active.size:
            hit = np.all((lo[active] < hi[i]) & (lo[i] < hi[active]), axis=1)
            if hit.any():
                raise _overlap_error(int(index[active[int(np.argmax(hit))]]), int(index[i]))
        active = np.append(active, i)
