"""Prefix scans: the Hillis-Steele workgroup scan of vyre-primitives
(workgroup memory and barriers) and a multi-workgroup scan whose passes are split by GridSync.
"""

from __future__ import annotations

from vyre import builder as b
from vyre import ir

__all__ = ["MAX_SCAN", "multi_block_scan_program", "prefix_scan_program"]

MAX_SCAN = 1024
_LANE = b.local_id(0)


def _hillis_steele(a: str, bb: str, lanes: int) -> list[ir.Node]:
    """Inclusive scan of workgroup array ``a`` (``lanes`` long) in place, ``bb`` as scratch."""
    nodes: list[ir.Node] = []
    stride = 1
    while stride < lanes:
        # lane - stride, written as the wrapping add vyre-primitives emits.
        back = b.add(_LANE, 0xFFFFFFFF - (stride - 1))
        nodes += [b.store(bb, _LANE, b.load(a, _LANE)),
                  b.if_(b.lt(stride - 1, _LANE), [
                      b.store(bb, _LANE, b.add(b.load(a, _LANE), b.load(a, back)))]),
                  b.barrier(), b.store(a, _LANE, b.load(bb, _LANE)), b.barrier()]
        stride *= 2
    return nodes


def prefix_scan_program(n: int, exclusive: bool = False) -> ir.Program:
    """``prefix_scan_with_op_id`` for ``1 <= n <= 1024``: one workgroup of
    ``n.next_power_of_two()`` lanes.

    Buffers: ``in`` u32[n], ``out`` output u32[n], workgroup ``__out_scan_a`` /
    ``__out_scan_b``. Grid (1, 1, 1).

    Raises:
        ValueError: ``n`` outside [1, 1024].
    """
    if not 1 <= n <= MAX_SCAN:
        raise ValueError(f"prefix scan length {n} is outside [1, {MAX_SCAN}]")
    lanes = 1 << (n - 1).bit_length()
    a, bb = "__out_scan_a", "__out_scan_b"
    if exclusive:
        seed = b.if_(b.and_(b.lt(0, _LANE), b.lt(_LANE, n)),
                     [b.store(a, _LANE, b.load("in", b.sub(_LANE, 1)))])
    else:
        seed = b.if_(b.lt(_LANE, n), [b.store(a, _LANE, b.load("in", _LANE))])
    body = [b.store(a, _LANE, 0), seed, b.barrier(), *_hillis_steele(a, bb, lanes),
            b.if_(b.lt(_LANE, n), [b.store("out", _LANE, b.load(a, _LANE))])]
    out = b.output("out", 1, b.U32, n).with_(output_byte_range=(0, 4 * n))
    return b.program([b.read("in", 0, b.U32, n), out, b.workgroup(a, lanes, b.U32),
                      b.workgroup(bb, lanes, b.U32)], body, workgroup_size=(lanes, 1, 1))


def multi_block_scan_program(n: int, block: int = 64) -> ir.Program:
    """Inclusive scan of any length: three passes separated by GridSync barriers.

    1. each workgroup scans its ``block`` elements into ``out`` and publishes its total;
    2. invocation 0 turns the totals into exclusive block offsets;
    3. every element adds its block's offset.

    Buffers: ``in`` u32[n], ``out`` output u32[n], ``block_sums`` u32[blocks] ReadWrite
    (pass zeros), workgroup ``scan_a`` / ``scan_b``. Grid: (ceil(n / block), 1, 1).

    Raises:
        ValueError: ``n < 1`` or ``block`` not a power of two in [1, 1024].
    """
    if n < 1 or block < 1 or block > MAX_SCAN or block & (block - 1):
        raise ValueError(f"bad multi-block scan shape n={n} block={block}")
    v, gid, wid = b.var, b.invocation_id(0), b.workgroup_id(0)
    blocks = -(-n // block)
    grid_sync = b.barrier(ir.MemoryOrdering.GRID_SYNC)
    first = [b.store("scan_a", _LANE, b.select(b.lt(gid, n), b.load("in", gid), 0)),
             b.barrier(), *_hillis_steele("scan_a", "scan_b", block),
             b.if_(b.lt(gid, n), [b.store("out", gid, b.load("scan_a", _LANE))]),
             b.if_(b.eq(_LANE, block - 1), [b.store("block_sums", wid, b.load("scan_a", _LANE))])]
    second = [b.if_(b.eq(gid, 0), [
        b.let("running", 0),
        b.loop("k", 0, blocks, [b.let("t", b.load("block_sums", v("k"))),
                                b.store("block_sums", v("k"), v("running")),
                                b.assign("running", b.add(v("running"), v("t")))])])]
    third = [b.if_(b.lt(gid, n), [b.store("out", gid, b.add(
        b.load("out", gid), b.load("block_sums", wid)))])]
    return b.program(
        [b.read("in", 0, b.U32, n), b.output("out", 1, b.U32, n),
         b.read_write("block_sums", 2, b.U32, blocks), b.workgroup("scan_a", block, b.U32),
         b.workgroup("scan_b", block, b.U32)],
        [*first, grid_sync, *second, grid_sync, *third], workgroup_size=(block, 1, 1))
