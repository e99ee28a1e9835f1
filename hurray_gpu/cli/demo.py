"""``hurray-gpu demo``: quantize a small model's weights, store them with a KV-cache snapshot in
a .hrry file, inspect it, load it onto a device, dequantize there and check every result against
NumPy, hand one result over by DLPack, checksum it with a vyre program; time every step.

The model's weights are quantized in NumPy into the Hurray formats; each quantizer also returns
the exact f32 dequantization NumPy computes from the stored codes (the Hurray spec's
dequantization formulas), which the device results must match bit for bit. The layout tensors
are a tiled float16 embedding and an SpQR-style overlay composite (int4 per-block base plus a
float16 COO outlier correction). Each step runs real work, times it, names where it ran and
checks it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from hurray_gpu.cli.common import dump_json, show, table
from hurray_gpu.format.descriptor import TensorDescriptor
from hurray_gpu.format.descriptor.layouts import Composite, Tiled
from hurray_gpu.format.descriptor.sections import CompositeMember, Shard
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.io import open_file, report, save
from hurray_gpu.kv_cache import PagedKVCache
from hurray_gpu.kv_cache.interchange import export_layer, tensor_name
from hurray_gpu.ops import dequantize
from hurray_gpu.ops.host import relayout, sparsify
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.ops.plan import nf4_table
from hurray_gpu.ops.quantize import quantized_tensor
from hurray_gpu.runtime.registry import resolve_device
from hurray_gpu.tensor import Tensor
from vyre import builder as b

__all__ = [
    "HOST", "OUTLIER_FRACTION", "QuantizedWeight", "Recorder", "Step", "add_parser",
    "build_weights", "dequantize_all", "dlpack_handoff", "kv_snapshot", "layout_tensors",
    "load_weights", "recheck", "run_demo", "vyre_checksum",
]


log = logging.getLogger(__name__)

# Largest finite magnitude and exponent of the top binade of each MX element type.
MX_ELEMENTS = {"float4_e2m1": (ml_dtypes.float4_e2m1fn, 6.0, 2),
               "float8_e4m3": (ml_dtypes.float8_e4m3fn, 448.0, 8)}


@dataclass
class QuantizedWeight:
    """One stored weight: its Hurray tensor, the NumPy dequantization and the source floats."""

    name: str
    label: str
    tensor: Any
    expected: np.ndarray
    original: np.ndarray


def _blocks(w: np.ndarray, block: int) -> np.ndarray:
    rows, cols = w.shape
    return w.reshape(rows, cols // block, block)


def int4_per_block(w: np.ndarray, block: int = 32) -> tuple[Any, np.ndarray]:
    """Symmetric int4 with one float16 scale per block of ``block`` along the last axis."""
    wb = _blocks(w, block)
    scales = (np.abs(wb).max(axis=2) / 7.0).astype(np.float16)
    s32 = scales.astype(np.float32)[..., None]
    q = np.clip(np.rint(wb / s32), -8, 7).astype(np.int8)
    expected = (s32 * q.astype(np.float32)).reshape(w.shape)
    t = quantized_tensor(q.reshape(w.shape).astype(ml_dtypes.int4), "int4", "per_block",
                         axis=1, block_size=block, scales=scales.reshape(-1),
                         scale_type="float16")
    return t, expected


def nf4(w: np.ndarray, block: int = 64) -> tuple[Any, np.ndarray]:
    """NF4: per-block f32 absmax and the nearest of the 16 NF4 levels."""
    table = nf4_table()
    wb = _blocks(w, block)
    absmax = np.abs(wb).max(axis=2).astype(np.float32)
    norm = wb / absmax[..., None]
    codes = np.abs(norm[..., None] - table).argmin(axis=-1).astype(np.uint8)
    expected = (absmax[..., None] * table[codes]).reshape(w.shape)
    t = quantized_tensor(codes.reshape(w.shape).astype(ml_dtypes.uint4), "uint4", "nf4",
                         axis=1, block_size=block, scales=absmax.reshape(-1))
    return t, expected


def mx(w: np.ndarray, storage: str, block: int = 32) -> tuple[Any, np.ndarray]:
    """MXFP: a shared power-of-two (e8m0) scale per block of 32, elements in ``storage``."""
    np_type, max_value, emax = MX_ELEMENTS[storage]
    wb = _blocks(w, block)
    absmax = np.maximum(np.abs(wb).max(axis=2), np.float32(2.0 ** -100))
    exp = np.clip(np.floor(np.log2(absmax)).astype(np.int32) - emax, -126, 127)
    scale = np.exp2(exp.astype(np.float32))[..., None]
    elems = np.clip(wb / scale, -max_value, max_value).astype(np_type)
    expected = (scale * elems.astype(np.float32)).reshape(w.shape)
    t = quantized_tensor(elems.reshape(w.shape), storage, "mxfp", axis=1, block_size=block,
                         scales=(exp + 127).astype(np.uint8).reshape(-1))
    return t, expected


def int8_per_channel(w: np.ndarray) -> tuple[Any, np.ndarray]:
    """Symmetric int8 with one f32 scale per output row (axis 0)."""
    scales = (np.abs(w).max(axis=1) / 127.0).astype(np.float32)
    q = np.clip(np.rint(w / scales[:, None]), -127, 127).astype(np.int8)
    expected = scales[:, None] * q.astype(np.float32)
    return quantized_tensor(q, "int8", "per_channel", axis=0, scales=scales), expected


def build_weights(d_model: int, seed: int = 0) -> list[QuantizedWeight]:
    """Two transformer layers' projection weights, each in a different Hurray format.

    Args:
        d_model: the hidden size (a multiple of 64).
        seed: the random seed of the Gaussian weights.

    Returns:
        The quantized weights in file order.
    """
    rng = np.random.default_rng(seed)
    d, ff = d_model, 4 * d_model
    plan = [
        ("layers.0.attn.qkv.weight", (3 * d, d), "int4 per-block (f16 scales, block 32)",
         int4_per_block),
        ("layers.0.attn.out.weight", (d, d), "NF4 (f32 absmax, block 64)", nf4),
        ("layers.0.mlp.up.weight", (ff, d), "MXFP4 (e2m1, e8m0 scale, block 32)",
         lambda w: mx(w, "float4_e2m1")),
        ("layers.0.mlp.down.weight", (d, ff), "MXFP8 fp8 (e4m3, e8m0 scale, block 32)",
         lambda w: mx(w, "float8_e4m3")),
        ("layers.1.attn.qkv.weight", (3 * d, d), "int8 per-channel (f32 scales)",
         int8_per_channel),
    ]
    out = []
    for name, shape, label, quantize in plan:
        w = (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)
        tensor, expected = quantize(w)
        out.append(QuantizedWeight(name, label, tensor, expected, w))
    return out


# Share of the base's largest errors that the sparse correction stores exactly (SpQR keeps
# well under 1% of weights as outliers).
OUTLIER_FRACTION = 0.005
TILE = (16, 16)
_BASE, _CORRECTION = 1, 0


def _member(t: Any, parent: tuple[int, ...], role: int) -> Any:

    desc = dataclasses.replace(t.descriptor, shard=Shard(parent, (0,) * len(parent)),
                               composite_member=CompositeMember(role))
    return Tensor.from_parts(desc, list(t.buffers))


def tiled_embedding(d_model: int, seed: int) -> QuantizedWeight:
    """A float16 [8*d_model, d_model] embedding stored in 16x16 tiles."""
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((8 * d_model, d_model)).astype(np.float16)
    t = relayout(Tensor.from_numpy(emb), Tiled(TILE))
    return QuantizedWeight("embed.weight", f"float16, tiled {TILE[0]}x{TILE[1]}", t, emb,
                           emb.astype(np.float32))


def spqr_overlay(base: QuantizedWeight) -> QuantizedWeight:
    """``base`` (int4 per-block) plus the float16 residual at its largest errors, as an
    overlay composite with combine op ``add``; the head type is float16."""
    shape = tuple(int(d) for d in base.original.shape)
    residual = base.original - base.expected
    keep = max(1, int(residual.size * OUTLIER_FRACTION))
    flat = np.argsort(np.abs(residual), axis=None)[-keep:]
    correction = np.zeros(shape, np.float16)
    correction.flat[flat] = residual.flat[flat].astype(np.float16)
    base_f16 = base.expected.astype(np.float16)
    expected = (base_f16.astype(np.float32) + correction.astype(np.float32)).astype(np.float16)
    members = [_member(base.tensor, shape, _BASE),
               _member(sparsify(Tensor.from_numpy(correction), "coo"), shape, _CORRECTION)]
    head = TensorDescriptor(by_name("float16"), shape, Composite(2, 2, 2), ())
    t = Tensor.from_parts(head, [], members)
    label = f"SpQR overlay: int4 base + f16 COO, {keep} outliers"
    return QuantizedWeight(base.name.replace(".weight", ".spqr"), label, t, expected,
                           base.original)


def layout_tensors(weights: list[QuantizedWeight], d_model: int) -> list[QuantizedWeight]:
    """The tiled embedding and the SpQR overlay of the first (int4 per-block) weight."""
    return [tiled_embedding(d_model, seed=2), spqr_overlay(weights[0])]


def materialize_layouts(rec: Any, items: list[QuantizedWeight], on_dev: dict[str, Any],
                        dev: Any) -> dict[str, Any]:
    """Materialize each layout tensor on ``dev`` (gather tiles; dequantize the base, scatter-add
    the COO correction) and compare with NumPy bit for bit."""
    results = {}
    for item in items:
        t = on_dev[item.name]
        materialize(t)  # warm-up: compiles (or loads) the gather/scatter kernels
        dev.synchronize()
        with rec.timed(f"materialize {item.name} [{item.label}]", dev.spec,
                       t.nbytes + item.expected.nbytes) as row:
            result = materialize(t)
            dev.synchronize()
        results[item.name] = result
        got = result.to("cpu").numpy()
        exact = got.shape == item.expected.shape and got.tobytes() == item.expected.tobytes()
        err = got.astype(np.float32) - item.original
        rel = float(np.sqrt((err ** 2).mean() / (item.original ** 2).mean()))
        row.ok = exact
        row.check = (f"{'bit-exact' if exact else 'MISMATCH'} vs NumPy; "
                     f"rel. RMS error vs fp32 {rel:.2%}")
    return results


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
        log.info("%s ... %.1f ms", step, row.seconds * 1e3)  # progress, shown with -v
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
        metadata[f"{name}.seq_lens"] = [int(n) for n in (t.seq_lens if t.seq_lens is not None else ())]
    cache.close()
    return tensors, metadata


def load_weights(rec: Recorder, path: Path, names: list[str], dev: Any,
                 progress: bool | None) -> dict[str, Any]:
    """Read the weights from the file and move them to ``dev`` (progress bar when asked)."""
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


# Hidden sizes: the full demo and the --quick one (tests, slow machines).
D_MODEL, D_MODEL_QUICK = 256, 64


def add_parser(sub: Any) -> None:
    """Register ``demo``."""
    p = sub.add_parser("demo", help="the end-to-end demo on the best local device",
                       description=__doc__)
    p.add_argument("--device", default=None, help="device spec (default: the best local one)")
    p.add_argument("--quick", action="store_true", help=f"d_model {D_MODEL_QUICK} instead of "
                                                        f"{D_MODEL}")
    p.add_argument("--out-dir", default=None,
                   help="where to write demo.hrry (default: a temporary directory)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="force the load progress bar on or off (default: on a terminal)")
    p.add_argument("--json", action="store_true", help="print the steps as JSON")
    p.set_defaults(run=run)


def _host_steps(rec: Recorder, d_model: int, dev: Any, path: Path) -> tuple[list, list]:

    with rec.timed(f"quantize 5 weights (d_model {d_model})", HOST) as row:
        weights = build_weights(d_model)
        row.nbytes = sum(w.original.nbytes for w in weights)
        row.check = ", ".join(w.label.split(" (")[0] for w in weights)
    with rec.timed("build tiled embedding + SpQR overlay composite", HOST) as row:
        layouts = layout_tensors(weights, d_model)
        row.check = "; ".join(item.label for item in layouts)
    kv_tensors, kv_meta = kv_snapshot(rec, dev, seed=1)
    with rec.timed("save .hrry (weights, layouts, KV snapshot)", HOST) as row:
        save(path, {**{w.name: w.tensor for w in weights + layouts}, **kv_tensors},
             metadata={"producer": "hurray-gpu demo", "d_model": d_model, **kv_meta})
        row.nbytes = path.stat().st_size
        row.check = f"{path.name}, {row.nbytes:,} bytes"
    with rec.timed("inspect + validate the file", HOST, path.stat().st_size) as row:
        rep = report.inspect_file(str(path))
        kinds = sorted({t["layout"]["name"] if isinstance(t.get("layout"), dict) else "?"
                        for t in rep["tensors"]})
        row.check = f"{len(rep['tensors'])} tensors valid; layouts: {', '.join(kinds)}"
        row.ok = len(rep["tensors"]) == len(weights) + len(layouts) + len(kv_tensors)
    if not layouts:
        rec.notes.append("omitted: tiled-layout and SpQR overlay (int4 + f16 COO) "
                         "materialization on the device (not in this build).")
    return weights, layouts


def run_demo(device: Any = None, *, quick: bool = False, out_dir: str | None = None,
             progress: bool | None = None, echo: Any = None) -> Recorder:
    """Run every demo step.

    Args:
        device: a device spec, or None for :func:`hurray_gpu.default_device`.
        quick: use the small model.
        out_dir: where to write ``demo.hrry`` (a temporary directory when None).
        progress: the load progress bar (None: automatic).
        echo: called with each finished Step (printing as it goes).

    Returns:
        The Recorder with every step, its check, and the notes.

    Raises:
        BackendUnavailableError: the device cannot be opened (no silent fallback).
    """
    dev = resolve_device(device)
    rec = Recorder(echo=echo)
    rec.notes.append(f"device: {dev.spec} ({dev.name})"
                     + (" - emulated on the CPU" if dev.emulated else ""))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(out_dir or tmp) / "demo.hrry"
        path.parent.mkdir(parents=True, exist_ok=True)
        weights, layouts = _host_steps(rec, D_MODEL_QUICK if quick else D_MODEL, dev, path)
        on_dev = load_weights(rec, path, [w.name for w in weights + layouts], dev, progress)
        results = dequantize_all(rec, weights, on_dev, dev)
        if layouts:
            results.update(materialize_layouts(rec, layouts, on_dev, dev))
        arr = dlpack_handoff(rec, results[weights[1].name], dev)
        vyre_checksum(rec, arr, weights[1].name, dev)
        recheck(rec, weights + layouts, results, dev)
    return rec


def _row(s: Step) -> list[Any]:
    gbps = f"{s.gbps:.3f}" if s.gbps is not None else "-"
    mark = {True: "ok", False: "FAIL", None: ""}[s.ok]
    return [s.step, s.where, f"{s.seconds * 1e3:.1f}", gbps, mark, s.check]


def _render(rec: Recorder, total: float) -> list[Any]:
    verdict = "all checks passed" if rec.all_ok else "SOME CHECKS FAILED"
    return [table(["step", "ran on", "ms", "GB/s", "ok", "check"], [_row(s) for s in rec.steps]),
            *(f"note: {n}" for n in rec.notes), "",
            f"{verdict} ({len(rec.steps)} steps, {total:.1f} s)"]


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when every check passed, 1 otherwise."""
    start = time.perf_counter()
    # On a terminal the load always draws its bar (the automatic rule skips small transfers).
    progress = args.progress if args.progress is not None else (sys.stderr.isatty() or None)
    rec = run_demo(args.device, quick=args.quick, out_dir=args.out_dir, progress=progress)
    total = time.perf_counter() - start
    if args.json:
        print(dump_json({"ok": rec.all_ok, "seconds": total, "notes": rec.notes,
                         "steps": [{**vars(s), "gbps": s.gbps} for s in rec.steps]}))
    else:
        show(*_render(rec, total))
    return 0 if rec.all_ok else 1
