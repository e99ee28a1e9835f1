"""Vectorized fast path: run all lanes of a chunk of workgroups as NumPy arrays.

Used only where it cannot change results: no atomics, barriers, subgroups, workgroup memory
or async copies, and no buffer that is both loaded and stored. A store conflict between two
lanes, a runtime error or an unsupported op aborts it so the scalar interpreter reruns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vyre import ir
from vyre.reference import vector_ops as vo
from vyre.reference.errors import StepLimitExceeded
from vyre.reference.memory import Buffer
from vyre.reference.prepare import walk_exprs, walk_nodes
from vyre.reference.values import BOOL, F32, I32, U32, canonical
from vyre.reference.vector_ops import Unvectorizable

_NODES = (ir.Let, ir.Assign, ir.Store, ir.If, ir.Loop, ir.Block, ir.Region, ir.Return)
_EXPRS = (ir.LitU32, ir.LitI32, ir.LitBool, ir.LitF32, ir.Var, ir.Load, ir.BufLen,
          ir.InvocationId, ir.WorkgroupId, ir.LocalId, ir.Binary, ir.Unary, ir.Select, ir.Cast)
_ELEMENTS: dict[Any, tuple[int, Any]] = {
    ir.Scalar.U32: (U32, np.uint32), ir.Scalar.BOOL: (U32, np.uint32),
    ir.Scalar.I32: (I32, np.int32), ir.Scalar.F32: (F32, np.float32),
}
CHUNK_LANES = 1 << 16


def eligible(program: ir.Program) -> bool:
    """Whether the fast path provably gives the scalar interpreter's results for ``program``."""
    if any(d.access == ir.BufferAccess.WORKGROUP for d in program.buffers):
        return False
    elements = {d.name: d.element for d in program.buffers}
    stored: set[str] = set()
    for node in walk_nodes(program.entry):
        if not isinstance(node, _NODES):
            return False
        if isinstance(node, ir.Store):
            stored.add(node.buffer)
    loaded: set[str] = set()
    for expr in walk_exprs(program.entry):
        if not isinstance(expr, _EXPRS):
            return False
        if isinstance(expr, ir.Load):
            loaded.add(expr.buffer)
    used = stored | loaded
    return not (stored & loaded) and all(elements.get(n) in _ELEMENTS for n in used)


class _Abort(Exception):  # noqa: N818 - internal control flow
    pass


class VectorRun:
    """Executes one eligible program over a grid, chunk of workgroups by chunk.

    Attributes:
        charged: lane-statements executed (never more than the scalar step count).
    """

    def __init__(self, program: ir.Program, storage: dict[str, Buffer], max_steps: int) -> None:
        self.program = program
        self.storage = storage
        self.max_steps = max_steps
        self.charged = 0
        self.owner: dict[str, np.ndarray] = {}
        self.ids: dict[type, np.ndarray] = {}
        self.vars: dict[str, tuple] = {}
        self.base = 0

    def run(self, grid: tuple[int, int, int]) -> bool:
        """Run the whole grid; False when the scalar interpreter must run instead.

        Raises:
            StepLimitExceeded: the budget ran out (the scalar path would exceed it too).
        """
        wx, wy, wz = self.program.workgroup_size
        per_wg = wx * wy * wz
        gx, gy, gz = grid
        total = gx * gy * gz
        if per_wg > CHUNK_LANES or total * per_wg > 0xFFFFFFFF:
            return False
        self.charge(total * per_wg)
        wgs_per_chunk = max(1, CHUNK_LANES // per_wg)
        try:
            with np.errstate(all="ignore"):
                for first in range(0, total, wgs_per_chunk):
                    self._chunk(np.arange(first, min(total, first + wgs_per_chunk)), grid)
        except (_Abort, Unvectorizable, ArithmeticError, ValueError, IndexError, KeyError,
                TypeError):
            return False  # the scalar interpreter reruns from the untouched inputs
        return True

    def charge(self, amount: int) -> None:
        """Spend budget; raising here is safe because the scalar path spends at least as much."""
        self.charged += amount
        if self.charged > self.max_steps:
            raise StepLimitExceeded(f"the dispatch exceeded max_steps={self.max_steps}.")

    def _chunk(self, wg_linear: np.ndarray, grid: tuple[int, int, int]) -> None:
        wx, wy, wz = self.program.workgroup_size
        gx, gy, _ = grid
        lli = np.arange(wx * wy * wz, dtype=np.int64)
        lid = (lli % wx, (lli // wx) % wy, lli // (wx * wy))
        wgid = (wg_linear % gx, (wg_linear // gx) % gy, wg_linear // (gx * gy))
        size = (wx, wy, wz)
        ids: dict[type, list[np.ndarray]] = {ir.LocalId: [], ir.WorkgroupId: [],
                                              ir.InvocationId: []}
        for axis in range(3):
            w = np.repeat(wgid[axis], len(lli))
            loc = np.tile(lid[axis], len(wg_linear))
            ids[ir.LocalId].append(loc.astype(np.uint32))
            ids[ir.WorkgroupId].append(w.astype(np.uint32))
            ids[ir.InvocationId].append((w * size[axis] + loc).astype(np.uint32))
        self.ids = ids  # type: ignore[assignment]
        self.base = int(wg_linear[0]) * len(lli)
        self.vars = {}
        lanes = np.arange(len(wg_linear) * len(lli), dtype=np.int64)
        self._block(self.program.entry, lanes)

    # -- statements ------------------------------------------------------------------------

    def _block(self, nodes: tuple[ir.Node, ...], act: np.ndarray) -> np.ndarray:
        for node in nodes:
            if not len(act):
                return act
            self.charge(len(act))
            act = _STMTS[type(node)](self, node, act)
        return act

    def _bind(self, name: str, value: tuple, act: np.ndarray) -> None:
        tag, arr = value
        slot = self.vars.get(name)
        if slot is None or slot[0] != tag:
            n = len(self.ids[ir.LocalId][0])
            slot = (tag, np.zeros(n, dtype=arr.dtype))
            self.vars[name] = slot
        slot[1][act] = arr

    def _let(self, node: ir.Let, act: np.ndarray) -> np.ndarray:
        self._bind(node.name, self.eval(node.value, act), act)
        return act

    def _assign(self, node: ir.Assign, act: np.ndarray) -> np.ndarray:
        value = self.eval(node.value, act)
        if self.vars[node.name][0] != value[0]:
            raise _Abort
        self.vars[node.name][1][act] = value[1]
        return act

    def _store(self, node: ir.Store, act: np.ndarray) -> np.ndarray:
        idx = self._index(self.eval(node.index, act))
        tag, arr = self.eval(node.value, act)
        buf = self.storage[node.buffer]
        kind, dtype = _ELEMENTS[buf.decl.element]
        view = np.frombuffer(buf.data, dtype=dtype, count=buf.length)
        ok = idx < buf.length
        idx, arr, lanes = idx[ok], arr[ok], act[ok] + self.base
        if len(np.unique(idx)) != len(idx):
            raise _Abort  # two lanes store one element: the order matters
        owner = self.owner.setdefault(node.buffer, np.full(buf.length, -1, dtype=np.int64))
        prev = owner[idx]
        if ((prev != -1) & (prev != lanes)).any():
            raise _Abort
        owner[idx] = lanes
        view[idx] = _encode(buf.decl.element, tag, arr)
        return act

    def _if(self, node: ir.If, act: np.ndarray) -> np.ndarray:
        cond = vo.truthy(self.eval(node.cond, act))
        kept = [self._block(node.then, act[cond]), self._block(node.otherwise, act[~cond])]
        return np.sort(np.concatenate(kept))

    def _loop(self, node: ir.Loop, act: np.ndarray) -> np.ndarray:
        lo = self._index(self.eval(node.from_, act))
        hi = self._index(self.eval(node.to, act))
        cur = np.zeros(len(self.ids[ir.LocalId][0]), dtype=np.int64)
        stop = cur.copy()
        cur[act], stop[act] = lo, hi
        alive = act
        while True:
            running = alive[cur[alive] < stop[alive]]
            if not len(running):
                return alive
            self.charge(len(running))
            self._bind(node.var, (U32, cur[running].astype(np.uint32)), running)
            survivors = self._block(node.body, running)
            returned = np.setdiff1d(running, survivors, assume_unique=True)
            alive = np.setdiff1d(alive, returned, assume_unique=True)
            cur[survivors] += 1

    # -- expressions -----------------------------------------------------------------------

    def _index(self, value: tuple) -> np.ndarray:
        tag, arr = value
        if tag == U32:
            return arr.astype(np.int64)
        if tag == I32 and (arr >= 0).all():
            return arr.astype(np.int64)
        if tag == BOOL:
            return arr.astype(np.int64)
        raise _Abort  # not representable as u32: the scalar path raises the typed error

    def eval(self, expr: ir.Expr, act: np.ndarray) -> tuple:
        """Evaluate ``expr`` for the lanes ``act``."""
        return _EXPR_FNS[type(expr)](self, expr, act)

    def _load(self, e: ir.Load, act: np.ndarray) -> tuple:
        idx = self._index(self.eval(e.index, act))
        buf = self.storage[e.buffer]
        tag, dtype = _ELEMENTS[buf.decl.element]
        view = np.frombuffer(buf.data, dtype=dtype, count=buf.length)
        ok = idx < buf.length
        out = np.zeros(len(act), dtype=dtype)
        out[ok] = view[idx[ok]]
        return (tag, vo.canon(out) if tag == F32 else out)

    def _select(self, e: ir.Select, act: np.ndarray) -> tuple:
        cond = vo.truthy(self.eval(e.cond, act))
        t, f = self.eval(e.true_val, act), self.eval(e.false_val, act)
        if t[0] != f[0]:
            raise _Abort
        return (t[0], np.where(cond, t[1], f[1]).astype(t[1].dtype))


def _encode(element: object, tag: int, arr: np.ndarray) -> np.ndarray:
    if element == ir.Scalar.F32:
        if tag != F32:
            raise _Abort
        out = vo.canon(arr.astype(np.float32))
        return np.where(np.isnan(out), np.float32(np.nan), out)  # numpy NaN is 0x7FC00000
    if tag == F32:
        raise _Abort
    if tag == BOOL:
        return arr.astype(np.uint32)
    return arr.view(np.int32) if element == ir.Scalar.I32 else arr.view(np.uint32)


def _lit(tag: int, get: Callable) -> Callable:
    return lambda run, e, act: vo.full(tag, get(e), len(act))


_STMTS: dict[type, Callable] = {
    ir.Let: VectorRun._let, ir.Assign: VectorRun._assign, ir.Store: VectorRun._store,
    ir.If: VectorRun._if, ir.Loop: VectorRun._loop,
    ir.Block: lambda run, n, act: run._block(n.nodes, act),
    ir.Region: lambda run, n, act: run._block(n.body, act),
    ir.Return: lambda run, n, act: act[:0],
}
_EXPR_FNS: dict[type, Callable] = {
    ir.LitU32: _lit(U32, lambda e: e.value & 0xFFFFFFFF), ir.LitI32: _lit(I32, lambda e: e.value),
    ir.LitBool: _lit(BOOL, lambda e: bool(e.value)),
    ir.LitF32: _lit(F32, lambda e: canonical(e.value)),
    ir.Var: lambda run, e, act: (run.vars[e.name][0], run.vars[e.name][1][act]),
    ir.Load: VectorRun._load,
    ir.BufLen: lambda run, e, act: vo.full(U32, run.storage[e.buffer].length, len(act)),
    ir.InvocationId: lambda run, e, act: (U32, run.ids[ir.InvocationId][e.axis][act]),
    ir.WorkgroupId: lambda run, e, act: (U32, run.ids[ir.WorkgroupId][e.axis][act]),
    ir.LocalId: lambda run, e, act: (U32, run.ids[ir.LocalId][e.axis][act]),
    ir.Binary: lambda run, e, act: vo.binop(e.op, run.eval(e.left, act), run.eval(e.right, act)),
    ir.Unary: lambda run, e, act: vo.unop(e.op, run.eval(e.operand, act)),
    ir.Select: VectorRun._select,
    ir.Cast: lambda run, e, act: vo.cast(e.target, run.eval(e.value, act)),
}
