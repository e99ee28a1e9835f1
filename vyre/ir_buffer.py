"""vyre buffer declarations: BufferDecl, MemoryHints and the rev-6 ShapePredicate tree."""

from __future__ import annotations

from dataclasses import dataclass, replace

from vyre.ir_types import (
    BufferAccess,
    CacheLocality,
    DataType,
    LinearType,
    MemoryKind,
    Scalar,
)


class ShapePredicate:
    """Base of the static element-count predicates attached to a buffer (rev 6)."""

    __slots__ = ()
    TAG: int = -1

    def holds(self, count: int) -> bool:  # pragma: no cover - overridden
        """Whether the predicate holds for ``count`` elements."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class AtLeast(ShapePredicate):
    """``count >= n``."""

    n: int
    TAG = 1

    def holds(self, count: int) -> bool:
        """Whether ``count >= n``."""
        return count >= self.n


@dataclass(frozen=True, slots=True)
class AtMost(ShapePredicate):
    """``count <= n``."""

    n: int
    TAG = 2

    def holds(self, count: int) -> bool:
        """Whether ``count <= n``."""
        return count <= self.n


@dataclass(frozen=True, slots=True)
class Exactly(ShapePredicate):
    """``count == n``."""

    n: int
    TAG = 3

    def holds(self, count: int) -> bool:
        """Whether ``count == n``."""
        return count == self.n


@dataclass(frozen=True, slots=True)
class MultipleOf(ShapePredicate):
    """``count % n == 0``; MultipleOf(0) never holds."""

    n: int
    TAG = 4

    def holds(self, count: int) -> bool:
        """Whether ``count`` is a multiple of ``n`` (false for n == 0)."""
        return self.n != 0 and count % self.n == 0


@dataclass(frozen=True, slots=True)
class ModEquals(ShapePredicate):
    """``count % modulus == remainder``; false when modulus is 0 or remainder >= modulus."""

    modulus: int
    remainder: int
    TAG = 5

    def holds(self, count: int) -> bool:
        """Whether ``count % modulus == remainder``."""
        if self.modulus == 0 or self.remainder >= self.modulus:
            return False
        return count % self.modulus == self.remainder


@dataclass(frozen=True, slots=True)
class AffineRange(ShapePredicate):
    """``min <= count * scale + offset <= max`` with i64 parameters (evaluated exactly)."""

    scale: int
    offset: int
    min: int
    max: int
    TAG = 6

    def holds(self, count: int) -> bool:
        """Whether the affine image of ``count`` lies in ``[min, max]``."""
        value = count * self.scale + self.offset
        return self.min <= value <= self.max


@dataclass(frozen=True, slots=True)
class PredicateAnd(ShapePredicate):
    """Both predicates hold."""

    left: ShapePredicate
    right: ShapePredicate
    TAG = 7

    def holds(self, count: int) -> bool:
        """Whether both operands hold."""
        return self.left.holds(count) and self.right.holds(count)


@dataclass(frozen=True, slots=True)
class PredicateOr(ShapePredicate):
    """Either predicate holds."""

    left: ShapePredicate
    right: ShapePredicate
    TAG = 8

    def holds(self, count: int) -> bool:
        """Whether either operand holds."""
        return self.left.holds(count) or self.right.holds(count)


@dataclass(frozen=True, slots=True)
class PredicateNot(ShapePredicate):
    """The predicate does not hold."""

    inner: ShapePredicate
    TAG = 9

    def holds(self, count: int) -> bool:
        """Whether the operand does not hold."""
        return not self.inner.holds(count)


@dataclass(frozen=True, slots=True)
class MemoryHints:
    """Backend hints; the default encodes as ``00 00000000 01``."""

    coalesce_axis: int | None = None
    preferred_alignment: int = 0
    cache_locality: CacheLocality = CacheLocality.TEMPORAL


_DEFAULT_KIND = {
    BufferAccess.READ_ONLY: MemoryKind.READONLY,
    BufferAccess.UNIFORM: MemoryKind.UNIFORM,
    BufferAccess.WORKGROUP: MemoryKind.SHARED,
}


def default_memory_kind(access: BufferAccess) -> MemoryKind:
    """The MemoryKind ``BufferDecl::storage`` picks for ``access``."""
    return _DEFAULT_KIND.get(access, MemoryKind.GLOBAL)


@dataclass(frozen=True, slots=True)
class BufferDecl:
    """One buffer of a Program: all 13 fields of vyre's ``BufferDecl``.

    ``output_byte_range`` is a half-open ``(start, end)`` byte range or None.
    """

    name: str
    binding: int = 0
    access: BufferAccess = BufferAccess.READ_WRITE
    kind: MemoryKind = MemoryKind.GLOBAL
    element: DataType = Scalar.U32
    count: int = 0
    is_output: bool = False
    pipeline_live_out: bool = False
    output_byte_range: tuple[int, int] | None = None
    hints: MemoryHints = MemoryHints()
    bytes_extraction: bool = False
    linear_type: LinearType = LinearType.UNRESTRICTED
    shape_predicate: ShapePredicate | None = None

    @classmethod
    def storage(
        cls, name: str, binding: int, access: BufferAccess, element: DataType, count: int = 0
    ) -> BufferDecl:
        """``BufferDecl::storage``: the memory kind follows from ``access``.

        Args:
            name: buffer name.
            binding: binding slot.
            access: access mode.
            element: element type.
            count: element count (0 = sized at dispatch).

        Returns:
            The declaration.
        """
        return cls(name, binding, access, default_memory_kind(access), element, count)

    @classmethod
    def read(cls, name: str, binding: int, element: DataType, count: int = 0) -> BufferDecl:
        """A ReadOnly storage buffer."""
        return cls.storage(name, binding, BufferAccess.READ_ONLY, element, count)

    @classmethod
    def read_write(cls, name: str, binding: int, element: DataType, count: int = 0) -> BufferDecl:
        """A ReadWrite storage buffer."""
        return cls.storage(name, binding, BufferAccess.READ_WRITE, element, count)

    @classmethod
    def output(cls, name: str, binding: int, element: DataType, count: int = 0) -> BufferDecl:
        """``BufferDecl::output``: ReadWrite with is_output and pipeline_live_out set."""
        decl = cls.storage(name, binding, BufferAccess.READ_WRITE, element, count)
        return replace(decl, is_output=True, pipeline_live_out=True)

    @classmethod
    def workgroup(cls, name: str, count: int, element: DataType) -> BufferDecl:
        """``BufferDecl::workgroup``: shared memory, binding 0."""
        return cls(name, 0, BufferAccess.WORKGROUP, MemoryKind.SHARED, element, count)

    def with_(self, **changes: object) -> BufferDecl:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def is_writable(self) -> bool:
        """True for ReadWrite and WriteOnly buffers (the wire output set)."""
        return self.access in (BufferAccess.READ_WRITE, BufferAccess.WRITE_ONLY)
