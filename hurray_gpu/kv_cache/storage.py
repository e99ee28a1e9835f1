"""Device storage of a paged KV cache: page pools per layer and role, and kernel launches.

Each launch moves a layer's key and value together, once per pool window (see windows.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels import loop_steps
from hurray_gpu.kernels.paged import (
    MAX_LANES,
    MAX_WIDTH,
    ROLES,
    SKIP_SLOT,
    WORDS,
    paged_kernel,
    quant_kernel,
    word_for,
)
from hurray_gpu.kv_cache.windows import Windows
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import MemoryClass

__all__ = ["KVStorage", "Plane"]

# Largest index any kernel computes: word offsets and slots are u32 in the kernels.
MAX_WORDS = 2**32 - 1
# Copy-on-write of at most this many rows lists its slot pairs in plain Python.
SMALL_COPY = 1024


@dataclass
class Plane:
    """Per-slot data of one kind (K/V rows, or int8 scales) for every layer and role."""

    buffers: list[Buffer]  # index layer * 2 + role
    word: str  # the raw word type moving it
    row: int  # words per slot

    @property
    def slot_bytes(self) -> int:
        """Bytes per slot."""
        return self.row * next(size for size, word in WORDS if word == self.word)


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
        UnsupportedOpError: a pool too large for u32 kernel indexing, or pages that cannot be
            bound in windows on a device with a small storage-binding range.
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
        if self.num_slots >= SKIP_SLOT or self.num_slots * stored > MAX_WORDS or \
                stored // size * page_size > MAX_WIDTH:
            raise UnsupportedOpError(
                f"a pool of {self.num_slots} slots x {stored} bytes exceeds the kernels' u32 "
                "indexing", fix="use fewer pages, or fewer heads per cache.")
        self.windows = Windows(device, num_pages, page_size, [stored, 4] if quant == "q8"
                               else [stored])
        # One work item per row on CPUs, pocl and lavapipe included: the row copy becomes a
        # memcpy (far faster there than spreading it over lanes); on GPUs adjacent items take
        # adjacent words, so loads coalesce. _lanes adds items where rows pass a loop budget.
        host = device.kind == "cpu" or bool(getattr(device, "emulated", False))
        self.host = device.allocator.host_memory
        self._stage: tuple[Buffer, np.ndarray] | None = None
        if self.host:  # see copy_rows
            stage = Buffer(device, 8 * SMALL_COPY)
            self._stage = (stage, stage.array.view(np.uint32))
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
        # The pools' root allocations, which no gather output may be part of (out_buffers).
        self.roots = frozenset(id(b.allocation.root) for b in self.buffers())
        # (op, word, row, tokens) -> the bound launch: a decode loop gathers the same token
        # count layer after layer, and binding costs more Python than the launch's checks.
        self._bound: dict[tuple[str, str, int, int], Any] = {}

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
        """A device Buffer holding ``values`` as u32 (at least one word, never empty); on a
        host-memory device the new array itself, without a copy."""
        arr = np.asarray(values, dtype=np.uint32)
        arr = arr if arr.size else np.zeros(1, np.uint32)
        if self.host:
            return Buffer.wrap(arr, self.device)
        return Buffer.from_bytes(self.device, arr)

    def upload_slots(self, slots: np.ndarray) -> list[tuple[int, Buffer]]:
        """Token slots on the device: ``(window, Buffer)`` per pool window they touch.

        A pool that fits one binding (every device but a small-range Vulkan one) is one
        window: the slots are uploaded as they are.
        """
        if self.windows.count == 1:
            return [(0, self.upload_u32(slots))]
        return [(w, self.upload_u32(local)) for w, local in self.windows.split_slots(slots)]

    def _views(self, plane: Plane, layer: int, window: int) -> tuple[Buffer, Buffer]:
        k, v = plane.buffers[2 * layer], plane.buffers[2 * layer + 1]
        if self.windows.count == 1:
            return k, v
        return (self.windows.view(k, window, plane.slot_bytes),
                self.windows.view(v, window, plane.slot_bytes))

    # -- append and gather in the caller's dtype -------------------------------------------
    def append(self, layer: int, ksrc: Buffer, vsrc: Buffer, slots: list[tuple[int, Buffer]],
               tokens: int) -> None:
        """Write ``tokens`` key and value rows into their slots (quantizing when needed).

        One launch moves both roles of ``layer`` (vLLM's reshape_and_cache), per pool window.

        Args:
            slots: from :meth:`upload_slots`.
        """
        self._check_open()
        if self.quant is None:
            self._raw_scatter(self.data, layer, ksrc, vsrc, slots, tokens)
            return
        # int8: one item per row (its scale) unless the loop budget splits rows; then the
        # amax kernel leaves each lane's partial amax, which every lane of the row reduces.
        lanes = self._lanes(tokens, self.elems, 1 if self.quant == "q8" else self.lanes, 4)
        if not tokens:
            return
        assert self.float_word is not None
        args = {"n": tokens * lanes, "lanes": lanes, "row": self.elems,
                "num_slots": self.windows.slots}
        parts: tuple[Buffer, ...] = ()
        if self.scales is not None:  # with one lane per row nothing reads them: any buffer
            parts = (ksrc, vsrc)
            if lanes > 1:
                parts = tuple(Buffer(self.device, 4 * tokens * lanes) for _ in ROLES)
                self._program(quant_kernel("amax", "q8", self.float_word))(
                    *parts, ksrc, vsrc, **args)
        program = self._program(quant_kernel("scatter", self.quant, self.float_word))
        for window, local in slots:
            scales = self._views(self.scales, layer, window) if self.scales is not None else ()
            program(*self._views(self.data, layer, window), *scales, *parts, ksrc, vsrc, local,
                    **args)

    def gather(self, layer: int, slots: list[tuple[int, Buffer]], tokens: int,
               out: tuple[Buffer, Buffer] | None = None) -> tuple[Buffer, Buffer]:
        """Key and value Buffers of ``tokens`` rows in the caller's dtype (``out`` or new).

        One launch per pool window; rows whose slot is PAD_SLOT (or past the pool) are zeros.
        """
        self._check_open()
        if self.quant is None:
            return self._raw_gather(self.data, layer, slots, tokens, out)
        lanes = self._lanes(tokens, self.elems, self.lanes)
        assert self.float_word is not None
        out = out or (Buffer(self.device, tokens * self.row_bytes),
                      Buffer(self.device, tokens * self.row_bytes))
        if not tokens:
            return out
        program = self._program(quant_kernel("gather", self.quant, self.float_word))
        for window, local in slots:
            scales = self._views(self.scales, layer, window) if self.scales is not None else ()
            program(*out, *self._views(self.data, layer, window), *scales, local,
                    n=tokens * lanes, lanes=lanes, row=self.elems, num_slots=self.windows.slots)
        return out

    # -- raw word moves ------------------------------------------------------------------
    def _raw_scatter(self, plane: Plane, layer: int, ksrc: Buffer, vsrc: Buffer,
                     slots: list[tuple[int, Buffer]], tokens: int) -> None:
        lanes = self._lanes(tokens, plane.row, self.lanes)
        program = self._program(paged_kernel("scatter", plane.word))
        for window, local in slots:
            program(*self._views(plane, layer, window), ksrc, vsrc, local, n=tokens * lanes,
                    lanes=lanes, row=plane.row, num_slots=self.windows.slots)

    def _raw_gather(self, plane: Plane, layer: int, slots: list[tuple[int, Buffer]],
                    tokens: int, out: tuple[Buffer, Buffer] | None = None
                    ) -> tuple[Buffer, Buffer]:
        key = ("gather", plane.word, plane.row, tokens)  # the scale plane's row is 1 word
        launch = self._bound.get(key)
        if launch is None:
            lanes = self._lanes(tokens, plane.row, self.lanes)
            if len(self._bound) >= 64:
                self._bound.clear()
            launch = self._bound[key] = self._program(paged_kernel("gather", plane.word)).bind(
                {"n": tokens * lanes, "lanes": lanes, "row": plane.row,
                 "num_slots": self.windows.slots})
        out = out or (Buffer(self.device, tokens * plane.slot_bytes),
                      Buffer(self.device, tokens * plane.slot_bytes))
        if tokens:
            for window, local in slots:  # the launch checks every buffer, as a call does
                launch([*out, *self._views(plane, layer, window), local])
        return out

    def copy_pages(self, pairs: Sequence[tuple[int, int]]) -> None:
        """Copy page src to page dst for every (src, dst), in every layer, role and plane.

        The caller guarantees page ids < num_pages and that no dst is also a src.
        """
        self._check_open()
        if not pairs:
            return
        for src_window, dst_window, local in self.windows.split_pairs(pairs):
            flat = self.upload_u32([p for pair in local for p in pair])
            for plane in self.planes:
                words = plane.row * self.page_size
                lanes = self._lanes(len(local), words, self.page_lanes)
                program = self._program(paged_kernel("copy_pages", plane.word))
                for layer in range(self.num_layers):
                    program(*self._views(plane, layer, dst_window),
                            *self._views(plane, layer, src_window), flat, n=len(local) * lanes,
                            lanes=lanes, page_words=words, num_pages=self.windows.pages)

    def copy_rows(self, pairs: Sequence[tuple[int, int]], rows: Sequence[int]) -> None:
        """Copy the first ``rows[i]`` slots of page src to page dst, in every layer and plane.

        Copy-on-write moves only the rows a sequence holds (half a page on average), one slot
        per work item. The caller guarantees page ids < num_pages and no dst is also a src.
        """
        self._check_open()
        total, ps = sum(rows), self.page_size
        if not pairs or not total:
            return
        if self.windows.count == 1 and total <= SMALL_COPY:
            # A decode step's copy-on-write: a few rows, whose slot pairs plain Python lists
            # faster than NumPy's per-call cost.
            parts: list[tuple[int, int, Any]] = [(0, 0, [
                v for (src, dst), n in zip(pairs, rows, strict=True) for i in range(n)
                for v in (src * ps + i, dst * ps + i)])]
        else:
            counts = np.asarray(rows, dtype=np.int64)
            ends = np.asarray(pairs, dtype=np.int64).reshape(-1, 2) * ps
            offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                  counts)
            src, dst = (np.repeat(ends[:, i], counts) + offset for i in (0, 1))
            parts = list(self.windows.split_slot_pairs(src, dst))
        for src_window, dst_window, local in parts:
            count = len(local) // 2
            if self._stage is not None and isinstance(local, list):
                # Host kernels finish before their launch returns and the cache's lock orders
                # appends: one staging array takes every small copy's pairs (no upload).
                flat, self._stage[1][:2 * count] = self._stage[0], local
            else:
                flat = self.upload_u32(local)
            for plane in self.planes:
                lanes = self._lanes(count, plane.row, self.page_lanes)
                program = self._program(paged_kernel("copy_pages", plane.word))
                for layer in range(self.num_layers):
                    program(*self._views(plane, layer, dst_window),
                            *self._views(plane, layer, src_window), flat, n=count * lanes,
                            lanes=lanes, page_words=plane.row, num_pages=self.windows.slots)

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
        slots = self.upload_slots(self._page_slots(pages))
        tokens = len(pages) * self.page_size
        for plane in self.planes:
            for layer in range(self.num_layers):
                for got in self._raw_gather(plane, layer, slots, tokens):
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
        slots = self.upload_slots(self._page_slots(pages))
        tokens = len(pages) * self.page_size
        copies = iter(data)
        for plane in self.planes:
            for layer in range(self.num_layers):
                k, v = (self._to_device(next(copies)) for _ in ROLES)
                self._raw_scatter(plane, layer, k, v, slots, tokens)
                k.free()
                v.free()

    def _to_device(self, host: Any) -> Buffer:
        if isinstance(host, Buffer):
            return Buffer(self.device, host.nbytes).copy_from(host)
        return Buffer.from_bytes(self.device, host)

    def _page_slots(self, pages: Sequence[int]) -> np.ndarray:
        base = np.asarray(pages, dtype=np.int64)[:, None] * self.page_size
        return (base + np.arange(self.page_size, dtype=np.int64)).reshape(-1)

    def _lanes(self, rows: int, words: int, base: int, loops: int = 2) -> int:
        """Work items per row of ``words`` in a launch over ``rows`` rows: ``base``, or as many
        as keep each item's ``loops`` row loops inside the device's loop budget.

        Raises:
            UnsupportedOpError: the launch passes u32 indexing or MAX_LANES items per row.
        """
        lanes = max(min(base, words), -(-words // loop_steps(self.device, loops)))
        if lanes > MAX_LANES or rows * lanes > MAX_WORDS or rows * words > MAX_WORDS:
            raise UnsupportedOpError(
                f"{rows} rows of {words} words exceed one launch on {self.device} (u32 "
                f"indexing, and at most {MAX_LANES} work items per row inside its loop "
                "budget)", fix="append or gather fewer tokens at once, or use fewer heads "
                "per cache.")
        return lanes

    def buffers(self) -> list[Buffer]:
        """Every pool Buffer of every plane."""
        return [b for plane in self.planes for b in plane.buffers]

    def free(self) -> None:
        """Release every pool."""
        for pool in self.buffers():
            pool.free()
        self.planes, self.roots = [], frozenset()
        self._stage = None  # its memory returns to the pool with its last reference
