"""Device storage of a paged KV cache: page pools per layer and role, and kernel launches.

Pools are [num_pages, page_size, heads, head_dim] (int8 caches add one f32 scale per slot) and
are allocated once. Raw moves (page copies, swap) treat every plane as words; append and
gather convert between the caller's dtype and the stored one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_gpu.buffer import Buffer
from hurray_gpu.device import Device, MemoryClass
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels.paged import MAX_WIDTH, PAD_SLOT, paged_kernel, word_for
from hurray_gpu.kernels.paged_quant import quant_kernel

__all__ = ["KVStorage", "Plane"]

# Largest index any kernel computes: word offsets and slots are u32 in the kernels.
MAX_WORDS = 2**32 - 1


def _check_binding_range(device: Device, pool_bytes: int) -> None:
    """Kernels address a pool at random, so it must fit one storage binding (Vulkan)."""
    limits = getattr(device, "plan_limits", None)
    limit = int(getattr(limits, "max_range", 0) or 0)
    if limit and pool_bytes > limit:
        raise UnsupportedOpError(
            f"a {pool_bytes}-byte page pool exceeds {device}'s {limit}-byte storage-buffer "
            "range, and paged kernels read pools at random", fix="use fewer pages (or "
            "heads) per cache on this device, or another backend.")


@dataclass
class Plane:
    """Per-slot data of one kind (K/V rows, or int8 scales) for every layer and role."""

    buffers: list[Buffer]  # index layer * 2 + role
    word: str  # the raw word type moving it
    row: int  # words per slot


class KVStorage:
    """The page pools of every layer and role on one device.

    Args:
        device: where the pools live.
        num_layers, num_pages, page_size: the pool geometry.
        elems: elements per token row (heads x head_dim).
        itemsize: bytes per element of the caller's dtype.
        quant: None, ``"q8"`` (int8 + scales) or ``"f8"`` (float8_e4m3).
        word: the caller's dtype as a kernel type (f16, bf16, f32) when quantized.

    Raises:
        UnsupportedOpError: a pool too large for u32 kernel indexing.
        OutOfMemoryError: the device cannot hold the pools.
    """

    def __init__(self, device: Device, num_layers: int, num_pages: int, page_size: int,
                 elems: int, itemsize: int, quant: str | None = None,
                 word: str | None = None) -> None:
        self.device, self.quant, self.float_word = device, quant, word
        self.num_layers, self.num_pages, self.page_size = num_layers, num_pages, page_size
        self.elems, self.num_slots = elems, num_pages * page_size
        self.row_bytes = elems * itemsize  # what append takes and gather returns, per token
        stored = elems * (1 if quant else itemsize)
        size, data_word = word_for(stored)
        if self.num_slots >= PAD_SLOT or self.num_slots * stored > MAX_WORDS or \
                stored // size * page_size > MAX_WIDTH:
            raise UnsupportedOpError(
                f"a pool of {self.num_slots} slots x {stored} bytes exceeds the kernels' u32 "
                "indexing", fix="use fewer pages, or fewer heads per cache.")
        _check_binding_range(device, self.num_slots * stored)
        host = device.kind == "cpu"
        # One host work item per row (a plain loop); on GPUs adjacent items take adjacent words.
        self.lanes = 1 if host else min(max(elems, 1), 128)
        self.page_lanes = 1 if host else 256
        self.pinned = MemoryClass.HOST_PINNED in device.memory_classes and not host
        self._programs: dict[Any, Any] = {}
        count = 2 * num_layers
        self.data = Plane([Buffer(device, self.num_slots * stored) for _ in range(count)],
                          data_word, stored // size)
        self.planes = [self.data]
        if quant == "q8":
            self.scales: Plane | None = Plane(
                [Buffer(device, self.num_slots * 4) for _ in range(count)], "u32", 1)
            self.planes.append(self.scales)
        else:
            self.scales = None
        for plane in self.planes:
            for pool in plane.buffers:
                self._zero(pool)

    def _zero(self, pool: Buffer) -> None:
        # Slots nobody wrote read as zeros (deterministic exports), without a host-sized array.
        if pool.nbytes % 4:
            pool.copyin(bytes(pool.nbytes))
        elif pool.nbytes:
            self.device.run("fill_u32", pool, value=0, n=pool.nbytes // 4)

    def _program(self, kernel: Any) -> Any:
        # Device.program renders the source to find its cache key; do that once per kernel.
        program = self._programs.get(kernel.name)
        if program is None:
            program = self._programs[kernel.name] = self.device.program(kernel)
        return program

    def _check_open(self) -> None:
        if not self.planes:
            raise UnsupportedOpError("the KV cache was closed",
                                     fix="build a new PagedKVCache; close() releases the pools.")

    def pool(self, layer: int, role: int) -> Buffer:
        """The data pool Buffer of ``layer`` and ``role`` (0 key, 1 value)."""
        self._check_open()
        return self.data.buffers[2 * layer + role]

    def scale_pool(self, layer: int, role: int) -> Buffer | None:
        """The f32 scale Buffer of an int8 cache (None otherwise)."""
        self._check_open()
        return None if self.scales is None else self.scales.buffers[2 * layer + role]

    def upload_u32(self, values: Sequence[int] | np.ndarray) -> Buffer:
        """A device Buffer holding ``values`` as u32 (at least one word, never empty)."""
        arr = np.asarray(values, dtype=np.uint32)
        return Buffer.from_bytes(self.device, arr if arr.size else np.zeros(1, np.uint32))

    # -- append and gather in the caller's dtype -------------------------------------------
    def append(self, layer: int, role: int, src: Buffer, slots: Buffer, tokens: int) -> None:
        """Write ``tokens`` rows of ``src`` into their slots (quantizing when needed)."""
        self._check_open()
        self._check_rows(tokens, self.elems)
        if not tokens:
            return
        index = 2 * layer + role
        if self.quant is None:
            self._raw_scatter(self.data, index, src, slots, tokens)
            return
        assert self.float_word is not None
        if self.quant == "q8":
            assert self.scales is not None
            self._program(quant_kernel("scatter", "q8", self.float_word))(
                self.data.buffers[index], self.scales.buffers[index], src, slots, n=tokens,
                lanes=1, row=self.elems, num_slots=self.num_slots)
        else:
            self._program(quant_kernel("scatter", "f8", self.float_word))(
                self.data.buffers[index], src, slots, n=tokens * self.lanes, lanes=self.lanes,
                row=self.elems, num_slots=self.num_slots)

    def gather(self, layer: int, role: int, slots: Buffer, tokens: int) -> Buffer:
        """A new Buffer of ``tokens`` rows in the caller's dtype; zero rows for PAD_SLOT."""
        self._check_open()
        self._check_rows(tokens, self.elems)
        index = 2 * layer + role
        if self.quant is None:
            return self._raw_gather(self.data, index, slots, tokens)
        assert self.float_word is not None
        out = Buffer(self.device, tokens * self.row_bytes)
        if not tokens:
            return out
        kernel = quant_kernel("gather", self.quant, self.float_word)
        extra = (self.scales.buffers[index],) if self.scales is not None else ()
        self._program(kernel)(out, self.data.buffers[index], *extra, slots,
                              n=tokens * self.lanes, lanes=self.lanes, row=self.elems,
                              num_slots=self.num_slots)
        return out

    # -- raw word moves ------------------------------------------------------------------
    def _raw_scatter(self, plane: Plane, index: int, src: Buffer, slots: Buffer,
                     tokens: int) -> None:
        self._check_rows(tokens, plane.row)
        lanes = min(self.lanes, plane.row)
        self._program(paged_kernel("scatter", plane.word))(
            plane.buffers[index], src, slots, n=tokens * lanes, lanes=lanes, row=plane.row,
            num_slots=self.num_slots)

    def _raw_gather(self, plane: Plane, index: int, slots: Buffer, tokens: int) -> Buffer:
        self._check_rows(tokens, plane.row)
        size = {"u32": 4, "u16": 2, "u8": 1}[plane.word]
        out = Buffer(self.device, tokens * plane.row * size)
        if tokens:
            lanes = min(self.lanes, plane.row)
            self._program(paged_kernel("gather", plane.word))(
                out, plane.buffers[index], slots, n=tokens * lanes, lanes=lanes, row=plane.row,
                num_slots=self.num_slots)
        return out

    def copy_pages(self, pairs: Sequence[tuple[int, int]]) -> None:
        """Copy page src to page dst for every (src, dst), in every layer, role and plane.

        The caller guarantees page ids < num_pages and that no dst is also a src.
        """
        self._check_open()
        if not pairs:
            return
        flat = self.upload_u32([p for pair in pairs for p in pair])
        for plane in self.planes:
            words = plane.row * self.page_size
            lanes = min(self.page_lanes, words)
            program = self._program(paged_kernel("copy_pages", plane.word))
            for pool in plane.buffers:
                program(pool, flat, n=len(pairs) * lanes, lanes=lanes, page_words=words,
                        num_pages=self.num_pages)

    def read_pages(self, pages: Sequence[int]) -> list[Any]:
        """Copy ``pages`` of every plane, layer and role off the device (swap out).

        Returns:
            One host copy per buffer, in order: a host-pinned Buffer where the device offers
            pinned memory (filled by an on-device copy), else a NumPy array.
        """
        self._check_open()
        out: list[Any] = []
        if not pages:
            return out
        slots = self.upload_u32(self._page_slots(pages))
        tokens = len(pages) * self.page_size
        for plane in self.planes:
            for index in range(len(plane.buffers)):
                got = self._raw_gather(plane, index, slots, tokens)
                if self.pinned:
                    out.append(Buffer(self.device, got.nbytes, MemoryClass.HOST_PINNED))
                    out[-1].copy_from(got)
                else:
                    out.append(np.asarray(got.copyout(), dtype=np.uint8))
                got.free()
        return out

    def write_pages(self, pages: Sequence[int], data: Sequence[Any]) -> None:
        """Inverse of :meth:`read_pages`: put the host copies back into ``pages``."""
        self._check_open()
        if not pages:
            return
        slots = self.upload_u32(self._page_slots(pages))
        tokens = len(pages) * self.page_size
        copies = iter(data)
        for plane in self.planes:
            for index in range(len(plane.buffers)):
                host = next(copies)
                if isinstance(host, Buffer):
                    src = Buffer(self.device, host.nbytes).copy_from(host)
                else:
                    src = Buffer.from_bytes(self.device, host)
                self._raw_scatter(plane, index, src, slots, tokens)
                src.free()

    def _page_slots(self, pages: Sequence[int]) -> np.ndarray:
        base = np.asarray(pages, dtype=np.int64)[:, None] * self.page_size
        return (base + np.arange(self.page_size, dtype=np.int64)).reshape(-1)

    def _check_rows(self, tokens: int, row: int) -> None:
        if tokens * max(self.lanes, 1) > MAX_WORDS or tokens * row > MAX_WORDS:
            raise UnsupportedOpError(f"{tokens} rows exceed one launch's u32 indexing",
                                     fix="append or gather fewer tokens at once.")

    def buffers(self) -> list[Buffer]:
        """Every pool Buffer of every plane."""
        return [b for plane in self.planes for b in plane.buffers]

    def free(self) -> None:
        """Release every pool."""
        for pool in self.buffers():
            pool.free()
        self.planes = []
