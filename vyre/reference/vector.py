"""Vectorized fast path: run all lanes of a chunk of workgroups as NumPy arrays.

Used only where it cannot change results: no atomics, barriers, subgroups, workgroup memory
or async copies, and no buffer that is both loaded and stored. A store conflict between two
lanes, a runtime error or an unsupported op aborts it so the scalar interpreter reruns.

The array versions of the op semantics mirror the scalar rules bit for bit; anything without
an exact array form raises :class:`Unvectorizable`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from vyre import ir
from vyre.ir import BinOp, Scalar, UnOp
from vyre.reference import semantics as sem
from vyre.reference.memory import Buffer
from vyre.reference.prepare import walk_exprs, walk_nodes
from vyre.reference.semantics import BOOL, F32, I32, U32, StepLimitExceeded, canonical

# -- array op semantics -------------------------------------------------------------------


VValue = tuple  # (tag, ndarray): uint32 for u32, int32 for i32, float32 for f32, bool for bool
_M = np.uint64(0xFFFFFFFF)
_MIN_NORMAL = np.float32(2.0 ** -126)
_DTYPES = {U32: np.uint32, I32: np.int32, F32: np.float32, BOOL: np.bool_}
_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint32)


class Unvectorizable(Exception):  # noqa: N818 - a control-flow signal, never shown to users
    """The fast path cannot reproduce this operation exactly; use the scalar interpreter."""


def canon(x: np.ndarray) -> np.ndarray:
    """Vector ``canonical``: subnormals flush to signed zero (NaNs are canonical on store)."""
    sub = (np.abs(x) < _MIN_NORMAL) & (x != 0)
    if sub.any():
        x = np.where(sub, np.copysign(np.float32(0), x), x).astype(np.float32)
    return x


def truthy(v: VValue) -> np.ndarray:
    """Vector truthiness (f32: != 0, NaN true)."""
    tag, arr = v
    if tag == BOOL:
        return arr
    return arr != 0


def _u32_binop(op: BinOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.uint64), b.astype(np.uint64)
    s = b & np.uint32(31)
    table: dict[BinOp, Callable[[], np.ndarray]] = {
        BinOp.ADD: lambda: a + b, BinOp.WRAPPING_ADD: lambda: a + b,
        BinOp.SUB: lambda: a - b, BinOp.WRAPPING_SUB: lambda: a - b,
        BinOp.MUL: lambda: ((a64 * b64) & _M).astype(np.uint32),
        BinOp.DIV: lambda: np.where(b == 0, np.uint32(0xFFFFFFFF), a // np.maximum(b, 1)),
        BinOp.MOD: lambda: np.where(b == 0, np.uint32(0), a % np.maximum(b, 1)),
        BinOp.BIT_AND: lambda: a & b, BinOp.BIT_OR: lambda: a | b, BinOp.BIT_XOR: lambda: a ^ b,
        BinOp.SHL: lambda: a << s, BinOp.SHR: lambda: a >> s,
        BinOp.ROTATE_LEFT: lambda: (a << s) | (a >> ((np.uint32(32) - s) & np.uint32(31))),
        BinOp.ROTATE_RIGHT: lambda: (a >> s) | (a << ((np.uint32(32) - s) & np.uint32(31))),
        BinOp.MIN: lambda: np.minimum(a, b), BinOp.MAX: lambda: np.maximum(a, b),
        BinOp.ABS_DIFF: lambda: np.where(a > b, a - b, b - a),
        BinOp.SATURATING_ADD: lambda: np.minimum(a64 + b64, _M).astype(np.uint32),
        BinOp.SATURATING_SUB: lambda: np.where(a > b, a - b, np.uint32(0)),
        BinOp.SATURATING_MUL: lambda: np.minimum(a64 * b64, _M).astype(np.uint32),
        BinOp.MUL_HIGH: lambda: ((a64 * b64) >> np.uint64(32)).astype(np.uint32),
    }
    fn = table.get(op)
    if fn is None:
        raise Unvectorizable(op)
    return fn().astype(np.uint32)


def _i32_binop(op: BinOp, a: np.ndarray, b: np.ndarray) -> VValue:
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if op in (BinOp.DIV, BinOp.MOD):
        if ((b64 == 0) | ((a64 == -(2 ** 31)) & (b64 == -1))).any():
            raise Unvectorizable("i32 division error")  # the scalar path raises it exactly
        mag = np.abs(a64) // np.abs(b64) if op == BinOp.DIV else np.abs(a64) % np.abs(b64)
        sign = np.sign(a64) * np.sign(b64) if op == BinOp.DIV else np.sign(a64)
        return (I32, (sign * mag).astype(np.int32))
    table: dict[BinOp, Callable[[], np.ndarray]] = {
        BinOp.ADD: lambda: a64 + b64, BinOp.WRAPPING_ADD: lambda: a64 + b64,
        BinOp.SUB: lambda: a64 - b64, BinOp.WRAPPING_SUB: lambda: a64 - b64,
        BinOp.MUL: lambda: a64 * b64, BinOp.BIT_AND: lambda: a64 & b64,
        BinOp.BIT_OR: lambda: a64 | b64, BinOp.BIT_XOR: lambda: a64 ^ b64,
        BinOp.MIN: lambda: np.minimum(a64, b64), BinOp.MAX: lambda: np.maximum(a64, b64),
    }
    if op == BinOp.ABS_DIFF:
        return (U32, np.abs(a64 - b64).astype(np.uint32))
    fn = table.get(op)
    if fn is None:
        raise Unvectorizable(op)
    return (I32, fn().astype(np.uint64).astype(np.uint32).view(np.int32))


def _f32_binop(op: BinOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if op in (BinOp.MIN, BinOp.MAX):
        pick_b = (b < a) if op == BinOp.MIN else (b > a)
        res = np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.where(pick_b, b, a)))
        return canon(res.astype(np.float32))
    fn = {BinOp.ADD: np.add, BinOp.SUB: np.subtract, BinOp.MUL: np.multiply,
          BinOp.DIV: np.divide}.get(op)
    if fn is None:
        raise Unvectorizable(op)
    return canon(fn(a, b).astype(np.float32))


_CMP = {BinOp.EQ: np.equal, BinOp.NE: np.not_equal, BinOp.LT: np.less, BinOp.GT: np.greater,
        BinOp.LE: np.less_equal, BinOp.GE: np.greater_equal}


def binop(op: BinOp, left: VValue, right: VValue) -> VValue:
    """Vector ``eval_binop`` (same dynamic types required, else Unvectorizable)."""
    tag = left[0]
    if tag != right[0] or not isinstance(op, BinOp):
        raise Unvectorizable("operand types")
    a, b = left[1], right[1]
    if tag == F32:
        a, b = canon(a), canon(b)
    cmp = _CMP.get(op)
    if cmp is not None:
        if tag == BOOL and op not in (BinOp.EQ, BinOp.NE):
            raise Unvectorizable(op)
        return (BOOL, cmp(a, b))
    if op in (BinOp.AND, BinOp.OR) and tag != F32:
        x, y = (a, b) if tag == BOOL else (a != 0, b != 0)
        return (BOOL, (x & y) if op == BinOp.AND else (x | y))
    if tag == U32:
        return (U32, _u32_binop(op, a, b))
    if tag == I32:
        return _i32_binop(op, a, b)
    if tag == F32:
        return (F32, _f32_binop(op, a, b))
    raise Unvectorizable(op)


def _bit_length(x: np.ndarray) -> np.ndarray:
    _, exp = np.frexp(x.astype(np.float64))  # exact for 32-bit integers
    return np.where(x == 0, 0, exp).astype(np.uint32)


def _int_unop(op: UnOp, tag: int, x: np.ndarray) -> VValue:
    raw = x.view(np.uint32) if tag == I32 else x
    out_same: dict[UnOp, Callable[[], np.ndarray]] = {
        UnOp.BIT_NOT: lambda: ~raw,
        UnOp.POPCOUNT: lambda: np.bitwise_count(raw).astype(np.uint32),
        UnOp.CLZ: lambda: np.uint32(32) - _bit_length(raw),
        UnOp.CTZ: lambda: np.where(raw == 0, np.uint32(32),
                                   _bit_length(raw & (~raw + np.uint32(1))) - np.uint32(1)),
        UnOp.REVERSE_BITS: lambda: ((_REV8[raw & 0xFF] << 24) | (_REV8[(raw >> 8) & 0xFF] << 16)
                                    | (_REV8[(raw >> 16) & 0xFF] << 8) | _REV8[raw >> 24]),
        UnOp.NEGATE: lambda: np.uint32(0) - raw,
    }
    if op == UnOp.LOGICAL_NOT:
        return (BOOL, raw == 0)
    unpack = {UnOp.UNPACK4_LOW: (0, 0xF), UnOp.UNPACK4_HIGH: (4, 0xF),
              UnOp.UNPACK8_LOW: (0, 0xFF), UnOp.UNPACK8_HIGH: (24, 0xFF)}.get(op)
    if unpack is not None:
        return (U32, (raw >> np.uint32(unpack[0])) & np.uint32(unpack[1]))
    fn = out_same.get(op)
    if fn is None:
        raise Unvectorizable(op)
    res = fn().astype(np.uint32)
    return (tag, res.view(np.int32) if tag == I32 else res)


def _round_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.float32(1), x), t)


_F32_UNOPS: dict[UnOp, Callable[[np.ndarray], np.ndarray]] = {
    UnOp.NEGATE: np.negative, UnOp.ABS: np.abs, UnOp.SQRT: np.sqrt, UnOp.FLOOR: np.floor,
    UnOp.CEIL: np.ceil, UnOp.TRUNC: np.trunc, UnOp.ROUND: _round_away,
    UnOp.SIGN: lambda x: np.where(np.isnan(x), x, np.sign(x) + np.float32(0)),
    UnOp.RECIPROCAL: lambda x: np.float32(1) / x,
    UnOp.INVERSE_SQRT: lambda x: np.float32(1) / np.sqrt(x),
}


def unop(op: UnOp, v: VValue) -> VValue:
    """Vector ``eval_unop``; transcendentals are left to the scalar path."""
    tag, x = v
    if not isinstance(op, UnOp):
        raise Unvectorizable(op)
    if tag in (U32, I32):
        return _int_unop(op, tag, x)
    if tag == BOOL and op == UnOp.LOGICAL_NOT:
        return (BOOL, ~x)
    if tag == F32:
        x = canon(x)
        pred = {UnOp.IS_NAN: np.isnan, UnOp.IS_INF: np.isinf, UnOp.IS_FINITE: np.isfinite}
        if op in pred:
            return (BOOL, pred[op](x))
        fn = _F32_UNOPS.get(op)
        if fn is not None:
            return (F32, canon(fn(x).astype(np.float32)))
    raise Unvectorizable(op)


def _f32_to_int(x: np.ndarray, lo: float, hi: float, dtype: type) -> np.ndarray:
    clipped = np.clip(np.nan_to_num(x.astype(np.float64), nan=0.0), lo, hi)
    return np.trunc(clipped).astype(dtype)


def cast(target: object, v: VValue) -> VValue:
    """Vector ``cast_value`` for the u32/i32/f32/bool corner of the cast table."""
    tag, x = v
    if target == Scalar.BOOL:
        return (BOOL, truthy(v))
    if target == Scalar.U32:
        if tag == F32:
            return (U32, _f32_to_int(x, 0.0, 4294967295.0, np.uint32))
        return (U32, x.astype(np.uint32) if tag == BOOL else x.view(np.uint32))
    if target == Scalar.I32:
        if tag == F32:
            return (I32, _f32_to_int(x, -2147483648.0, 2147483647.0, np.int32))
        return (I32, x.astype(np.int32) if tag == BOOL else x.view(np.int32))
    if target == Scalar.F32:
        if tag == F32:
            return v
        return (F32, canon(x.astype(np.float64).astype(np.float32)))
    raise Unvectorizable(target)


def full(tag: int, value: object, n: int) -> VValue:
    """A broadcast literal."""
    return (tag, np.full(n, value, dtype=_DTYPES[tag]))


# -- the vectorized run -----------------------------------------------------------------------


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

    def __init__(self, program: ir.Program, storage: dict[str, Buffer], max_steps: int,
                 deadline: float = math.inf) -> None:
        self.program = program
        self.storage = storage
        self.max_steps = max_steps
        self.deadline = deadline
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
        sem.check_deadline(self.deadline)  # charged once per statement and chunk: cheap enough

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
        cond = truthy(self.eval(node.cond, act))
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
        return (tag, canon(out) if tag == F32 else out)

    def _select(self, e: ir.Select, act: np.ndarray) -> tuple:
        cond = truthy(self.eval(e.cond, act))
        t, f = self.eval(e.true_val, act), self.eval(e.false_val, act)
        if t[0] != f[0]:
            raise _Abort
        return (t[0], np.where(cond, t[1], f[1]).astype(t[1].dtype))


def _encode(element: object, tag: int, arr: np.ndarray) -> np.ndarray:
    if element == ir.Scalar.F32:
        if tag != F32:
            raise _Abort
        out = canon(arr.astype(np.float32))
        return np.where(np.isnan(out), np.float32(np.nan), out)  # numpy NaN is 0x7FC00000
    if tag == F32:
        raise _Abort
    if tag == BOOL:
        return arr.astype(np.uint32)
    return arr.view(np.int32) if element == ir.Scalar.I32 else arr.view(np.uint32)


def _lit(tag: int, get: Callable) -> Callable:
    return lambda run, e, act: full(tag, get(e), len(act))


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
    ir.BufLen: lambda run, e, act: full(U32, run.storage[e.buffer].length, len(act)),
    ir.InvocationId: lambda run, e, act: (U32, run.ids[ir.InvocationId][e.axis][act]),
    ir.WorkgroupId: lambda run, e, act: (U32, run.ids[ir.WorkgroupId][e.axis][act]),
    ir.LocalId: lambda run, e, act: (U32, run.ids[ir.LocalId][e.axis][act]),
    ir.Binary: lambda run, e, act: binop(e.op, run.eval(e.left, act), run.eval(e.right, act)),
    ir.Unary: lambda run, e, act: unop(e.op, run.eval(e.operand, act)),
    ir.Select: VectorRun._select,
    ir.Cast: lambda run, e, act: cast(e.target, run.eval(e.value, act)),
}
