"""The statement walk of the vyre validator: one pre-order pass with an explicit stack.

Mirrors ``PreorderValidator``: scopes, divergence, limits (V018/V019), the per-statement rules
and the fusion-alias state (V116). The statement rules themselves live in validate_stmts.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from vyre.ir import Block, Expr, If, Loop, Node, Region, Return
from vyre.validate_exprs import ExprValidator
from vyre.validate_report import Sink, ValidationOptions, Where
from vyre.validate_types import U32, Binding, Buffers, Scope, TypeMemo, collect_accesses

MAX_NESTING_DEPTH = 64
MAX_NODE_COUNT = 100_000
LIMITS, COMPOSITION, NODE = "Limits", "Composition", "Node"
SELF_EXCLUSIVE_SUFFIX = "#self-exclusive"
Visit = Callable[["Walker", Node, Where], None]


@dataclass(slots=True)
class Frame:
    """One open statement sequence: its scope log, sibling Let names and divergence."""

    path: str
    nodes: tuple[Node, ...]
    divergent: bool
    depth: int
    log: list[tuple[str, Binding | None]] = field(default_factory=list)
    lets: set[str] = field(default_factory=set)


class Walker:
    """Walks the entry, keeping the state every statement rule reads."""

    def __init__(self, buffers: Buffers, options: ValidationOptions, sink: Sink) -> None:
        self.buffers = buffers
        self.options = options
        self.sink = sink
        self.scope: Scope = {}
        self.frames: list[Frame] = []
        self.node_count = 0
        self.count_reported = False
        self.depth_reported = False
        self.reads: set[str] = set()
        self.atomics: set[str] = set()
        self.alias_stack: list[tuple[set[str], set[str]]] = []
        self.pending: list[tuple[set[str], set[str]]] = []
        self.self_exclusive: dict[str, list[str]] = {}

    # --- helpers used by the statement rules ------------------------------------------------

    @property
    def frame(self) -> Frame:
        """The innermost open sequence."""
        return self.frames[-1]

    def memo(self) -> TypeMemo:
        """A type oracle for the current scope."""
        return TypeMemo(self.buffers, self.scope)

    def validate_expr(self, expr: Expr, where: Where, label: str, memo: TypeMemo) -> None:
        """Run the expression rules on one statement field."""
        ExprValidator(self.buffers, memo, self.options, self.sink).validate(expr, where.at(label))

    def bind(self, name: str, binding: Binding) -> None:
        """Insert a binding, logging the old one so the sequence end restores it."""
        self.frame.log.append((name, self.scope.get(name)))
        self.scope[name] = binding

    def hazards(self, where: Where, reads: set[str], atomics: set[str], extend: bool) -> None:
        """V116: atomic vs non-atomic access to one buffer since the last barrier."""
        hazards = sorted((atomics & self.reads) | (reads & self.atomics))
        for buffer in hazards:
            self.sink.error("V116", COMPOSITION, where, f"fusion hazard on buffer `{buffer}`: one "
                            "node reads it non-atomically while another issues an atomic access "
                            "without an explicit barrier", "insert `Node::barrier()` between the "
                            "read path and the atomic path, or rename the buffers before fusion.")
        if extend:
            self.reads |= reads
            self.atomics |= atomics
        else:
            self.pending.append((reads, atomics))

    def expr_hazards(self, where: Where, exprs: tuple[Expr, ...], extra_reads: tuple[str, ...],
                     extend: bool = True) -> None:
        """Collect the accesses of ``exprs`` (plus ``extra_reads``) and check V116."""
        reads: set[str] = set(extra_reads)
        atomics: set[str] = set()
        for expr in exprs:
            collect_accesses(expr, reads, atomics)
        self.hazards(where, reads, atomics, extend)

    def clear_alias(self) -> None:
        """A barrier orders everything before it."""
        self.reads.clear()
        self.atomics.clear()

    # --- the walk ---------------------------------------------------------------------------

    def run(self, entry: tuple[Node, ...], visit: Visit) -> None:
        """Walk ``entry`` in pre-order.

        Args:
            entry: the program's top-level statements.
            visit: ``visit(walker, node, where)`` applies one statement's rules.
        """
        stack: list[tuple[object, ...]] = [("pop_scope",)]
        stack.extend(("child", n, f"entry[{i}]") for i, n in reversed(list(enumerate(entry))))
        stack.append(("push_alias",))
        stack.append(("push_scope", Frame("entry", tuple(entry), False, 0)))
        while stack:
            item = stack.pop()
            kind = item[0]
            if kind == "child":
                self._child(item[1], item[2], stack, visit)  # type: ignore[arg-type]
            elif kind == "post":
                reads, atomics = self.pending.pop()
                self.reads |= reads
                self.atomics |= atomics
            elif kind == "push_scope":
                self.frames.append(item[1])  # type: ignore[arg-type]
            elif kind == "pop_scope":
                self._pop_scope()
            elif kind == "push_alias":
                self.alias_stack.append((self.reads, self.atomics))
                self.reads, self.atomics = set(), set()
            elif kind == "pop_alias":
                self.reads, self.atomics = self.alias_stack.pop()
            elif kind == "loop_var":
                self.bind(item[1], item[2])  # type: ignore[arg-type]

    def _child(self, node: Node, path: str, stack: list[tuple[object, ...]], visit: Visit) -> None:
        where = Where(path, self.node_count)
        self._check_limits(where)
        visit(self, node, where)
        depth = self.frame.depth + 1
        divergent = self.frame.divergent
        if isinstance(node, If):
            branch_divergent = divergent or not self.last_uniform
            stack.append(("post",))
            _push_sequence(stack, f"{path}.otherwise", node.otherwise, branch_divergent, depth)
            _push_sequence(stack, f"{path}.then", node.then, branch_divergent, depth)
        elif isinstance(node, Loop):
            bounds_uniform = self.last_uniform
            stack.append(("post",))
            var = Binding(U32, True, False, bounds_uniform and not divergent)
            _push_sequence(stack, f"{path}.body", node.body, divergent or not bounds_uniform,
                           depth, ("loop_var", node.var, var))
        elif isinstance(node, Block):
            _push_sequence(stack, f"{path}.nodes", node.nodes, divergent, depth)
        elif isinstance(node, Region):
            _push_sequence(stack, f"{path}.body", node.body, divergent, depth)

    # Set by the If/Loop rules: whether the condition / both bounds are uniform.
    last_uniform: bool = True

    def _check_limits(self, where: Where) -> None:
        self.node_count += 1
        depth = self.frame.depth
        if self.node_count > MAX_NODE_COUNT and not self.count_reported:
            self.count_reported = True
            self.sink.error("V019", LIMITS, where, f"program node count exceeds limit "
                            f"{MAX_NODE_COUNT}", "split the program into smaller kernels or run "
                            "an optimization pass before lowering.")
        if depth > MAX_NESTING_DEPTH and not self.depth_reported:
            self.depth_reported = True
            self.sink.error("V018", LIMITS, where, f"program nesting depth {depth} exceeds max "
                            f"{MAX_NESTING_DEPTH}", "flatten nested If/Loop/Block structures or "
                            "split the program before lowering.")

    def _pop_scope(self) -> None:
        frame = self.frames.pop()
        for name, old in reversed(frame.log):
            if old is None:
                self.scope.pop(name, None)
            else:
                self.scope[name] = old
        for i, node in enumerate(frame.nodes):
            if isinstance(node, Return):
                if i != len(frame.nodes) - 1:
                    self.sink.error("V112", NODE, Where(f"{frame.path}[{i}]"), "unreachable "
                                    "statements after `return`", "remove statements after "
                                    "`return` or reorder them.")
                break

    def report_self_exclusive(self) -> None:
        """V115, after the walk, sorted by generator (reference order)."""
        for base in sorted(self.self_exclusive):
            paths = self.self_exclusive[base]
            if len(paths) > 1:
                self.sink.error("V115", COMPOSITION, Where(paths[1]), f"region `{base}` is marked "
                                "non-composable with itself but appears multiple times in one "
                                "fused program", "split the parser into separate dispatches, or "
                                "give each instance distinct scratch storage before fusion.")


def _push_sequence(stack: list[tuple[object, ...]], path: str, nodes: tuple[Node, ...],
                   divergent: bool, depth: int, pre: tuple[object, ...] | None = None) -> None:
    """Push the frames that open, walk and close one nested sequence."""
    stack.append(("pop_scope",))
    stack.append(("pop_alias",))
    stack.extend(("child", n, f"{path}[{i}]") for i, n in reversed(list(enumerate(nodes))))
    if pre is not None:
        stack.append(pre)
    stack.append(("push_alias",))
    stack.append(("push_scope", Frame(path, tuple(nodes), divergent, depth)))
