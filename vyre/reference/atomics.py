"""Atomic read-modify-write semantics of the reference (semantics doc section 3.2)."""

from __future__ import annotations

from vyre.ir import AtomicOp
from vyre.reference.errors import ReferenceExecutionError

_MASK32 = 0xFFFFFFFF


def apply_atomic(op: AtomicOp, old: int, expected: int | None, value: int) -> int:
    """The new word an atomic writes; the atomic expression itself yields ``old``.

    Args:
        op: the atomic operator.
        old: the current u32 word.
        expected: CompareExchange's expected word (None for every other op).
        value: the operand word.

    Returns:
        The new u32 word.

    Raises:
        ReferenceExecutionError: CompareExchangeWeak, FetchNand, an opaque op, or an
            expected value that does not match the op.
    """
    if (op == AtomicOp.COMPARE_EXCHANGE) != (expected is not None):
        raise ReferenceExecutionError(
            f"atomic {getattr(op, 'name', op)} has a mismatched expected operand.",
            fix="set Atomic.expected exactly for CompareExchange.",
        )
    if op == AtomicOp.ADD:
        return (old + value) & _MASK32
    if op == AtomicOp.OR:
        return old | value
    if op == AtomicOp.AND:
        return old & value
    if op == AtomicOp.XOR:
        return old ^ value
    if op == AtomicOp.MIN:
        return min(old, value)
    if op in (AtomicOp.MAX, AtomicOp.LRU_UPDATE):
        return max(old, value)
    if op == AtomicOp.EXCHANGE:
        return value
    if op == AtomicOp.COMPARE_EXCHANGE:
        return value if old == expected else old
    raise ReferenceExecutionError(
        f"atomic op {getattr(op, 'name', op)} is not supported by the reference interpreter.",
        fix="use CompareExchange, not CompareExchangeWeak; write FetchNand as a CAS loop.",
    )
