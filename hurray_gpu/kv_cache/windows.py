"""Pool windows: paged kernels on devices whose storage bindings are smaller than a pool.

A larger pool is bound as equal windows of whole pages (views of the one pool buffer).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels.paged import PAD_SLOT, SKIP_SLOT

__all__ = ["Windows", "binding_limit"]

# Bytes kept below the binding range: the backend may widen a view to its offset alignment.
ALIGN_MARGIN = 1024


def binding_limit(device: Any) -> int:
    """The most bytes one kernel binding may address on ``device`` (0: no limit)."""
    limits = getattr(device, "plan_limits", None)
    return int(getattr(limits, "max_range", 0) or 0)


class Windows:
    """How the pools of one cache split into bindable windows.

    Vulkan binds at most maxStorageBufferRange bytes per buffer (128 MiB on lavapipe), but
    paged kernels read a pool at random: each launch covers the tokens of one window, with
    slots rebased to it and every other token marked SKIP_SLOT. Window ``w`` covers pages ``[base(w), base(w) + pages)``; the last one ends at the pool's
    end (it may overlap the one before), so every window has the same size and a launch
    always sees ``pages * page_size`` slots.

    Args:
        device: the device the pools live on.
        num_pages, page_size: the pool geometry.
        slot_bytes: the largest bytes per slot of any plane (rows, or int8 scales).

    Raises:
        UnsupportedOpError: one page is larger than a binding, or pages are not multiples of
            the device's view alignment (4 bytes; OpenCL: its base address alignment).
    """

    def __init__(self, device: Any, num_pages: int, page_size: int,
                 slot_bytes: Sequence[int]) -> None:
        self.num_pages, self.page_size = num_pages, page_size
        limit = binding_limit(device)
        page_bytes = max(slot_bytes) * page_size
        if not limit or num_pages * page_bytes <= limit:
            self.pages, self.count = num_pages, 1
            return
        room = (limit - ALIGN_MARGIN) // page_bytes
        # Views must start on words (Vulkan), or on the base alignment where a backend has
        # one (OpenCL sub-buffers): every window starts on a page, so pages must be multiples.
        align = max(4, int(getattr(device, "alignment", 4) or 4))
        if room < 1 or any(b * page_size % align for b in slot_bytes):
            raise UnsupportedOpError(
                f"a {num_pages * page_bytes}-byte page pool exceeds {device}'s {limit}-byte "
                f"storage-buffer range, and its {page_bytes}-byte pages cannot be bound in "
                f"windows (a page must fit one binding and be a multiple of {align} bytes)",
                fix=f"use a page_size making pages multiples of {align} bytes and under "
                    f"{limit} bytes, or fewer heads per cache, or another backend.")
        self.pages = room
        self.count = -(-num_pages // room)  # windows (1 when a pool fits one binding)

    @property
    def slots(self) -> int:
        """Slots per window: the ``num_slots`` every launch sees."""
        return self.pages * self.page_size

    def base(self, window: int) -> int:
        """First page of ``window``."""
        return min(window * self.pages, self.num_pages - self.pages)

    def view(self, pool: Any, window: int, slot_bytes: int) -> Any:
        """The part of ``pool`` (a Buffer) that ``window`` covers."""
        if self.count == 1:
            return pool
        start = self.base(window) * self.page_size * slot_bytes
        return pool.view(start, self.slots * slot_bytes)

    def split_slots(self, slots: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """``(window, local slots)`` for every window the tokens touch.

        In each part a token of another window is SKIP_SLOT and PAD_SLOT stays PAD_SLOT
        (every part zeroes those rows: the same zeros, whichever launch writes them).
        """
        if self.count == 1:
            return [(0, slots)]
        slots = np.asarray(slots, dtype=np.int64)
        live = slots < self.num_pages * self.page_size
        window = np.where(live, slots // self.slots, -1)
        parts = []
        for w in np.unique(window[live]).tolist():
            base = self.base(w) * self.page_size
            parts.append((w, np.where(window == w, slots - base,
                                      np.where(live, SKIP_SLOT, PAD_SLOT))))
        return parts or [(0, slots)]

    def split_pairs(self, pairs: Sequence[tuple[int, int]]
                    ) -> list[tuple[int, int, list[tuple[int, int]]]]:
        """Page pairs grouped as ``(source window, destination window, local pairs)``."""
        if self.count == 1:
            return [(0, 0, list(pairs))]
        groups: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for src, dst in pairs:
            ws, wd = src // self.pages, dst // self.pages
            groups[ws, wd].append((src - self.base(ws), dst - self.base(wd)))
        return [(ws, wd, local) for (ws, wd), local in groups.items()]

    def split_slot_pairs(self, src: np.ndarray, dst: np.ndarray
                         ) -> list[tuple[int, int, np.ndarray]]:
        """Slot pairs grouped as ``(source window, destination window, flat local pairs)``."""
        if self.count == 1:
            return [(0, 0, np.stack([src, dst], axis=1).reshape(-1))]
        ws, wd = src // self.slots, dst // self.slots
        key = ws * self.count + wd
        out = []
        for k in np.unique(key).tolist():
            a, b = divmod(k, self.count)
            m = key == k
            local = np.stack([src[m] - self.base(a) * self.page_size,
                              dst[m] - self.base(b) * self.page_size], axis=1)
            out.append((a, b, local.reshape(-1)))
        return out
