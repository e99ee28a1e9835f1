"""Layout conversion fused with dequantization: each dequant kernel's per-element formula,
reading its storage code at the layout's offset instead of the row-major index.

The dequant bodies are reused verbatim (kernel logic exists once); only ``CODE_LOAD`` is
preceded by the addressing snippet and reads at ``so``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from hurray_gpu.kernels.dequant import DEQUANT_KERNELS
from hurray_gpu.kernels.dequant_common import CODE_LOAD
from hurray_gpu.kernels.dialect.kernel import KernelDef, buf, scalar
from hurray_gpu.kernels.layout_common import HILBERT_ADDR, SoFn

__all__ = ["FUSED_KERNELS", "fused_kernel"]

# Row-major index i -> (x, y, z) for the addressing snippets; so is clamped into the span
# the host checked against the data buffer, so no code read leaves it whatever the tables say.
# The snippet runs in its own block: the dequant bodies declare x/y/z/q names of their own.
_PRE = """
    u32 so = 0u;
    {
        u32 f = i;
{ADDR}
        so = hs;
    }
    if (so >= {SPAN}) so = 0u;
"""
# Hilbert offsets are indices below n = 2**(hp*hr); sep offsets stay below the span in tt[2].
_SPAN = {"sep": "nspan", "hil": "n"}
_CODE_AT_SO = re.sub(r"\bi\b", "so", CODE_LOAD)


def _sep_so(a: dict[str, Any], f: np.ndarray) -> np.ndarray:
    tt = a["err"]
    nx, ny, last = max(int(tt[1]), 1), max(int(tt[2]), 1), int(a["ntt"]) - 1
    x, yz = f % nx, f // nx
    idx = [np.minimum(3 + x, last), np.minimum(3 + nx + yz % ny, last),
           np.minimum(3 + nx + ny + yz // ny, last)]
    total = tt[idx[0]].astype(np.uint64) + tt[idx[1]] + tt[idx[2]]
    return (total & 0xFFFFFFFF).astype(np.int64)


def _hil_so(a: dict[str, Any], f: np.ndarray) -> np.ndarray:
    from hurray_gpu.kernels.layout_common import ref_hilbert_so

    return ref_hilbert_so(f, int(a["hp"]), int(a["hr"]))


# Vulkan gives 32 push-constant words (the affine kernel alone takes 22) and one word per
# buffer: the sep tables ride in the err buffer after its flag word, as
# [flag | nx, ny | x entries | y entries | z entries] (ntt words); every index is clamped.
_SEP_ONE = """
        u32 nx = UMAX(LOAD(err, 1u), 1u);
        u32 ny = UMAX(LOAD(err, 2u), 1u);
        u32 x = f % nx;
        u32 yz = f / nx;
        u32 y = yz % ny;
        u32 z = yz / ny;
        u32 last = ntt - 1u;
        u32 so = LOAD(err, UMIN(3u + x, last)) + LOAD(err, UMIN(3u + nx + y, last))
                 + LOAD(err, UMIN(3u + nx + ny + z, last));
"""
_ADDR: dict[str, tuple[str, SoFn, tuple[Any, ...]]] = {
    "sep": (_SEP_ONE, _sep_so, (scalar("ntt"), scalar("nspan"))),
    "hil": (HILBERT_ADDR, _hil_so, (scalar("hp"), scalar("hr")))}


def _gathered(a: dict[str, Any], so_fn: SoFn) -> np.ndarray:
    """Row-major storage bytes: the codes the fused kernel reads, re-packed contiguously."""
    n, bits, doff = int(a["n"]), int(a["bits"]), int(a["doff"])
    span = int(a["nspan"]) if "nspan" in a else int(a["n"])
    so = so_fn(a, np.arange(n, dtype=np.int64))
    so = np.where(so < span, so, 0)
    raw = np.concatenate([np.asarray(a["data"], np.uint8), np.zeros(8, np.uint8)])
    if bits >= 8:
        width = bits // 8
        return raw[doff + so[:, None] * width + np.arange(width)].reshape(-1)
    bit = so * bits
    at = doff + (bit >> 3)
    pair = raw[at].astype(np.int64) | (raw[at + 1].astype(np.int64) << 8)
    codes = (pair >> (bit & 7)) & ((1 << bits) - 1)
    lanes = ((codes[:, None] >> np.arange(bits)) & 1).astype(np.uint8).reshape(-1)
    return np.packbits(lanes, bitorder="little")


def _reference(base: KernelDef, so_fn: SoFn) -> Any:
    def run(a: dict[str, Any]) -> None:
        if int(a["n"]) == 0:
            return
        moved = dict(a)
        moved["data"], moved["doff"] = _gathered(a, so_fn), 0
        base.reference(moved)
    return run


_LOOP = "for (; i < end; i++) {"


def _closing(text: str, start: int) -> int:
    """Index of the brace closing the block whose ``{`` is at ``start``."""
    depth = 0
    for pos in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[pos], 0)
        if depth == 0:
            return pos
    raise ValueError("unbalanced braces in a dequant body")


_FAST = re.compile(r"if \(bits == 4u[^{]*\{")
_FAST8 = re.compile(r"\s*else if \(bits == 8u[^{]*\{")
_ELSE = re.compile(r"\s*else \{")


def _general_only(body: str) -> str:
    """Drop ``specialised_loop``'s hoisted 4-/8-bit loops, keeping its general loop.

    The hoisted loops read codes at the row-major index; a fused kernel reads every code at
    the layout offset through the general loop's ``CODE_LOAD``.
    """
    while (m4 := _FAST.search(body)) is not None:
        end4 = _closing(body, m4.end() - 1)
        m8 = _FAST8.match(body, end4 + 1)
        if m8 is None:
            raise ValueError("a hoisted 4-bit loop without its 8-bit sibling")
        end8 = _closing(body, m8.end() - 1)
        me = _ELSE.match(body, end8 + 1)
        if me is None:
            raise ValueError("hoisted loops without the general loop")
        end = _closing(body, me.end() - 1)
        body = body[:m4.start()] + body[me.end():end] + body[end + 1:]
    return body


def _fuse_body(body: str, pre: str) -> str:
    """Make every code read happen at ``so`` (the layout offset of element i).

    Dequant bodies either read with ``CODE_LOAD`` once per work item, or run per-element
    loops ``for (; i < end; i++) { CODE_LOAD <element formula> }`` (possibly beside hoisted
    row-major loops for 4- and 8-bit codes, which are dropped here). Only the code load moves
    to ``so``: the element formula and its output index keep ``i``.

    Raises:
        ValueError: a body with a code read this cannot move (checked at import).
    """
    if _LOOP not in body:
        if CODE_LOAD not in body:
            raise ValueError("dequant body has neither CODE_LOAD nor per-element loops")
        fused = body.replace(CODE_LOAD, pre + _CODE_AT_SO, 1)
    else:
        body = _general_only(body)
        out, pos = [], 0
        while (at := body.find(_LOOP, pos)) >= 0:
            brace = at + len(_LOOP) - 1
            end = _closing(body, brace)
            inner = body[brace + 1:end].replace(CODE_LOAD, pre + _CODE_AT_SO)
            out += [body[pos:brace + 1], inner]
            pos = end
        fused = "".join(out) + body[pos:]
    if "LOAD(data," in fused.replace(_CODE_AT_SO, ""):
        raise ValueError("dequant body reads codes outside CODE_LOAD; it cannot be fused")
    return fused


def _make(base: KernelDef, addr: str) -> KernelDef:
    text, so_fn, extra = _ADDR[addr]
    addr_text = re.sub(r"\bso\b", "hs", text)
    pre = _PRE.replace("{ADDR}", addr_text).replace("{SPAN}", _SPAN[addr])
    body = _fuse_body(base.body, pre)
    # err becomes read-write: the sep variant reads its tables from it.
    bufs = tuple(buf(p.name, p.dtype, "rw") if p.name == "err" else p for p in base.buffers)
    params = (*bufs, *base.scalars, *extra)

    def extents(s: Any) -> dict[str, int]:
        out = dict(base.extents(s))
        # Codes are read below n (Hilbert) or nspan (sep) elements past doff.
        if addr == "sep":
            out["err"] = int(s["ntt"])
            out["data"] = int(s["doff"]) + (int(s["nspan"]) * int(s["bits"]) + 7) // 8
        return out

    return KernelDef(name=f"{base.name}_{addr}", params=params, body=body, grid=base.grid,
                     extents=extents, reference=_reference(base, so_fn),
                     local_size=base.local_size, tags=("layout", "dequant"),
                     doc=f"{base.doc.rstrip('.')} — reading storage through {addr} addressing.")


_FUSED = {(k.name, addr): _make(k, addr) for k in DEQUANT_KERNELS for addr in _ADDR
          if CODE_LOAD in k.body or _LOOP in k.body}


def fused_kernel(base: str, addr: str) -> KernelDef:
    """The fused variant of dequant kernel ``base`` for ``addr`` (``"sep"``/``"hil"``)."""
    return _FUSED[(base, addr)]


FUSED_KERNELS = tuple(_FUSED.values())
