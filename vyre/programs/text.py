"""Text scans over byte-per-u32 input (vyre-libs 0.7.2 scan/): the Aho-Corasick DFA scan with
its host-side compiler (a port of vyre-primitives ``dfa_compile``) and substring search.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vyre import builder as b
from vyre import ir

__all__ = ["Dfa", "aho_corasick_program", "dfa_compile", "substring_program"]

# Patterns are host data; bound them so a hostile list cannot exhaust memory (256 u32/state).
MAX_DFA_STATES = 1 << 16


@dataclass(frozen=True)
class Dfa:
    """A compiled pattern set.

    Attributes:
        transitions: u32[states * 256], ``transitions[s*256 + byte]``.
        accept: u32[states]: pattern id + 1 accepted in each state (lowest id wins), or 0.
        max_pattern_len: the longest pattern, in bytes.
    """

    transitions: np.ndarray
    accept: np.ndarray
    max_pattern_len: int

    @property
    def states(self) -> int:
        """The number of DFA states."""
        return len(self.accept)


def dfa_compile(patterns: Sequence[bytes]) -> Dfa:
    """Build the DFA exactly as ``vyre_primitives::matching::dfa_compile`` does: trie, BFS
    failure links over bytes 0..255 in order, then the full transition table.

    Args:
        patterns: the byte strings (pattern id = position).

    Returns:
        The DFA.

    Raises:
        ValueError: more than ``MAX_DFA_STATES`` states.
    """
    trie: list[dict[int, int]] = [{}]
    accept = [0]
    for pid, pattern in enumerate(patterns):
        node = 0
        for byte in bytes(pattern):
            nxt = trie[node].get(byte)
            if nxt is None:
                if len(trie) >= MAX_DFA_STATES:
                    raise ValueError(f"patterns need more than {MAX_DFA_STATES} DFA states")
                nxt = len(trie)
                trie[node][byte] = nxt
                trie.append({})
                accept.append(0)
            node = nxt
        if accept[node] == 0:
            accept[node] = pid + 1
    fail = [0] * len(trie)
    queue = deque(trie[0][byte] for byte in sorted(trie[0]))
    while queue:
        s = queue.popleft()
        for byte in sorted(trie[s]):
            c = trie[s][byte]
            f = fail[s]
            while f != 0 and byte not in trie[f]:
                f = fail[f]
            target = trie[f].get(byte)
            if target is not None and target != c:
                fail[c] = target
            if accept[c] == 0:
                accept[c] = accept[fail[c]]
            queue.append(c)
    transitions = np.zeros(len(trie) * 256, np.uint32)
    for s in range(len(trie)):
        for byte in range(256):
            t = s
            while True:
                if byte in trie[t]:
                    transitions[s * 256 + byte] = trie[t][byte]
                    break
                if t == 0:
                    break
                t = fail[t]
    longest = max((len(p) for p in patterns), default=0)
    return Dfa(transitions, np.array(accept, np.uint32), longest)


def aho_corasick_program(window: int | None = None) -> ir.Program:
    """``matches[i]`` = the accept value after replaying the DFA over the bytes ending at i.

    Args:
        window: ``L`` of ``aho_corasick_bounded`` (the longest pattern): replay only the last
            L bytes. None replays from 0 (``aho_corasick()``; L = buflen(haystack)).

    Buffers: ``haystack`` u32[] (byte per u32), ``transitions`` u32[], ``accept`` u32[],
    ``matches`` u32[] ReadWrite (one per haystack byte). Workgroup (64, 1, 1).
    """
    v = b.var
    length = b.max_(b.buf_len("haystack"), 1) if window is None else b.lit_u32(max(window, 1))
    body = [
        b.let("i", b.invocation_id(0)),
        b.if_(b.lt(v("i"), b.buf_len("haystack")), [
            b.let("state", 0),
            b.let("window", length),
            b.let("scan_start", b.select(b.lt(v("i"), b.sub(v("window"), 1)), 0,
                                         b.sub(b.add(v("i"), 1), v("window")))),
            b.loop("step", v("scan_start"), b.add(v("i"), 1), [b.assign("state", b.load(
                "transitions", b.add(b.mul(v("state"), 256), b.load("haystack", v("step")))))]),
            b.store("matches", v("i"), b.load("accept", v("state")))])]
    return b.program([b.read("haystack", 0, b.U32), b.read("transitions", 1, b.U32),
                      b.read("accept", 2, b.U32), b.read_write("matches", 3, b.U32)],
                     body, workgroup_size=(64, 1, 1))


def substring_program(haystack_len: int, needle_len: int) -> ir.Program:
    """vyre-libs substring search: ``matches[i] = 1`` where the needle starts at ``i``.

    Buffers: ``haystack`` u32[hl] (byte per u32), ``needle`` u32[nl], ``matches`` output
    u32[max(hl, 1)] read back as bytes ``0..4*hl``. Workgroup (64, 1, 1).
    """
    v = b.var
    nl = needle_len
    body = [
        b.let("i", b.invocation_id(0)),
        b.let("hlen", b.buf_len("haystack")),
        b.if_(b.and_(b.le(nl, v("hlen")), b.le(v("i"), b.sub(v("hlen"), nl))), [
            b.let("ok", 1),
            b.loop("k", 0, nl, [b.assign("ok", b.bit_and(v("ok"), b.select(b.eq(
                b.load("haystack", b.add(v("i"), v("k"))), b.load("needle", v("k"))), 1, 0)))]),
            b.store("matches", v("i"), v("ok"))])]
    matches = b.output("matches", 2, b.U32, max(haystack_len, 1)).with_(
        output_byte_range=(0, 4 * haystack_len))
    return b.program([b.read("haystack", 0, b.U32, haystack_len),
                      b.read("needle", 1, b.U32, needle_len), matches],
                     body, workgroup_size=(64, 1, 1))
