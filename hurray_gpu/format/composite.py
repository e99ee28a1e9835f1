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


# The cover check enumerates 2^k corners per member (k: the axes along which the member stops
# short of the head's end), so its time and memory grow with the members, never with the head;
# a partition needing more than this many corners per member on average is refused.
MAX_COVER_CORNERS = 64


def _check_exact_cover(head_shape: tuple[int, ...], members: Sequence[Any]) -> None:
    """Exact cover and no overlap, without touching the head's elements.

    On the head, a box [lo, hi) is the signed sum of the orthant indicators {x >= c} of its
    corners c (coordinate lo_k or hi_k on each axis, sign -1 per hi_k; hi_k = the head's end
    drops out, as its orthant misses the head). Orthant indicators are linearly independent,
    so the members cover each element exactly once iff their corner weights sum to the head's:
    +1 at the origin, 0 elsewhere. At the lexicographically first corner where they do not, the
    coverage count is not 1: that element names the gap or the overlap.
    """
    # A leading axis of extent 1 keeps rank 0 out of the special cases below.
    ends = np.array((1, *head_shape), dtype=np.uint64)
    if not ends.all():
        return  # an empty head: boxes inside it are empty too
    lo = np.zeros((len(members), len(ends)), dtype=np.uint64)
    hi = np.ones_like(lo)
    for i, member in enumerate(members):
        lo[i, 1:] = member.shard.shard_offset  # _check_member: every member has a shard
        hi[i, 1:] = _codec.shape(member)
    hi += lo  # shard bounds keep lo + shape <= the head's shape < 2**64
    index = np.flatnonzero(np.all(lo < hi, axis=1))  # empty members cover nothing
    lo, hi = lo[index], hi[index]
    inner = hi < ends
    corners = float(np.exp2(inner.sum(axis=1)).sum())
    if corners > MAX_COVER_CORNERS * len(members) + 4096:
        raise HurrayFormatError(
            f"partition of {len(members)} members has {corners:.0f} box corners to check, more "
            f"than {MAX_COVER_CORNERS} per member", field="shard_offset", offset=None,
            fix="split the tensor into nested partitions that each cut fewer axes.")
    points, sign, owner = lo, np.ones(len(lo), dtype=np.int64), np.arange(len(lo))
    for axis in np.flatnonzero(inner.any(axis=0)):
        pick = np.flatnonzero(inner[owner, axis])
        extra = points[pick]
        extra[:, axis] = hi[owner[pick], axis]
        points, sign = np.concatenate([points, extra]), np.concatenate([sign, -sign[pick]])
        owner = np.concatenate([owner, owner[pick]])
    points = np.concatenate([points, np.zeros((1, len(ends)), dtype=np.uint64)])
    sign = np.concatenate([sign, [-1]])  # the head's own corner, subtracted
    order = np.lexsort(points.T[::-1])
    points, sign = points[order], sign[order]
    first = np.flatnonzero(np.concatenate([[True], np.any(points[1:] != points[:-1], axis=1)]))
    wrong = np.flatnonzero(np.add.reduceat(sign, first))
    if not wrong.size:
        return
    at = points[first[wrong[0]]]
    where = [int(v) for v in at[1:]]
    covering = index[np.all((lo <= at) & (at < hi), axis=1)]
    if len(covering) > 1:
        raise _fail(f"partition members {covering[0]} and {covering[1]} overlap at element "
                    f"{where}", "shard_offset", None)
    raise _fail(f"no partition member covers element {where}: there is a gap", "shard_offset",
                None)
