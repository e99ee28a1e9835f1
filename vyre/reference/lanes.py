"""Per-invocation state: ids, scoped locals, the frame stack and barrier/return flags."""

from __future__ import annotations

from vyre.reference.errors import ReferenceExecutionError
from vyre.reference.values import Value


class Lane:
    """One invocation of a workgroup (``HashmapInvocation`` in the reference).

    Attributes:
        gid, wid, lid: global, workgroup and local ids (3-tuples of u32).
        lli: linear local index ``lx + wx*(ly + wy*lz)`` (also the lane order).
        locals: every visible binding, flattened (shadowing is an error, so names are unique).
        scopes: names bound per open scope, innermost last.
        immutable: names of loop variables currently bound.
        frames: the frame stack; ``[0, nodes, index, scoped]`` or ``[1, var, next, to, body]``.
        returned, waiting: Return executed; waiting at a barrier.
        uniform_checks: If node id -> first cond seen, for Ifs with a barrier inside them.
        uniform_conflict: this lane saw two different conds for one such If.
        pending_async: tag -> (destination, byte start, payload, size) of an async copy.
    """

    __slots__ = ("gid", "wid", "lid", "lli", "locals", "scopes", "immutable", "frames",
                 "returned", "waiting", "uniform_checks", "uniform_conflict", "pending_async")

    def __init__(self, gid: tuple[int, int, int], wid: tuple[int, int, int],
                 lid: tuple[int, int, int], lli: int, entry: tuple) -> None:
        self.gid, self.wid, self.lid, self.lli = gid, wid, lid, lli
        self.locals: dict[str, Value] = {}
        self.scopes: list[list[str]] = [[]]
        self.immutable: set[str] = set()
        self.frames: list[list] = [[0, entry, 0, False]]
        self.returned = False
        self.waiting = False
        self.uniform_checks: dict[int, bool] = {}
        self.uniform_conflict = False
        self.pending_async: dict[str, tuple[str, int, bytes, int]] = {}

    @property
    def done(self) -> bool:
        """Returned, or every frame finished."""
        return self.returned or not self.frames

    def bind(self, name: str, value: Value) -> None:
        """``Let``: bind a new local in the innermost scope.

        Raises:
            ReferenceExecutionError: the name is already visible (shadowing is an error).
        """
        if name in self.locals:
            raise ReferenceExecutionError(
                f"duplicate local binding `{name}`.",
                fix="choose a unique local name; shadowing is not allowed.",
            )
        self.locals[name] = value
        self.scopes[-1].append(name)

    def assign(self, name: str, value: Value) -> None:
        """``Assign``: overwrite the visible binding ``name``.

        Raises:
            ReferenceExecutionError: the name is undeclared or a loop variable.
        """
        if name not in self.locals:
            raise ReferenceExecutionError(
                f"assignment to undeclared variable `{name}`.",
                fix="add a Let before assigning it.",
            )
        if name in self.immutable:
            raise ReferenceExecutionError(
                f"assignment to loop variable `{name}`.",
                fix="loop variables are immutable; copy it into a Let first.",
            )
        self.locals[name] = value

    def push_scope(self) -> None:
        """Open a child scope."""
        self.scopes.append([])

    def pop_scope(self) -> None:
        """Close the innermost scope, dropping its bindings."""
        for name in self.scopes.pop():
            del self.locals[name]
            self.immutable.discard(name)


class LaneSnapshot:
    """A lane's ids and locals frozen at the start of a scheduling round (for subgroup ops)."""

    __slots__ = ("gid", "wid", "lid", "lli", "locals")

    def __init__(self, lane: Lane) -> None:
        self.gid, self.wid, self.lid, self.lli = lane.gid, lane.wid, lane.lid, lane.lli
        self.locals = dict(lane.locals)
