"""Seed inputs for every harness: the golden vectors plus round-trip outputs of the writers.

Each seed starts with the harness's control byte (see each harness module's docstring).
"""

from __future__ import annotations

import functools
import importlib.util
import io
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_HURRAY = ROOT / "tests" / "golden" / "hurray" / "descriptors"
GOLDEN_VYRE = ROOT / "tests" / "golden" / "vyre"
GOLDEN_PROTOCOL = ROOT / "tests" / "golden" / "protocol" / "vectors.json"


def _load_test_module(name: str, path: Path) -> ModuleType:
    """Import a test helper module by path (tests/ is not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def io_samples() -> ModuleType:
    """tests/hurray/_io_samples.py (sample tensors of every layout)."""
    return _load_test_module("_io_samples", ROOT / "tests" / "hurray" / "_io_samples.py")


@functools.lru_cache(maxsize=1)
def sample_tensors() -> dict[str, object]:
    """Named sample Tensors: every NumPy dtype, every layout family, composites."""
    from hurray_gpu.tensor import Tensor

    s = io_samples()
    out: dict[str, object] = {f"np_{k}": Tensor.from_numpy(v) for k, v in s.NUMPY_SAMPLES.items()}
    out.update(s.layout_samples())
    out.update({"per_channel": s.quantized_per_channel(), "coo_sorted": s.coo(),
                "strided_view": s.strided(), "partition": s.partition(),
                "overlay": s.overlay(), "nested_group": s.nested_group()})
    out.update(s.hostile_samples())  # structures that once escaped a bound
    return out


@functools.lru_cache(maxsize=1)
def descriptor_seeds() -> tuple[bytes, ...]:
    """Golden descriptors and every sample tensor's descriptor (members included)."""
    raw = [p.read_bytes() for p in sorted(GOLDEN_HURRAY.glob("*.bin"))]
    stack = list(sample_tensors().values())
    while stack:
        t = stack.pop()
        raw.append(t.descriptor_bytes)  # type: ignore[attr-defined]
        stack.extend(t.members)  # type: ignore[attr-defined]
    out = []
    for i, d in enumerate(dict.fromkeys(raw)):
        out.append(bytes([i & 1]) + d)  # strict / permissive, whole-buffer decode
        if i % 3 == 0:
            out.append(bytes([0x06 | (i & 1)]) + b"\0" + d + b"tail")  # prefix at offset 1
    return tuple(out)


def _stream(tensors: list[object]) -> bytes:
    from hurray_gpu.io import StreamWriter

    buf = io.BytesIO()
    with StreamWriter(buf) as w:
        for t in tensors:
            w.write(t)  # type: ignore[arg-type]
        return buf.getvalue()


@functools.lru_cache(maxsize=1)
def stream_seeds() -> tuple[bytes, ...]:
    """Raw streams written by StreamWriter: one per sample, a few mixed ones, the empty one."""
    samples = sample_tensors()
    names = sorted(samples)
    streams = [_stream([samples[n]]) for n in names]
    streams.append(_stream([samples[n] for n in ("np_float32", "partition", "csr", "np_int4")]))
    streams.append(_stream([samples[n] for n in ("overlay", "nested_group", "per_block")]))
    streams.append(b"")
    # Control byte: the low two bits pick the source kind (bytes, file, pipe-like, BytesIO).
    return tuple(bytes([i % 4]) + s for i, s in enumerate(streams))


def _hrry(tensors: dict[str, object], metadata: dict[str, object] | None = None,
          **kwargs: object) -> bytes:
    from hurray_gpu.io import save

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "seed.hrry")
        save(path, tensors, metadata, **kwargs)  # type: ignore[arg-type]
        return Path(path).read_bytes()


@functools.lru_cache(maxsize=1)
def hrry_seeds() -> tuple[bytes, ...]:
    """Small ``.hrry`` files written by save(): tensors, composites, KV metadata, empty."""
    from hurray_gpu.io import UInt64

    s = sample_tensors()
    meta = {"name": "fuzz", "n": -3, "u": UInt64(2**64 - 1), "f": 1.5, "ok": True,
            "blob": b"\x00\x01", "ints": [1, 2, 3], "names": ["a", "b"]}
    files = [
        _hrry({"w": s["np_float32"], "flags": s["np_bool"]}, meta),
        _hrry({"part": s["partition"]}),
        _hrry({"q": s["per_channel"], "i4": s["np_int4"]}, sorted_index=True),
        _hrry({"ov": s["overlay"], "nest": s["nested_group"]}, {"k": 1}),
        _hrry({"csr": s["csr"], "bp": s["block_paged"]}),
        _hrry({n: s[n] for n in ("broadcast_partition", "staircase", "group_in_partition",
                                 "deep_groups", "broadcast")}),
        _hrry({}, {"only": "metadata"}),
        _hrry({}),
    ]
    # Control byte bit 0 set: the harness recomputes the index CRC-32C after mutation.
    return tuple(bytes([1 | (i & 2) << 1]) + f for i, f in enumerate(files))


@functools.lru_cache(maxsize=1)
def vir0_seeds() -> tuple[bytes, ...]:
    """Golden VIR0 blobs and the vyre test corpus programs (every tag, casts, buffer fields)."""
    corpus = _load_test_module("corpus", ROOT / "tests" / "vyre" / "corpus.py")
    from vyre import UnknownExtensionError, from_wire

    blobs = list(dict.fromkeys(corpus.corpus_blobs()))
    # Control byte: bit 0 preserve_unknown (always set for blobs with unregistered extension
    # kinds), bit 1 keep the digest as mutated (no rehash).
    out = []
    for i, blob in enumerate(blobs):
        try:
            from_wire(blob)
            ctl = i & 1
        except UnknownExtensionError:
            ctl = 1
        out.append(bytes([ctl]) + blob)
    return tuple(out) + tuple(bytes([0]) + blob for blob in _hostile_vir0())


def _hostile_vir0() -> list[bytes]:
    """Structures that once escaped a bound: an endless loop over a long expression (minutes
    to reach the reference's step bound), and statements and expressions nested to the
    decoder's depth bound (a mutation away from past it)."""
    from vyre import builder as b
    from vyre import ir, to_wire

    e: ir.Expr = b.load("o", 0)
    for i in range(25):
        e = b.add(b.mul(e, 3), i)
    body: list[ir.Node] = [b.return_()]
    for _ in range(62):  # Region + 62 Blocks + Return: 64 levels
        body = [b.block(*body)]
    chain: ir.Expr = b.lit_u32(0)
    for _ in range(61):  # Region + Let + 61 negations + the literal: 64 levels
        chain = b.unop(ir.UnOp.NEGATE, chain)
    return [to_wire(b.program([b.read_write("o", 0, b.U32, 1)],
                              [ir.forever((b.store("o", 0, e),))])),
            to_wire(b.program([], body)), to_wire(b.program([], [b.let("x", chain)]))]


@functools.lru_cache(maxsize=1)
def protocol_seeds() -> tuple[bytes, ...]:
    """The golden interchange messages one by one, a whole get and put conversation, and
    TENSOR_DESCRIPTOR / TENSOR_PUT messages around sample tensors' descriptors."""
    import json

    from hurray_gpu.format import protocol as P

    golden = [bytes.fromhex(v["hex"])
              for v in json.loads(GOLDEN_PROTOCOL.read_text(encoding="utf-8"))]
    # Control byte: bit 2 rewrites payload_length (one message); bits 0-1 vary the source
    # kind and the maximum size (every seed is under 4 KiB).
    out = [bytes([4 | (i & 3)]) + m for i, m in enumerate(golden)]
    out += [bytes([i & 3]) + b"".join(golden[i::3]) for i in range(3)]
    samples = sample_tensors()
    for i, name in enumerate(("np_float32", "np_int4", "csr", "per_channel", "block_paged")):
        desc = samples[name].descriptor_bytes  # type: ignore[attr-defined]
        msgs = [P.TensorDescriptorMsg(desc, 16, 0, 2), P.TensorData(0, bytes(range(16))),
                P.TensorDataEnd(), P.TensorPut(name, desc, 0), P.TensorPutAck()]
        out.append(bytes([i & 1]) + b"".join(P.encode(m, 2 + i) for m in msgs))
    return tuple(out)


def write_seeds(harness: str, folder: str | os.PathLike[str]) -> int:
    """Write one harness's seeds into ``folder`` as ``seed-NNNN`` files.

    Returns:
        The number of seeds written.
    """
    from .convert import seeds as convert_seeds
    from .kv_seeds import kv_import_seeds

    seeds = {"descriptor": descriptor_seeds, "stream": stream_seeds, "hrry": hrry_seeds,
             "vir0": vir0_seeds, "kv_import": kv_import_seeds,
             "protocol": protocol_seeds, "convert": convert_seeds}[harness]()
    os.makedirs(folder, exist_ok=True)
    for i, data in enumerate(seeds):
        Path(folder, f"seed-{i:04d}").write_bytes(data)
    return len(seeds)
