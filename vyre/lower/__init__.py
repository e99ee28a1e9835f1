"""vyre.lower: a vyre Program -> a neutral KernelDef in the dialect layer's portable subset.

``lower(program)`` gives the body once; CUDA C, HIP C, OpenCL C, GLSL and host C all come
from the shared renderers. Semantics are the reference interpreter's, never the target's.
:mod:`vyre.lower.ops` holds the lowering state and operators, :mod:`vyre.lower.body` the
expression and statement lowering built on them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hurray_gpu.dialect.host_groups import MAX_GROUP_BYTES
from hurray_gpu.dialect.kernel import KernelDef, Param, buf, scalar
from vyre import ir
from vyre.lower.body import (
    ELEMENT_KINDS,
    PARAM_DTYPES,
    SCRATCH,
    lower_nodes,
    nonuniform_locals,
    zero_fill,
)
from vyre.lower.ops import Ctx, TrapError, UnsupportedOpError, sanitize, unsupported
from vyre.lower.wide import WIDE
from vyre.reference.memory import is_backend_allocated
from vyre.reference.prepare import prepare, walk_exprs
from vyre.reference.scalar import split_grid_sync
from vyre.validate_nodes import iter_nodes
from vyre.wire.fingerprint import fingerprint

__all__ = ["PASS_PARAM", "SHARED_BYTES", "TRAP_PARAM", "BufferSlot", "Lowered", "TrapError",
           "UnsupportedOpError", "lower"]

TRAP_PARAM = "trapflag"
# The u32 scalar bounding the loop passes of one invocation (``"loop_passes"`` feature).
PASS_PARAM = "passmax"
_SUBGROUP = (ir.SubgroupReduce, ir.SubgroupShuffle, ir.SubgroupBallot)


@dataclass(frozen=True)
class BufferSlot:
    """One storage buffer of the lowered kernel.

    Attributes:
        decl: the vyre declaration.
        param: the kernel buffer parameter name.
        length: the kernel scalar holding its element count (BufLen and every guard).
    """

    decl: ir.BufferDecl
    param: str
    length: str


@dataclass(frozen=True)
class Lowered:
    """A lowered program: the kernel plus what a launcher needs to bind it.

    Attributes:
        program: the prepared program (re-wrapped, collectives lowered, calls inlined).
        kernels: the neutral kernels, one per GridSync segment, launched in order on the
            same buffers; parameters are the buffers in declaration order, then the trap
            flag when ``uses_trap``, then one u32 length scalar per buffer, then
            :data:`PASS_PARAM` with the ``"loop_passes"`` feature.
        slots: the storage buffers, in declaration order.
        uses_trap: the body may set the trap flags (i32 division, Trap; a loop cut short).
        features: what the body uses (``"fma"``, ``"atomics"``, ``"barrier"``, ``"subgroups"``,
            ``"grid_sync"``, ``"return"``, ``"loop_passes"``); launchers refuse dialects
            that cannot give one.
        shared_bytes: the work-group memory the kernels declare (launchers compare it with
            their dialect's :data:`SHARED_BYTES`).
    """

    program: ir.Program
    kernels: tuple[KernelDef, ...]
    slots: tuple[BufferSlot, ...]
    uses_trap: bool
    features: frozenset[str]
    shared_bytes: int = 0

    @property
    def kernel(self) -> KernelDef:
        """The kernel of a program without GridSync (one launch).

        Raises:
            UnsupportedOpError: the program has several GridSync segments (use ``kernels``).
        """
        if len(self.kernels) != 1:
            raise unsupported(f"the program has {len(self.kernels)} GridSync segments",
                              "launch every kernel of Lowered.kernels in order.")
        return self.kernels[0]


# Work-group memory each dialect's API guarantees a kernel: Vulkan 16 KiB, OpenCL 1.2 32 KiB,
# CUDA 48 KiB of static shared memory, HIP 64 KiB of LDS; host C keeps a group's arrays on its
# thread's stack (with the values kept per item, at most MAX_GROUP_BYTES). Launchers refuse a
# kernel over its dialect's; the lowering refuses one over every dialect's.
SHARED_BYTES = {"glsl": 16384, "opencl": 32768, "cuda": 49152, "hip": 65536,
                "c": MAX_GROUP_BYTES}
MAX_SHARED_BYTES = max(SHARED_BYTES.values())


def _check_element(decl: ir.BufferDecl) -> str:
    kind = ELEMENT_KINDS.get(decl.element)
    if kind is None:
        raise unsupported(f"buffer {decl.name!r} of element {decl.element!r} (8, 16, 32 and "
                          "64-bit integers, f8, f16, bf16, f32, f64, bool and vec2/vec4<u32> "
                          "buffers are lowered; packed 4-bit ones are not: the reference "
                          "indexes their bytes while BufLen counts nibbles)",
                          "store the codes one per byte (u8).")
    return kind


def _shared(program: ir.Program) -> dict[str, tuple[str, int]]:
    """Workgroup buffers: vyre name -> (array name, word count)."""
    out = {}
    for index, decl in enumerate(program.buffers):
        if decl.access == ir.BufferAccess.WORKGROUP:
            words = WIDE.get(_check_element(decl), 1)
            out[decl.name] = (f"s{index}_{sanitize(decl.name, 12)}", decl.count * words)
    if 4 * sum(count for _, count in out.values()) > MAX_SHARED_BYTES:
        raise unsupported(f"workgroup buffers of more than {MAX_SHARED_BYTES} bytes (no "
                          "device takes more)", "use smaller workgroup buffers.")
    return out


def _slots(program: ir.Program) -> tuple[BufferSlot, ...]:
    slots = []
    for index, decl in enumerate(program.buffers):
        if decl.access == ir.BufferAccess.WORKGROUP:
            continue
        _check_element(decl)
        stem = f"b{index}_{sanitize(decl.name, 12)}"
        slots.append(BufferSlot(decl, stem, f"n{index}"))
    return tuple(slots)


def _writable(decl: ir.BufferDecl) -> bool:
    return decl.access in (ir.BufferAccess.READ_WRITE, ir.BufferAccess.WRITE_ONLY) or \
        is_backend_allocated(decl)


def lower(program: ir.Program, *, callees: Mapping[str, ir.Program] | None = None,
          validate: bool = True, loop_budget: int | None = None) -> Lowered:
    """Lower ``program`` to a kernel in the portable subset.

    Args:
        program: the vyre program.
        callees: op id -> callee program, inlined as the reference does.
        validate: run the reference's validation first (as the reference always does).
        loop_budget: the target device's ``loop_budget``. Every loop tests whether it was
            ended early and sets trap flag word 1 (:class:`LoopBudgetError`): by the device
            at that budget, or, without one (None), by the kernel's own bound: one
            invocation's loop passes stop at the ``passmax`` scalar.

    Returns:
        The lowered kernel and its binding table.

    Raises:
        vyre.ValidationError: the program is invalid.
        UnsupportedOpError: a construct cannot be lowered with the reference's semantics
            (the message names it and says how to proceed).
    """
    old_limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(old_limit, 20_000))
        return _lower(program, callees, validate, loop_budget)
    except RecursionError:
        raise unsupported("expression or statement nesting is too deep to lower",
                          "flatten the expression with Let bindings.") from None
    finally:
        sys.setrecursionlimit(old_limit)


def _lower(program: ir.Program, callees: Mapping[str, ir.Program] | None,
           validate: bool, loop_budget: int | None) -> Lowered:
    prepared = prepare(program, check=validate, callees=callees)
    prog = prepared.program
    slots = _slots(prog)
    shared = _shared(prog)
    # Name lookup tries storage buffers first, as the reference's does.
    table = {d.name: (shared[d.name][0], f"{d.count}u", ELEMENT_KINDS[d.element], True)
             for d in prog.buffers if d.name in shared}
    table.update({s.decl.name: (s.param, s.length, ELEMENT_KINDS[s.decl.element],
                                _writable(s.decl)) for s in slots})
    # GridSync splits the body into segments, one launch each (fresh locals and workgroup
    # memory per segment, as the reference runs them).
    bodies, needs_trap, features = [], False, set()
    arrays = list(shared.values())
    if any(isinstance(e, _SUBGROUP) for e in walk_exprs(prog.entry)):
        wx, wy, wz = prog.workgroup_size
        arrays.append((SCRATCH, wx * wy * wz))
        if 4 * sum(count for _, count in arrays) > MAX_SHARED_BYTES:
            raise unsupported("workgroup memory (with the subgroup scratch) over "
                              f"{MAX_SHARED_BYTES} bytes", "use a smaller workgroup.")
    nonuniform = nonuniform_locals(prog)
    read_only = {d.name for d in prog.buffers
                 if d.access in (ir.BufferAccess.READ_ONLY, ir.BufferAccess.UNIFORM)}
    synchronizing = any(isinstance(n, ir.Barrier) for node in prog.entry
                        for n in iter_nodes(node)) or any(
        isinstance(e, _SUBGROUP) for e in walk_exprs(prog.entry))
    for segment in split_grid_sync(prog.entry):
        ctx = Ctx(table, tuple(prog.workgroup_size), nonuniform=nonuniform,  # type: ignore
                  read_only=read_only, pass_budget=loop_budget is None,
                  synchronizing=synchronizing)
        if shared:
            zero_fill(ctx, list(shared.values()))
        lower_nodes(ctx, segment)
        ctx.lines[:0] = [f"u32 {name} = 0u;" for name in sorted(ctx.counters)]
        if {"barrier", "return"} <= ctx.features:
            raise unsupported("Return in a program with barriers: a returned lane never "
                              "reaches the barrier on a device (the reference releases "
                              "without it)", "guard the work with If instead of returning.")
        bodies.append("\n".join(ctx.lines) if ctx.lines else "return;")
        needs_trap = needs_trap or ctx.needs_trap
        features |= ctx.features | ({"loop_passes"} if ctx.counters else set())
    if len(bodies) > 1:
        features.add("grid_sync")
    params: list[Param] = [buf(s.param, PARAM_DTYPES.get(ELEMENT_KINDS[s.decl.element], "u32"),
                               "rw" if _writable(s.decl) else "r") for s in slots]
    if needs_trap:
        params.append(buf(TRAP_PARAM, "u32", "rw"))
    params += [scalar(s.length, "u32") for s in slots]
    if "loop_passes" in features:
        params.append(scalar(PASS_PARAM, "u32"))
    stem = "vyre_" + fingerprint(prog).hex()[:16]
    kernels = tuple(
        KernelDef(name=stem if k == 0 else f"{stem}_s{k}", params=tuple(params), body=body,
                  grid=_no_grid, extents=_extents(slots), reference=_no_reference,
                  local_size=tuple(prog.workgroup_size),  # type: ignore[arg-type]
                  doc="a lowered vyre program", tags=("vyre",), shared=tuple(arrays))
        for k, body in enumerate(bodies))
    return Lowered(prog, kernels, slots, needs_trap, frozenset(features),
                   4 * sum(count for _, count in arrays))


def _extents(slots: tuple[BufferSlot, ...]) -> Any:
    def extents(scalars: Mapping[str, Any]) -> dict[str, int]:
        # In words for the 64-bit and vector elements, which the kernel reads as u32 words.
        return {s.param: int(scalars.get(s.length, 0)) * words[s.param] for s in slots}
    words = {s.param: WIDE.get(ELEMENT_KINDS[s.decl.element], 1) for s in slots}
    return extents


def _no_grid(scalars: Mapping[str, Any]) -> tuple[int, ...]:
    raise unsupported("a lowered vyre kernel has no default grid", "pass global_size.")


def _no_reference(arrays: dict[str, Any]) -> None:
    raise unsupported("a lowered vyre kernel's reference is vyre.reference.run",
                      "call vyre.reference.run(program, inputs, grid=...).")
