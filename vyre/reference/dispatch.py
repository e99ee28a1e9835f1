"""The dispatch loop: GridSync segments, workgroups in z/y/x order, lanes round-robin.

Barriers release when every live lane waits; Ifs holding a barrier must be uniform.
"""

from __future__ import annotations

from vyre import ir
from vyre.reference.errors import ReferenceExecutionError, StepLimitExceeded
from vyre.reference.exprs import Evaluator
from vyre.reference.lanes import Lane, LaneSnapshot
from vyre.reference.memory import Buffer, Memory
from vyre.reference.stepper import Stepper

_MASK32 = 0xFFFFFFFF


class Dispatch:
    """Runs one program over a grid.

    Attributes:
        steps: lane steps (plus lane creations and subgroup lane evaluations) so far.
        max_steps: the budget; exceeding it raises :class:`StepLimitExceeded`.
    """

    def __init__(self, program: ir.Program, memory: Memory, workgroup_decls: list[ir.BufferDecl],
                 *, max_steps: int, reverse_lanes: bool, uses_subgroups: bool) -> None:
        self.program = program
        self.memory = memory
        self.workgroup_decls = workgroup_decls
        self.max_steps = max_steps
        self.reverse_lanes = reverse_lanes
        self.uses_subgroups = uses_subgroups
        self.steps = 0
        self.stepper = Stepper()

    def charge(self, amount: int) -> None:
        """Spend ``amount`` of the step budget.

        Raises:
            StepLimitExceeded: the budget is exhausted.
        """
        self.steps += amount
        if self.steps > self.max_steps:
            raise StepLimitExceeded(
                f"the dispatch exceeded max_steps={self.max_steps} lane steps "
                "(an endless loop, or a very large grid).",
            )

    def run(self, segments: list[tuple[ir.Node, ...]], grid: tuple[int, int, int]) -> None:
        """Run every segment over the whole grid, in order.

        Raises:
            ReferenceExecutionError: a runtime error of the program.
            StepLimitExceeded: the step budget ran out.
        """
        gx, gy, gz = grid
        for segment in segments:
            for z in range(gz):
                for y in range(gy):
                    for x in range(gx):
                        self._run_workgroup(segment, (x, y, z))

    def _make_lanes(self, entry: tuple, wid: tuple[int, int, int]) -> list[Lane]:
        wx, wy, wz = self.program.workgroup_size
        self.charge(wx * wy * wz)
        base = (wid[0] * wx, wid[1] * wy, wid[2] * wz)
        if max(base[0] + wx, base[1] + wy, base[2] + wz) - 1 > _MASK32:
            raise ReferenceExecutionError(
                "workgroup id * workgroup size overflows the u32 global invocation id.",
                fix="reduce the grid or the workgroup size.",
            )
        lanes: list[Lane] = []
        for lz in range(wz):
            for ly in range(wy):
                for lx in range(wx):
                    gid = (base[0] + lx, base[1] + ly, base[2] + lz)
                    lanes.append(Lane(gid, wid, (lx, ly, lz), len(lanes), entry))
        return lanes

    def _run_workgroup(self, entry: tuple, wid: tuple[int, int, int]) -> None:
        self.memory.workgroup = {  # zero-filled for every workgroup (and every segment)
            d.name: Buffer(d, bytearray(d.count * (ir.size_bytes(d.element) or 0)))
            for d in self.workgroup_decls
        }
        lanes = self._make_lanes(entry, wid)
        order = lanes[::-1] if self.reverse_lanes else lanes
        step, memory, charge = self.stepper.step, self.memory, self.charge
        while True:
            live = [lane for lane in lanes if not lane.done]
            if not live:
                break
            snapshots = [LaneSnapshot(lane) for lane in lanes] if self.uses_subgroups else None
            ev = Evaluator(memory, snapshots, charge)
            progressed = False
            for lane in order:
                if lane.returned or lane.waiting or not lane.frames:
                    continue
                charge(1)
                step(lane, ev)
                progressed = True
            self._verify_uniform(lanes)
            if self._release_barrier(lanes):
                continue
            if not progressed and any(lane.waiting for lane in lanes if not lane.done):
                raise ReferenceExecutionError(
                    "not every live invocation reached the same barrier.",
                    fix="move Barrier to uniform control flow.",
                )
        for lane in lanes:
            if lane.pending_async:
                tag = next(iter(lane.pending_async))
                raise ReferenceExecutionError(
                    f"invocation {lane.gid} finished with async transfer `{tag}` still pending.",
                    fix="add AsyncWait for every AsyncLoad/AsyncStore tag.",
                )

    @staticmethod
    def _release_barrier(lanes: list[Lane]) -> bool:
        live = [lane for lane in lanes if not lane.done]
        if live and all(lane.waiting for lane in live):
            for lane in lanes:
                lane.waiting = False
            return True
        return False

    @staticmethod
    def _verify_uniform(lanes: list[Lane]) -> None:
        observed: dict[int, bool] = {}
        for lane in lanes:
            if lane.done or not lane.uniform_checks:
                continue
            conflict = lane.uniform_conflict
            for key, value in lane.uniform_checks.items():
                conflict = conflict or observed.setdefault(key, value) != value
                if conflict:
                    raise ReferenceExecutionError(
                        "Barrier appears inside an If whose condition differs across the "
                        "workgroup (or across iterations).",
                        fix="make the condition uniform or move Barrier outside the branch.",
                    )


def split_grid_sync(entry: tuple[ir.Node, ...]) -> list[tuple[ir.Node, ...]]:
    """Split the top-level body at GridSync barriers (Blocks/Regions holding one are flattened).

    Args:
        entry: the program's entry statements.

    Returns:
        The segments, in order (just ``[entry]`` when there is no GridSync).
    """
    if not any(_has_grid_sync(n) for n in entry):
        return [entry]
    segments: list[list[ir.Node]] = [[]]

    def walk(nodes: tuple[ir.Node, ...]) -> None:
        for node in nodes:
            if isinstance(node, ir.Barrier) and node.ordering == ir.MemoryOrdering.GRID_SYNC:
                segments.append([])
            elif isinstance(node, (ir.Block, ir.Region)) and _has_grid_sync(node):
                walk(node.nodes if isinstance(node, ir.Block) else node.body)
            else:
                segments[-1].append(node)

    walk(entry)
    return [tuple(s) for s in segments]


def _has_grid_sync(node: ir.Node) -> bool:
    if isinstance(node, ir.Barrier):
        return node.ordering == ir.MemoryOrdering.GRID_SYNC
    if isinstance(node, ir.Block):
        return any(_has_grid_sync(n) for n in node.nodes)
    if isinstance(node, ir.Region):
        return any(_has_grid_sync(n) for n in node.body)
    return False
