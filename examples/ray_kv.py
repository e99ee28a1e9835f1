"""Disaggregated prefill and decode under Ray: two actors, each in its own process with its own
PagedKVCache, move a prompt's K/V pages from the prefill cache to the decode cache

(a) through Ray's object store: the prefill actor ``ray.put``s the block-paged tensors that
    ``PagedKVCache.export`` returns (the buffers travel out of band, pickle protocol 5) and the
    decode actor imports what ``ray.get`` maps, zero-copy, with ``PagedKVCache.from_tensors``;
(b) through the Hurray network protocol: the decode actor serves its cache with ``hg.serve``
    and the prefill actor PUTs ``kv/<name>/<layer>`` ([2, tokens, heads, head_dim]), which
    appends the tokens to the sequence ``<name>`` of the served cache (docs/interchange.md).

Usage: python examples/ray_kv.py     (needs ``pip install ray``, or ``hurray_gpu[ray]``)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import ray

import hurray_gpu as hg

# One geometry for both caches: 2 layers, 2 KV heads of 8 float16 elements, pages of 4 tokens.
GEOMETRY: dict[str, Any] = {"num_layers": 2, "num_kv_heads": 2, "head_dim": 8,
                            "num_pages": 16, "page_size": 4, "dtype": "float16"}

# Per sequence, per layer: (key, value), each [tokens, heads, head_dim].
PromptKV = list[list[tuple[np.ndarray, np.ndarray]]]


def prompt_kv(lengths: list[int], seed: int) -> PromptKV:
    """Reproducible K/V for prompts of ``lengths`` tokens (what a model's prefill computes)."""
    rng = np.random.default_rng(seed)
    shape = (GEOMETRY["num_kv_heads"], GEOMETRY["head_dim"])
    return [[(rng.standard_normal((n, *shape)).astype(np.float16),
              rng.standard_normal((n, *shape)).astype(np.float16))
             for _ in range(GEOMETRY["num_layers"])] for n in lengths]


@ray.remote
class Prefill:
    """Owns the prefill cache: appends prompts, then hands their pages on."""

    def __init__(self) -> None:
        self.cache = hg.PagedKVCache("cpu", **GEOMETRY)

    def prefill(self, prompts: PromptKV) -> list[int]:
        """Append every prompt's K/V, layer by layer; returns the sequence ids."""
        seqs = []
        for layers in prompts:
            seq = self.cache.add_sequence()
            for layer, (key, value) in enumerate(layers):
                self.cache.append_prefill(seq, layer, key, value)
            seqs.append(seq)
        return seqs

    def export(self) -> list[Any]:
        """(a) Every layer's key and value pages as block-paged tensors, put into the object
        store; the reference travels in a list so that Ray hands it on without fetching it."""
        tensors = {f"layers.{layer}.{role}": self.cache.export(layer, role)
                   for layer in range(self.cache.num_layers) for role in ("key", "value")}
        return [ray.put(tensors)]

    def send(self, url: str, names: dict[str, int]) -> None:
        """(b) PUT each named sequence's K/V, one ``kv/<name>/<layer>`` per layer, to ``url``."""
        with hg.connect(url) as client:
            for name, seq in names.items():
                for layer in range(self.cache.num_layers):
                    key, value, _ = self.cache.gather(seq, layer)
                    client.put(f"kv/{name}/{layer}", np.stack([key.numpy(), value.numpy()]))


@ray.remote
class Decode:
    """Owns the decode cache: imported from the object store, or filled by network PUTs."""

    def __init__(self) -> None:
        self.cache: Any = None
        self.server: Any = None

    def import_pages(self, refs: list[Any]) -> list[int]:
        """(a) Build the cache from the exported tensors; returns its sequence ids."""
        self.cache = hg.PagedKVCache.from_tensors(ray.get(refs[0]))
        return self.cache.seq_ids

    def serve(self) -> str:
        """(b) Serve an empty cache of the same geometry; returns the URL to PUT to."""
        self.cache = hg.PagedKVCache("cpu", **GEOMETRY)
        self.server = hg.serve(self.cache, port=0, background=True)
        return str(self.server.url)

    def gather(self, seq: int | str) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per layer, the dense K and V of a sequence (an id, or a name PUTs created)."""
        seq_id = self.server.kv_sequences[seq] if isinstance(seq, str) else seq
        out = []
        for layer in range(self.cache.num_layers):
            key, value, _ = self.cache.gather(seq_id, layer)
            out.append((key.numpy(copy=True), value.numpy(copy=True)))
        return out

    def close(self) -> None:
        """Stop serving and free the cache."""
        if self.server is not None:
            self.server.close()
        if self.cache is not None:
            self.cache.close()


def same_bits(got: list[tuple[np.ndarray, np.ndarray]],
              want: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """True when every layer's K and V hold exactly the same bits."""
    return len(got) == len(want) and all(
        a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        for pair_got, pair_want in zip(got, want, strict=True)
        for a, b in zip(pair_got, pair_want, strict=True))


def main() -> int:
    """Run both handoffs on a local Ray cluster and check the decode side bit for bit."""
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 << 20)
    try:
        prompts = prompt_kv([7, 5], seed=0)
        prefill, decode = Prefill.remote(), Decode.remote()  # type: ignore[attr-defined]
        seqs = ray.get(prefill.prefill.remote(prompts))
        ray.get(decode.import_pages.remote(prefill.export.remote()))
        for seq, want in zip(seqs, prompts, strict=True):
            assert same_bits(ray.get(decode.gather.remote(seq)), want)
        print(f"object store: {len(seqs)} sequences imported bit for bit")
        url = ray.get(decode.serve.remote())
        names = {f"request-{i}": seq for i, seq in enumerate(seqs)}
        ray.get(prefill.send.remote(url, names))
        for name, want in zip(names, prompts, strict=True):
            assert same_bits(ray.get(decode.gather.remote(name)), want)
        print(f"network protocol ({url}): {len(names)} sequences appended bit for bit")
        ray.get(decode.close.remote())
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
