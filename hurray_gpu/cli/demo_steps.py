"""The demo's steps: each one runs real work, times it, names where it ran and checks it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hurray_gpu.cli.demo_model import QuantizedWeight

__all__ = ["HOST", "Recorder", "Step", "kv_snapshot", "load_weights", "dequantize_all",
           "dlpack_handoff", "recheck",
           "vyre_checksum"]

HOST = "host (NumPy)"
# KV-cache geometry of the demo: 2 KV heads of 32, pages of 8 tokens, a 16-token prefix.
KV_HEADS, KV_HEAD_DIM, KV_PAGE, KV_PREFIX, KV_TAIL = 2, 32, 8, 16, 5


@dataclass
class Step:
    """One row of the demo table."""

    step: str
    where: str
    seconds: float = 0.0
    nbytes: int = 0
    check: str = ""
    ok: bool | None = None

    @property
    def gbps(self) -> float | None:
        """Bytes moved or produced per second, in GB/s (None when no bytes are counted)."""
        return self.nbytes / self.seconds / 1e9 if self.nbytes and self.seconds > 0 else None


@dataclass
class Recorder:
    """Collects steps and notes; ``timed`` measures one step."""

    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    echo: Any = None

    @contextmanager
    def timed(self, step: str, where: str, nbytes: int = 0) -> Iterator[Step]:
        """Time the body; the yielded Step's ``check``/``ok``/``nbytes`` may be set inside."""
        row = Step(step, where, nbytes=nbytes)
        start = time.perf_counter()
        yield row
        row.seconds = time.perf_counter() - start
        self.steps.append(row)
        if self.echo is not None:
            self.echo(row)

    @property
    def all_ok(self) -> bool:
        """True when no step's check failed."""
        return all(s.ok is not False for s in self.steps)


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def kv_snapshot(rec: Recorder, dev: Any, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fill a paged KV cache on ``dev``: a prefill, a fork sharing its prefix pages, and two
    different continuations; gather and check; export block-paged tensors for the file.

    Returns:
        ``(tensors, metadata)`` to store in the .hrry file.
    """
    from hurray_gpu.kv_cache import PagedKVCache
    from hurray_gpu.kv_cache.interchange import export_layer, tensor_name

    rng = np.random.default_rng(seed)
    rows = (KV_HEADS, KV_HEAD_DIM)
    prefix_k, prefix_v = (rng.standard_normal((KV_PREFIX, *rows)).astype(np.float16)
                          for _ in range(2))
    tails = [[rng.standard_normal((KV_TAIL, *rows)).astype(np.float16) for _ in range(2)]
             for _ in range(2)]
    cache = PagedKVCache(dev, 1, KV_HEADS, KV_HEAD_DIM, num_pages=16, page_size=KV_PAGE,
                         dtype="float16")
    nbytes = 2 * (prefix_k.nbytes + sum(t.nbytes for pair in tails for t in pair))
    with rec.timed("KV cache: prefill, fork (shared prefix), 2 continuations", dev.spec,
                   nbytes) as row:
        first = cache.add_sequence()
        cache.append_prefill(first, 0, prefix_k, prefix_v)
        second = cache.fork(first)
        for seq, (k, v) in zip((first, second), tails, strict=True):
            cache.append_prefill(seq, 0, k, v)
        dev.synchronize()
        shared = sum(a == b for a, b in zip(cache.block_table(first), cache.block_table(second),
                                            strict=False))
        row.check = f"{shared} of {len(cache.block_table(first))} pages shared"
        row.ok = shared == KV_PREFIX // KV_PAGE
    with rec.timed("KV cache: gather both sequences, check", dev.spec, nbytes) as row:
        key, value, _ = cache.gather([first, second], 0)
        got_k, got_v = key.to("cpu").numpy(), value.to("cpu").numpy()
        want_k = np.concatenate([prefix_k, tails[0][0], prefix_k, tails[1][0]])
        want_v = np.concatenate([prefix_v, tails[0][1], prefix_v, tails[1][1]])
        row.ok = _bits_equal(got_k, want_k) and _bits_equal(got_v, want_v)
        row.check = "bit-exact vs NumPy" if row.ok else "MISMATCH vs NumPy"
    tensors: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for role in (0, 1):
        name = "kv_cache." + tensor_name(0, role)
        t = export_layer(cache, 0, role)
        tensors[name] = t if t.is_host else t.to("cpu")
        metadata[f"{name}.seq_lens"] = [int(n) for n in t.seq_lens or ()]
    cache.close()
    return tensors, metadata


def load_weights(rec: Recorder, path: Path, names: list[str], dev: Any,
                 progress: bool | None) -> dict[str, Any]:
    """Read the weights from the file and move them to ``dev`` (progress bar when asked)."""
    from hurray_gpu.io import open_file

    with open_file(path) as f:
        host = {n: f.read(n) for n in names}
    total = sum(t.nbytes for t in host.values())
    with rec.timed(f"load {len(names)} tensors onto the device", dev.spec, total) as row:
        on_dev = {n: t.to(dev, progress=progress) for n, t in host.items()}
        dev.synchronize()
        row.check = f"on {dev.spec}: " + ", ".join(sorted({t.device.spec
                                                           for t in on_dev.values()}))
        row.ok = all(t.device is dev for t in on_dev.values())
    return on_dev


def dequantize_all(rec: Recorder, weights: list[QuantizedWeight], on_dev: dict[str, Any],
                   dev: Any) -> dict[str, Any]:
    """Dequantize every weight on ``dev`` to f32, copy back, and compare bit for bit."""
    from hurray_gpu.ops import dequantize

    results = {}
    for w in weights:
        t = on_dev[w.name]
        out_bytes = w.expected.nbytes
        dequantize(t, "float32")  # warm-up: the first call compiles (or loads) the kernel
        dev.synchronize()
        with rec.timed(f"dequantize {w.name.removesuffix('.weight')} [{w.label}]", dev.spec,
                       t.nbytes + out_bytes) as row:
            result = dequantize(t, "float32")
            dev.synchronize()
        results[w.name] = result
        got = result.to("cpu").numpy()
        exact = _bits_equal(got, w.expected)
        rel = float(np.sqrt(((got - w.original) ** 2).mean() / (w.original ** 2).mean()))
        row.ok = exact
        row.check = (f"{'bit-exact' if exact else 'MISMATCH'} vs NumPy; "
                     f"rel. RMS error vs fp32 {rel:.2%}")
    rec.notes.append("dequantize and materialize rows are warm runs (a first call compiled or "
                     "loaded each kernel); GB/s counts stored bytes read plus result bytes "
                     "written.")
    return results


def recheck(rec: Recorder, weights: list[QuantizedWeight], results: dict[str, Any],
            dev: Any) -> None:
    """Compare every result again at the end: results must stay intact while later work runs
    (catches device memory handed out again while a result still uses it)."""
    with rec.timed("re-check every result after all steps", dev.spec) as row:
        bad = [w.name for w in weights
               if results[w.name].to("cpu").numpy().tobytes() != w.expected.tobytes()]
        row.ok = not bad
        row.check = "all bit-exact vs NumPy" if not bad else "CHANGED: " + ", ".join(bad)


def dlpack_handoff(rec: Recorder, result: Any, dev: Any) -> np.ndarray:
    """Hand one dequantized tensor to PyTorch (if installed) or NumPy through DLPack and prove
    by pointer that no copy was made."""
    torch: Any = None
    with contextlib.suppress(ImportError):
        import torch  # optional, imported before timing: the demo never requires it
    where = dev.spec if dev.allocator.host_memory else "host copy of " + dev.spec
    with rec.timed("DLPack handoff (zero-copy)", where) as row:
        host = result if result.is_host else result.to("cpu")
        # The consumer takes the hurray Tensor itself (Tensor.__dlpack__), not a NumPy view.
        source_ptr = (host.buffers[0].array.ctypes.data
                      + host.descriptor.byte_offset)
        if torch is not None:
            handed = torch.from_dlpack(host)
            ptr, target = handed.data_ptr(), "torch"
        else:
            handed = np.from_dlpack(host)
            ptr, target = handed.__array_interface__["data"][0], "NumPy"
        arr = host.numpy()
        row.ok = ptr == source_ptr
        row.check = f"{target} 0x{ptr:x} == buffer 0x{source_ptr:x}"
    if not dev.allocator.host_memory:
        rec.notes.append(f"{dev.spec} buffers have no DLPack export here: the handoff is of the "
                         "host copy, zero-copy from there.")
    return arr


def _checksum_program(n: int) -> Any:
    from vyre import builder as b

    return b.program(
        [b.read("words", 0, b.U32, n), b.output("sum", 1, b.U32, 1)],
        [b.let("i", b.invocation_id(0)),
         b.if_(b.lt(b.var("i"), b.buf_len("words")),
               [b.let("old", b.atomic_add("sum", 0, b.rotate_left(
                   b.load("words", b.var("i")), b.bit_and(b.var("i"), 31))))])],
        workgroup_size=(64, 1, 1))


def numpy_checksum(words: np.ndarray) -> int:
    """Sum over i of rotl32(words[i], i mod 32), mod 2^32 (what the vyre program computes)."""
    x = words.astype(np.uint64)
    r = np.arange(x.size, dtype=np.uint64) & np.uint64(31)
    rot = ((x << r) | (x >> ((np.uint64(32) - r) & np.uint64(31)))) & np.uint64(0xFFFFFFFF)
    return int(rot.sum() % (1 << 32))


def vyre_checksum(rec: Recorder, arr: np.ndarray, name: str, dev: Any) -> None:
    """Run a vyre checksum program over the f32 bits of ``arr``: encode to VIR0, decode, lower
    and run it on ``dev``, and compare with NumPy and with the vyre reference interpreter."""
    import vyre

    words = np.ascontiguousarray(arr).view(np.uint32).reshape(-1)
    blob = vyre.to_wire(_checksum_program(words.size))
    program = vyre.from_wire(blob)
    grid = (-(-words.size // 64), 1, 1)
    inputs = {"words": words.tobytes()}
    vyre.run(program, inputs, grid=grid, device=dev)  # warm: lower and compile once
    with rec.timed(f"vyre checksum of {name} ({words.size} words, VIR0 {len(blob)} B)",
                   dev.spec, words.nbytes) as row:
        got = int(vyre.run(program, inputs, grid=grid, device=dev)["sum"][0])
    oracle = int(vyre.reference.run(program, inputs, grid=grid)["sum"][0])
    want = numpy_checksum(words)
    row.ok = got == want == oracle
    row.check = (f"0x{got:08x} {'==' if row.ok else '!='} NumPy 0x{want:08x}, "
                 f"reference interpreter 0x{oracle:08x}")
