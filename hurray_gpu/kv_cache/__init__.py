"""Paged KV cache on device (vLLM-style paging) with Hurray block-paged interchange.

See :class:`PagedKVCache`; pages are exported and imported as block-paged (0x0A) tensors.
"""

from __future__ import annotations

from hurray_gpu.kv_cache.allocator import OutOfPagesError, PageAllocator
from hurray_gpu.kv_cache.cache import PagedKVCache
from hurray_gpu.kv_cache.prefix import PrefixCache, page_hash
from hurray_gpu.kv_cache.rows import RowViews

__all__ = ["OutOfPagesError", "PageAllocator", "PagedKVCache", "PrefixCache", "RowViews",
           "page_hash"]
