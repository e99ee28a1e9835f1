"""PagedKVCache: vLLM-style paged attention KV storage on any hurray_gpu device.

Page pools live on the device; the allocator (free list, reference counts, block tables) lives
on the host. Appends and gathers are one kernel launch per layer and role.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels.paged import FLOAT_WORDS
from hurray_gpu.kv_cache.allocator import MAX_SEQ_TOKENS, PageAllocator
from hurray_gpu.kv_cache.importer import fill_cache, plan_import
from hurray_gpu.kv_cache.inputs import (
    ONE_EACH,
    check_counts,
    check_index,
    check_seq_id,
    check_seq_ids,
    dense_tensor,
    out_buffers,
    rows_buffer,
)
from hurray_gpu.kv_cache.interchange import export_layer, load_tensors, save_cache
from hurray_gpu.kv_cache.options import (
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_PAGE_SIZE,
    MAX_PAGES,
    kv_format,
    positive,
    role_index,
    storage_dtype,
)
from hurray_gpu.kv_cache.prefix import PrefixCache
from hurray_gpu.kv_cache.rows import RowViews, row_runs
from hurray_gpu.kv_cache.slot_map import GatherPlan, slot_map
from hurray_gpu.kv_cache.storage import KVStorage
from hurray_gpu.parts import TensorLike
from hurray_gpu.runtime.registry import resolve_device

__all__ = ["PagedKVCache"]

# Largest gather output: kernels index u32 words.
MAX_OUTPUT_BYTES = 4 * (2**32 - 1)
# Gather plans kept (distinct batches gathered since the last table change).
MAX_GATHER_PLANS = 8


class PagedKVCache:
    """Paged K/V storage for ``num_layers`` layers, shared block tables, on one device.

    Args:
        device: a Device or spec (``"cpu"``, ``"opencl:0"``, ...).
        num_layers: transformer layers.
        num_kv_heads: KV heads per token.
        head_dim: elements per head.
        num_pages: pages in each pool (every layer and role has its own pool).
        page_size: tokens per page.
        dtype: element type of K and V (a Hurray dtype name).
        kv_dtype: quantized storage: ``"int8"`` (symmetric, one power-of-two f32 scale per
            token slot; page_size must be a power of two >= 2) or ``"float8_e4m3"`` (no
            scale, saturated to +-448). Append quantizes and gather dequantizes on the device.
        enable_prefix_cache: reuse full pages of identical token prefixes.

    Raises:
        UnsupportedOpError: bad geometry or dtype, or a kv_dtype this build cannot store.
        OutOfMemoryError: the device cannot hold the pools.
    """

    def __init__(self, device: Any, num_layers: int, num_kv_heads: int, head_dim: int,
                 num_pages: int, page_size: int = 16, dtype: Any = "float16",
                 kv_dtype: str | None = None, *, enable_prefix_cache: bool = False) -> None:
        self.num_layers = positive(num_layers, "num_layers", MAX_LAYERS)
        self.num_kv_heads = positive(num_kv_heads, "num_kv_heads", MAX_HEADS)
        self.head_dim = positive(head_dim, "head_dim", MAX_HEAD_DIM)
        self.num_pages = positive(num_pages, "num_pages", MAX_PAGES)
        self.page_size = positive(page_size, "page_size", MAX_PAGE_SIZE)
        self.dtype = storage_dtype(dtype)
        self.kv_dtype, quant = kv_format(kv_dtype, self.dtype, self.page_size)
        self.device = resolve_device(device)
        self.row_bytes = self.num_kv_heads * self.head_dim * (self.dtype.bits // 8)
        self.storage = KVStorage(self.device, self.num_layers, self.num_pages, self.page_size,
                                 self.num_kv_heads * self.head_dim, self.dtype.bits // 8, quant,
                                 FLOAT_WORDS.get(self.dtype.name))
        prefix = PrefixCache() if enable_prefix_cache else None
        self.allocator = PageAllocator(self.num_pages, self.page_size, self.num_layers, prefix)
        self._lock = threading.RLock()
        self._plans: dict[tuple[int, ...], GatherPlan] = {}
        self._busy: dict[int, int] = {}  # sequence -> open row transfers (see RowViews)
        self._writing: set[tuple[int, int]] = set()  # (sequence, layer) of open writes

    # -- queries -------------------------------------------------------------------------
    @property
    def prefix_cache(self) -> PrefixCache | None:
        """The prefix cache (hits, misses, evictions), or None when disabled."""
        return self.allocator.prefix

    @property
    def num_free_pages(self) -> int:
        """Pages free or reclaimable from the prefix cache."""
        return self.allocator.available

    @property
    def seq_ids(self) -> list[int]:
        """Live sequence ids (swapped-out ones included), in creation order."""
        return list(self.allocator.seqs)

    def seq_len(self, seq_id: int, layer: int | None = None) -> int:
        """Tokens stored for ``seq_id`` in ``layer`` (default: the longest layer)."""
        state = self.allocator.seq(check_seq_id(seq_id), resident=False)
        if layer is None:
            return state.length
        return state.lens[check_index(layer, self.num_layers, "layer")]

    def block_table(self, seq_id: int) -> list[int]:
        """The page ids of ``seq_id``, in token order."""
        return list(self.allocator.seq(check_seq_id(seq_id)).pages)

    def check_invariants(self) -> None:
        """Assert the allocator invariants (reference counts, free/used disjoint, no leak)."""
        with self._lock:
            self.allocator.check()

    # -- sequences -----------------------------------------------------------------------
    def add_sequence(self, token_ids: Sequence[int] | None = None) -> int:
        """Start a sequence and return its id.

        With the prefix cache enabled and ``token_ids`` given, cached full pages of the same
        prefix are shared; ``seq_len(seq_id)`` then says how many tokens are already stored.
        """
        if isinstance(token_ids, (int, np.integer)):
            raise UnsupportedOpError("token_ids must be a list of ints, not one int",
                                     fix="pass the prompt's token ids as a list.")
        ids = None if token_ids is None else check_seq_ids(token_ids)
        if ids is not None and (len(ids) > MAX_SEQ_TOKENS or
                                any(not -(2**63) <= t < 2**63 for t in ids)):
            raise UnsupportedOpError(f"token ids must be at most {MAX_SEQ_TOKENS} int64 values",
                                     fix="pass the prompt's token ids as ints.")
        with self._lock:
            return self.allocator.add_sequence(ids)

    def fork(self, seq_id: int) -> int:
        """A new sequence sharing all of ``seq_id``'s pages (copy-on-write, no data copy)."""
        with self._lock:
            return self.allocator.fork(self._idle(seq_id, "forked"))

    def free(self, seq_id: int) -> None:
        """Drop ``seq_id``; pages nobody else uses return to the pool."""
        with self._lock:
            self.allocator.free(self._idle(seq_id, "freed"))

    def _idle(self, seq_id: int, what: str) -> int:
        """``seq_id`` checked, and without an open row transfer (the caller holds the lock)."""
        seq_id = check_seq_id(seq_id)
        if seq_id in self._busy:
            raise UnsupportedOpError(f"sequence {seq_id} cannot be {what}: "
                                     f"{self._busy[seq_id]} row transfer(s) of it are open",
                                     fix="commit or release its RowViews first.")
        return seq_id

    # -- append --------------------------------------------------------------------------
    def append(self, seq_ids: Any, layer: int, key: Any, value: Any,
               counts: Sequence[int] | None = None) -> None:
        """Write new tokens of ``layer`` for a batch: one scatter launch for key and value.

        Args:
            seq_ids: the sequences (an int or a list).
            layer: the layer index.
            key, value: [num_tokens, heads, head_dim] arrays, Tensors or device Buffers.
            counts: rows per sequence, in order; default one row each (decode) or, for a
                single sequence, all rows (prefill).

        Raises:
            OutOfPagesError: not enough pages (nothing changes).
            UnsupportedOpError: unknown, freed or swapped sequences, or bad shapes/dtypes.
        """
        self._append(check_seq_ids(seq_ids), layer, key, value, counts)

    def _append(self, ids: list[int], layer: int, key: Any, value: Any,
                counts: Sequence[int] | None) -> None:
        layer = check_index(layer, self.num_layers, "layer")
        kbuf, tokens = self._rows(key, "key")
        vbuf, vtokens = self._rows(value, "value")
        if tokens != vtokens:
            raise UnsupportedOpError(f"key has {tokens} rows but value has {vtokens}",
                                     fix="pass the same tokens for key and value.")
        per_seq = check_counts(ids, tokens, counts)
        with self._lock:
            self._not_writing(ids, layer)
            plan = self.allocator.plan_append(ids, per_seq, layer)
            self._no_copy_under_transfer(plan, ids)
            try:
                self.storage.copy_rows(plan.cow, plan.cow_rows)
                if plan.upload is None:  # a reused plan (the batch's next layer) has its slots
                    plan.upload = self.storage.upload_slots(plan.slots)
                self.storage.append(layer, kbuf, vbuf, plan.upload, tokens)
            except BaseException:
                self.allocator.overwritten(plan.evict)  # their cached contents are gone
                raise
            self.allocator.commit_append(plan)

    def append_decode(self, seq_ids: Any, layer: int, key: Any, value: Any) -> None:
        """Append exactly one token per sequence (the decode step)."""
        ids = check_seq_ids(seq_ids)
        self._append(ids, layer, key, value, ONE_EACH)

    def append_prefill(self, seq_id: int, layer: int, key: Any, value: Any) -> None:
        """Append every row of ``key``/``value`` to one sequence (the prefill step)."""
        self.append([check_seq_id(seq_id)], layer, key, value)

    def _rows(self, x: Any, what: str) -> tuple[Any, int]:
        return rows_buffer(self.device, x, what, self.dtype, self.num_kv_heads, self.head_dim)

    # -- gather --------------------------------------------------------------------------
    def _slot_map(self, ids: list[int], layer: int,
                  pad_to: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(slots, lens)``: every token's slot, sequence by sequence, in one NumPy pass.

        With ``pad_to`` each sequence covers ``pad_to`` positions, PAD_SLOT past its end.
        """
        states = [self.allocator.seq(s) for s in ids]
        return slot_map(states, layer, self.page_size, pad_to)

    def gather(self, seq_ids: Any, layer: int,
               out: Any = None) -> tuple[TensorLike, TensorLike, np.ndarray]:
        """Dense K and V of ``seq_ids`` in ``layer``, concatenated in sequence order.

        Args:
            seq_ids, layer: the sequences and the layer.
            out: optional ``(key, value)`` Buffers on the cache's device, each of at least
                total_tokens x row bytes, to write into instead of allocating (the result
                Tensors are views of them); a decode loop reuses them every step.

        Returns:
            ``(key, value, cu_seqlens)``: Tensors [total_tokens, heads, head_dim] on the
            cache's device, and int64 cumulative lengths (num_seqs + 1 entries, from 0).

        Raises:
            UnsupportedOpError: unknown, freed or swapped sequences; bad layer.
        """
        ids = check_seq_ids(seq_ids)
        layer = check_index(layer, self.num_layers, "layer")
        with self._lock:
            plan = self._gather_plan(ids, layer)
            k, v = self._gather_both(layer, plan.parts, (plan.tokens,), out)
        return k, v, plan.cu_seqlens.copy()

    def _gather_plan(self, ids: list[int], layer: int) -> GatherPlan:
        """The slots of ``ids`` in ``layer`` on the device: the kept plan while no block table,
        reference count or length it read has changed, else a new one (the caller holds the
        lock)."""
        key, version = tuple(ids), self.allocator.version
        plan = self._plans.get(key)
        if plan is not None and plan.holds(version, layer):
            return plan
        states = [self.allocator.seq(s) for s in ids]  # raises for unknown or swapped ids
        slots, lens = slot_map(states, layer, self.page_size)
        if len(self._plans) >= MAX_GATHER_PLANS or any(
                p.version != version for p in self._plans.values()):
            self._plans.clear()  # plans of older versions can never hold again
        plan = self._plans[key] = GatherPlan(
            version, states, lens.tolist(), self.storage.upload_slots(slots), int(slots.size),
            np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        return plan

    def gather_padded(self, seq_ids: Any, layer: int,
                      max_len: int | None = None) -> tuple[TensorLike, TensorLike, np.ndarray]:
        """K and V of ``seq_ids`` as [batch, max_len, heads, head_dim], zero padded.

        Args:
            seq_ids, layer: as for :meth:`gather`.
            max_len: the padded length (default: the longest sequence); must be at least it.

        Returns:
            ``(key, value, lens)`` with int64 token counts per sequence.
        """
        ids = check_seq_ids(seq_ids)
        layer = check_index(layer, self.num_layers, "layer")
        with self._lock:
            lens = np.array([self.allocator.seq(s).lens[layer] for s in ids], dtype=np.int64)
            longest = int(lens.max()) if lens.size else 0
            width = longest if max_len is None else check_index(max_len, 2**32, "max_len")
            if width < longest:
                raise UnsupportedOpError(f"max_len={max_len!r} is below the longest sequence "
                                         f"({longest} tokens)", fix="pass max_len >= it.")
            if len(ids) * width * self.row_bytes > MAX_OUTPUT_BYTES:
                raise UnsupportedOpError(f"a padded gather of {len(ids)} x {width} tokens is "
                                         "too large", fix="gather fewer sequences at once.")
            slots, _ = self._slot_map(ids, layer, pad_to=width)
            k, v = self._gather_both(layer, self.storage.upload_slots(slots), (len(ids), width))
        return k, v, lens

    def _gather_both(self, layer: int, parts: list[tuple[int, Any]], lead: tuple[int, ...],
                     out: Any = None) -> tuple[TensorLike, TensorLike]:
        tokens = math.prod(lead)
        into = out_buffers(self.device, out, tokens * self.row_bytes, self.storage.roots)
        shape = (*lead, self.num_kv_heads, self.head_dim)
        k, v = self.storage.gather(layer, parts, tokens, into)
        return (dense_tensor(self.device, k, self.dtype, shape),
                dense_tensor(self.device, v, self.dtype, shape))

    # -- block operations ----------------------------------------------------------------
    def copy_blocks(self, mapping: Mapping[int, Sequence[int]] | Sequence[tuple[int, int]]
                    ) -> None:
        """Copy whole pages on the device, in every layer and role (vLLM ``copy_blocks``).

        Args:
            mapping: ``{src: [dst, ...]}`` or ``[(src, dst), ...]``. Destinations must be
                distinct and must not also be sources.

        Raises:
            UnsupportedOpError: page ids out of range, repeated destinations, or a page that
                is both a source and a destination (checked before any copy).
        """
        items = mapping.items() if isinstance(mapping, Mapping) else \
            [(s, [d]) for s, d in mapping]
        pairs = [(check_index(s, self.num_pages, "source page"),
                  check_index(d, self.num_pages, "destination page"))
                 for s, dsts in items for d in dsts]
        dsts = [d for _, d in pairs]
        if len(set(dsts)) != len(dsts) or set(dsts) & {s for s, _ in pairs}:
            raise UnsupportedOpError("copy_blocks destinations repeat or are also sources",
                                     fix="copy into distinct pages that are not read.")
        with self._lock:
            self.storage.copy_pages(pairs)
            self.allocator.overwritten(dsts)

    def swap_out(self, seq_id: int) -> None:
        """Move ``seq_id``'s pages to host memory and release them on the device."""
        with self._lock:
            seq_id = self._idle(seq_id, "swapped out")
            state = self.allocator.seq(seq_id)
            host = self.storage.read_pages(state.pages)
            self.allocator.swap_out(seq_id, host)

    def swap_in(self, seq_id: int) -> None:
        """Bring a swapped-out sequence back into fresh device pages.

        Raises:
            OutOfPagesError: not enough pages (the sequence stays swapped out).
        """
        with self._lock:
            pages, host = self.allocator.swap_in(check_seq_id(seq_id))
            self.storage.write_pages(pages, host)  # type: ignore[arg-type]  # list from read_pages

    # -- row transfers (see RowViews) ------------------------------------------------------
    def read_rows(self, seq_id: int, layer: int) -> RowViews:
        """Views of ``seq_id``'s stored key and value rows of ``layer``, in token order, to
        send without a gather (``socket.sendmsg(rows.views)``); release it once sent.

        Raises:
            UnsupportedOpError: a device whose memory is not host memory, or a quantized
                cache (gather instead); unknown, freed or swapped sequences; bad layer.
        """
        layer = check_index(layer, self.num_layers, "layer")
        with self._lock:
            seq_id = self._rows_ok(seq_id)
            slots, _ = slot_map([self.allocator.seq(seq_id)], layer, self.page_size)
            return self._open_rows(seq_id, layer, slots, write=False)

    def write_rows(self, seq_id: int, layer: int, tokens: int) -> RowViews:
        """Reserve ``tokens`` new key and value rows of ``seq_id`` in ``layer`` and return
        views of them, in token order, to fill (``socket.recvmsg_into(rows.views)``);
        :meth:`RowViews.commit` appends them (as :meth:`append_prefill` of those rows would),
        :meth:`RowViews.release` drops them. Pages are taken and copy-on-write is done now.

        Raises:
            UnsupportedOpError: as :meth:`read_rows`; a layer with an open write already.
            OutOfPagesError: not enough pages (nothing changes).
        """
        layer = check_index(layer, self.num_layers, "layer")
        if not isinstance(tokens, int) or not 0 <= tokens <= MAX_SEQ_TOKENS:
            raise UnsupportedOpError(f"tokens must be an int in [0, {MAX_SEQ_TOKENS}], not "
                                     f"{tokens!r}", fix="pass the count of rows to write.")
        with self._lock:
            seq_id = self._rows_ok(seq_id)
            self._not_writing([seq_id], layer)
            plan = self.allocator.plan_append([seq_id], [tokens], layer, reuse=False)
            self._no_copy_under_transfer(plan, [seq_id])
            try:
                self.storage.copy_rows(plan.cow, plan.cow_rows)
            except BaseException:
                self.allocator.overwritten(plan.evict)
                raise
            self.allocator.attach(plan)
            return self._open_rows(seq_id, layer, plan.slots, write=True)

    def _not_writing(self, ids: list[int], layer: int) -> None:
        """Refuse another append to ``layer`` of a sequence with an open row write there."""
        if self._writing and any((s, layer) in self._writing for s in ids):
            raise UnsupportedOpError(f"layer {layer} of a sequence in {ids} has an open "
                                     "row write", fix="commit or release it first.")

    def _no_copy_under_transfer(self, plan: Any, ids: list[int]) -> None:
        """Refuse a plan that copies shared pages (copy-on-write) of a sequence with an open
        row transfer (the caller holds the lock): the copy would leave the transfer's views on
        the old page, which the sequence's fork could then free for reuse mid-send."""
        if plan.cow and self._busy and any(s in self._busy for s in ids):
            raise UnsupportedOpError(
                f"an append to {ids} would copy a page shared with a fork while a row "
                "transfer of its sequence is open", fix="commit or release its RowViews first.")

    @property
    def row_views(self) -> bool:
        """Whether :meth:`read_rows` and :meth:`write_rows` work here: an unquantized cache
        in host memory (its rows are the bytes a gather would return)."""
        return bool(self.device.allocator.host_memory) and self.kv_dtype is None

    def _rows_ok(self, seq_id: int) -> int:
        if not self.row_views:
            raise UnsupportedOpError(
                f"row views need an unquantized cache in host memory; this one is on "
                f"{self.device.spec} with kv_dtype {self.kv_dtype}",
                fix="use gather() and append() (they run on the device).")
        self.storage._check_open()
        return check_seq_id(seq_id)

    def _open_rows(self, seq_id: int, layer: int, slots: np.ndarray, write: bool) -> RowViews:
        """The RowViews of ``slots`` (the caller holds the lock)."""
        pools = (self.storage.pool(layer, 0).array, self.storage.pool(layer, 1).array)
        tokens = int(slots.size)
        views = row_runs(pools, slots, self.row_bytes)
        self._busy[seq_id] = self._busy.get(seq_id, 0) + 1
        if write:
            self._writing.add((seq_id, layer))

        def done(commit: bool) -> None:
            with self._lock:
                left = self._busy.pop(seq_id) - 1
                if left:
                    self._busy[seq_id] = left
                if write:
                    self._writing.discard((seq_id, layer))
                    if commit:
                        self.allocator.extend(seq_id, layer, tokens)

        return RowViews(views, tokens, 2 * tokens * self.row_bytes, done)

    # -- interchange ---------------------------------------------------------------------
    def export(self, layer: int, role: Any, seq_ids: Any = None) -> TensorLike:
        """A block-paged Hurray tensor over the live pool of ``layer`` and ``role`` (no copy).

        The descriptor carries page_size, num_pages, num_seqs, kv_role, layer_index and a u32
        block table; the tensor's ``seq_lens`` holds each sequence's token count. It aliases
        the pool: later appends show through it.

        Args:
            layer: the layer index.
            role: ``"key"``/``0`` or ``"value"``/``1``.
            seq_ids: the sequences, in order (default: every resident sequence).

        Returns:
            A block-paged Tensor whose ``seq_lens`` holds each sequence's token count.
        """
        layer = check_index(layer, self.num_layers, "layer")
        with self._lock:
            return export_layer(self, layer, role_index(role), seq_ids)

    @classmethod
    def from_tensors(cls, tensors: Mapping[str, TensorLike] | Sequence[TensorLike], *,
                     device: Any = None, seq_lens: Mapping[str, Any] | None = None,
                     dtype: Any = None, enable_prefix_cache: bool = False) -> PagedKVCache:
        """Import block-paged K/V tensors (as :meth:`export` or a file produces them).

        Sequence ``s`` of the tensors becomes sequence id ``s``. Every table is validated
        before anything is allocated or any kernel runs.

        Args:
            tensors: name -> Tensor, or a list; one key and one value per layer 0..L-1, all
                with the same geometry, block table and seq_ptr.
            device: where the cache lives (default: the first tensor's device).
            seq_lens: name -> token counts; default each tensor's ``seq_lens``, else full
                pages when they add up to shape[0] (docs/format.md, Token counts per sequence).
            dtype: the dtype append takes and gather returns; default the tensors' dtype, or
                float16 for int8 / float8_e4m3 tensors (imported as that kv_dtype).
            enable_prefix_cache: as for the constructor.

        Raises:
            HurrayFormatError: bad layout, role, layer, seq_ptr, page ids or seq_lens.
            UnsupportedOpError: quantization a cache cannot store, tensors from different
                caches, or a ``dtype`` that differs from unquantized tensors' element type
                (pages are imported as they are, never reinterpreted).
        """
        plan = plan_import(tensors, device=device, seq_lens=seq_lens, dtype=dtype)
        geo = plan.geometry
        cache = cls(plan.device, plan.layers, geo.heads, geo.head_dim, geo.num_pages,
                    geo.page_size, plan.dtype, geo.kv, enable_prefix_cache=enable_prefix_cache)
        fill_cache(cache, plan)
        return cache

    def save(self, path: Any, seq_ids: Any = None) -> None:
        """Write the cache to a ``.hrry`` file: ``layers.<L>.key|value`` plus seq_lens KV."""
        with self._lock:
            save_cache(self, path, seq_ids)

    @classmethod
    def load(cls, path: Any, device: Any = "cpu", *, dtype: Any = None,
             enable_prefix_cache: bool = False) -> PagedKVCache:
        """Read a cache written by :meth:`save` (or any block-paged K/V file) onto ``device``.

        Raises:
            HurrayFormatError: a malformed file, tables or seq_lens.
        """
        tensors, lens = load_tensors(path)
        return cls.from_tensors(tensors, device=device, seq_lens=lens, dtype=dtype,
                                enable_prefix_cache=enable_prefix_cache)

    def close(self) -> None:
        """Release the device pools; the cache is unusable afterwards.

        Raises:
            UnsupportedOpError: row transfers are open (their views point into the pools).
        """
        with self._lock:
            if self._busy:
                raise UnsupportedOpError(f"{sum(self._busy.values())} row transfer(s) are "
                                         "open", fix="commit or release every RowViews first.")
            self.storage.free()
            self._plans.clear()

    def __repr__(self) -> str:
        return (f"PagedKVCache({self.device.spec}, layers={self.num_layers}, "
                f"heads={self.num_kv_heads}, head_dim={self.head_dim}, pages={self.num_pages}"
                f"x{self.page_size}, dtype={self.dtype.name}, seqs={len(self.allocator.seqs)})")
