"""hg.convert without a device: the GGUF parser against gguf-py's reader, metadata, plain
sources round trip, refusals, and hostile source files (every failure a typed error)."""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hurray_gpu as hg
from hurray_gpu.errors import ConversionError, UnsupportedConversionError
from hurray_gpu.io.convert import detect_format, open_source
from hurray_gpu.io.convert.ggml_types import TYPES
from tests._support import require_peer, stable_rng
from tests.hurray._convert_samples import write_gguf, write_safetensors

SPECS = [("tok_embd", "Q4_0", (7, 64)), ("norm", "F32", (64,)), ("attn", "Q8_0", (3, 2, 96)),
         ("up", "BF16", (5, 33)), ("ids", "I32", (9,))]


@pytest.fixture()
def gguf_file(tmp_path: Path) -> Path:
    gguf = require_peer("gguf")
    meta = {"general.name": ("tiny", gguf.GGUFValueType.STRING),
            "llama.context_length": (4096, gguf.GGUFValueType.UINT32),
            "llama.rope.freq_base": (10000.0, gguf.GGUFValueType.FLOAT32),
            "tokenizer.ggml.tokens": (["<s>", "a", "b"], gguf.GGUFValueType.ARRAY),
            "tokenizer.ggml.scores": ([0.5, -1.0, 2.0], gguf.GGUFValueType.ARRAY)}
    write_gguf(tmp_path / "m.gguf", SPECS, meta)
    return tmp_path / "m.gguf"


def test_type_table_matches_gguf_py() -> None:
    gguf = require_peer("gguf")
    for type_id, (name, block, size) in TYPES.items():
        qtype = gguf.GGMLQuantizationType(type_id)
        assert qtype.name == name
        if name != "Q8_1":  # gguf-py says 40 bytes; ggml's block_q8_1 is 36 (never stored)
            assert gguf.GGML_QUANT_SIZES[qtype] == (block, size)


def test_parser_agrees_with_gguf_py_reader(gguf_file: Path) -> None:
    gguf = require_peer("gguf")
    reader = gguf.GGUFReader(str(gguf_file))
    with open_source(gguf_file) as source:
        assert source.format == "gguf"
        ours = {e.name: e for e in source.entries}
        for t in reader.tensors:
            e = ours[t.name]
            assert e.shape == tuple(reversed(t.shape.tolist()))  # ne[0] is innermost
            assert (e.offset, e.nbytes, e.kind) == (t.data_offset, t.n_bytes, t.tensor_type.name)
        meta = source.metadata()
    assert meta["gguf.llama.context_length"] == 4096
    assert meta["gguf.tokenizer.ggml.tokens"] == ["<s>", "a", "b"]
    assert meta["gguf.tokenizer.ggml.scores"] == [0.5, -1.0, 2.0]
    assert "llama.context_length=UINT32" in meta["gguf.value_types"]
    assert "tokenizer.ggml.tokens=ARRAY[STRING]" in meta["gguf.value_types"]


def test_gguf_metadata_lands_in_the_kv_section(gguf_file: Path, tmp_path: Path) -> None:
    result = hg.convert(gguf_file, tmp_path / "m.hrry")
    assert result.tensors == len(SPECS) and result.kinds["Q4_0"] == 1
    with hg.open_file(tmp_path / "m.hrry") as f:
        assert f.metadata["gguf.general.name"] == "tiny"
        assert f.metadata["gguf.llama.rope.freq_base"] == 10000.0
        assert f.names == [name for name, _, _ in SPECS]
        assert np.array_equal(f.read("ids").numpy().reshape(-1).view(np.uint8),
                              f.read("ids").buffers[0].numpy().view(np.uint8))


def test_the_format_comes_from_the_bytes_not_the_suffix(gguf_file: Path,
                                                        tmp_path: Path) -> None:
    disguised = tmp_path / "model.safetensors"
    disguised.write_bytes(gguf_file.read_bytes())
    assert detect_format(disguised) == "gguf"
    (tmp_path / "x.gguf").write_bytes(b"\x00" * 64)
    with pytest.raises(ConversionError, match="not a GGUF, safetensors, PyTorch") as info:
        hg.convert(tmp_path / "x.gguf", tmp_path / "x.hrry")
    assert "Fix:" in str(info.value)


@pytest.mark.parametrize(("kind", "reason"), [
    ("Q8_K", "dot products"), ("IQ1_S", "lattice codebook"), ("IQ2_XXS", "lattice codebook"),
    ("IQ3_S", "sign masks"), ("Q8_1", "activations")])
def test_unmapped_types_are_refused_by_name_before_writing(tmp_path: Path, kind: str,
                                                          reason: str) -> None:
    gguf = require_peer("gguf")
    qtype = getattr(gguf.GGMLQuantizationType, kind)
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    writer = gguf.GGUFWriter(str(tmp_path / "r.gguf"), "llama")
    writer.add_tensor("ok", np.zeros(4, np.float32))
    writer.add_tensor("blk.0.ffn", np.zeros((2, 256 // block * size), np.uint8), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(UnsupportedConversionError) as info:
        hg.convert(tmp_path / "r.gguf", tmp_path / "r.hrry")
    text = str(info.value)
    assert "'blk.0.ffn'" in text and f"type {kind}" in text and reason in text and "Fix:" in text
    assert not (tmp_path / "r.hrry").exists()
    clone = pickle.loads(pickle.dumps(info.value))
    assert type(clone) is UnsupportedConversionError and str(clone) == text
    assert (clone.tensor, clone.source_type) == ("blk.0.ffn", kind)


def _convert_or_typed_error(src: Path, dst: Path) -> None:
    try:
        hg.convert(src, dst)
    except ConversionError as exc:
        assert "Fix:" in str(exc)


def test_every_truncation_is_a_typed_error(gguf_file: Path, tmp_path: Path) -> None:
    data = gguf_file.read_bytes()
    with open_source(gguf_file) as source:  # gguf-py pads the file after the last tensor
        end = max(e.offset + e.nbytes for e in source.entries)
    cut = tmp_path / "cut.gguf"
    for n in sorted({*range(0, 400, 7), *range(end - 300, end, 13)}):
        cut.write_bytes(data[:n])
        with pytest.raises(ConversionError):
            hg.convert(cut, tmp_path / "cut.hrry")


def _field(data: bytes, after: bytes) -> int:
    """Offset of the 8 bytes after the first occurrence of ``after``."""
    return data.index(after) + len(after)


@pytest.mark.parametrize(("what", "patch", "message"), [
    ("tensor offset", lambda d: _patch(d, _offset_field(d), 1 << 40), "runs past the end"),
    ("misaligned offset", lambda d: _patch(d, _offset_field(d), 4), "not a multiple"),
    ("array length", lambda d: _patch(d, _field(d, b"tokenizer.ggml.tokens\x09\x00\x00\x00\x08"
                                                   b"\x00\x00\x00"), 1 << 62), "cannot fit"),
    ("string length", lambda d: _patch(d, d.index(b"\x04" + bytes(7) + b"tiny"), 1 << 50),
     "cannot fit"),
    ("tensor count", lambda d: _patch(d, 8, 1 << 40), "cannot fit"),
    ("n_dims", lambda d: d.replace(b"tok_embd\x02\x00\x00\x00", b"tok_embd\xff\x00\x00\x00"),
     "n_dims 255"),
    ("dimension", lambda d: d.replace(b"tok_embd\x02\x00\x00\x00\x40", b"tok_embd\x02\x00\x00"
                                      b"\x00\x41"), "not a multiple of the block size"),
])
def test_lying_fields_are_typed_errors(gguf_file: Path, tmp_path: Path, what: str, patch,
                                       message: str) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(patch(gguf_file.read_bytes()))
    with pytest.raises(ConversionError, match=message):
        hg.convert(bad, tmp_path / "bad.hrry")


def _offset_field(data: bytes) -> int:
    # tensor info of "norm": name, n_dims 1, ne[0] = 64, type F32 (0), then the u64 offset
    return _field(data, b"norm\x01\x00\x00\x00" + struct.pack("<QI", 64, 0))


def _patch(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + struct.pack("<Q", value) + data[at + 8:]


def test_overlapping_tensors_are_refused(gguf_file: Path, tmp_path: Path) -> None:
    data = gguf_file.read_bytes()
    with open_source(gguf_file) as source:
        first = source.entries[0]
    # point "norm" at the first tensor's data: a small file could otherwise expand
    bad = tmp_path / "overlap.gguf"
    bad.write_bytes(_patch(data, _offset_field(data), 0 if first.name != "norm" else 64))
    with pytest.raises(ConversionError, match="overlaps"):
        hg.convert(bad, tmp_path / "o.hrry")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 1023), st.integers(0, 255)), min_size=1, max_size=6))
def test_random_header_mutations_never_escape_as_other_errors(gguf_file: Path, tmp_path: Path,
                                                              edits: list) -> None:
    data = bytearray(gguf_file.read_bytes())
    header_end = 1024
    for at, value in edits:
        data[at % header_end] = value
    bad = tmp_path / "mut.gguf"
    bad.write_bytes(bytes(data))
    _convert_or_typed_error(bad, tmp_path / "mut.hrry")


PLAIN = {"w": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
         "h": stable_rng("plain", "h").normal(size=(2, 3)).astype(np.float16),
         "b": stable_rng("plain", "b").normal(size=(5,)).astype(ml_dtypes.bfloat16),
         "i": np.arange(-3, 4, dtype=np.int8), "m": np.array([True, False, True]),
         "e": np.zeros((0, 4), np.float32)}


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def test_safetensors_round_trip_keeps_every_byte(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "p.safetensors", PLAIN, {"format": "pt"})
    result = hg.convert(tmp_path / "p.safetensors", tmp_path / "p.hrry")
    assert result.source_format == "safetensors" and result.tensors == len(PLAIN)
    with hg.open_file(tmp_path / "p.hrry") as f:
        assert f.metadata == {"safetensors.format": "pt"}
        for name, value in PLAIN.items():
            got = f.read(name).numpy()
            assert got.dtype == value.dtype and got.shape == value.shape
            assert _bits(got) == _bits(value), name


@pytest.mark.parametrize(("header", "message"), [
    ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]}}, "runs past the end"),
    ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}}, "do not hold"),
    ({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 16]}}, "non-negative"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, "overlaps"),
    ({"a": {"dtype": "F8_E8M0", "shape": [16], "data_offsets": [0, 16]}}, "F8_E8M0"),
    ([1, 2], "not an object"),
])
def test_hostile_safetensors_headers_are_typed_errors(tmp_path: Path, header: object,
                                                      message: str) -> None:
    write_safetensors(tmp_path / "h.safetensors", {"a": np.zeros(4, np.float32)},
                      header=header)  # type: ignore[arg-type]
    with pytest.raises(ConversionError, match=message):
        hg.convert(tmp_path / "h.safetensors", tmp_path / "h.hrry", format="safetensors")


def test_safetensors_header_length_beyond_the_file(tmp_path: Path) -> None:
    path = tmp_path / "long.safetensors"
    path.write_bytes(struct.pack("<Q", 1 << 20) + b'{"a": 1}')
    with pytest.raises(ConversionError):
        hg.convert(path, tmp_path / "l.hrry", format="safetensors")


def test_npz_and_its_lies(tmp_path: Path) -> None:
    arrays = {k: v for k, v in PLAIN.items() if k != "b"}
    arrays["f"] = np.asfortranarray(np.arange(15, dtype=np.float64).reshape(3, 5))
    np.savez_compressed(tmp_path / "a.npz", **arrays)
    hg.convert(tmp_path / "a.npz", tmp_path / "a.hrry")
    with hg.open_file(tmp_path / "a.hrry") as f:
        for name, value in arrays.items():
            assert np.array_equal(f.read(name).numpy(), value), name
    # a member whose .npy header declares more data than the member holds
    import zipfile

    header = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }"
    header = header.ljust(127, b" ") + b"\n"
    with zipfile.ZipFile(tmp_path / "lie.npz", "w") as z:
        z.writestr("x.npy", header + b"\x00" * 16)
    with pytest.raises(ConversionError, match="declares 4000000000 data bytes"):
        hg.convert(tmp_path / "lie.npz", tmp_path / "lie.hrry")


def test_torch_state_dict_round_trip(tmp_path: Path) -> None:
    torch = require_peer("torch")
    gen = torch.Generator().manual_seed(7)
    sd = {"layer.weight": torch.randn(4, 6, generator=gen).to(torch.bfloat16),
          "layer.bias": torch.randn(6, generator=gen), "mask": torch.tensor([True, False]),
          "opt": {"step": 3, "ids": torch.arange(5)}}
    torch.save(sd, tmp_path / "m.pt")
    result = hg.convert(tmp_path / "m.pt", tmp_path / "m.hrry")
    assert result.source_format == "torch"
    with hg.open_file(tmp_path / "m.hrry") as f:
        assert f.metadata == {"torch.opt.step": 3}
        assert f.names == ["layer.weight", "layer.bias", "mask", "opt.ids"]
        w = sd["layer.weight"].view(torch.int16).numpy()
        assert _bits(f.read("layer.weight").numpy()) == _bits(w)
        assert _bits(f.read("layer.bias").numpy()) == _bits(sd["layer.bias"].numpy())
        assert f.read("mask").numpy().tolist() == [True, False]
        assert f.read("opt.ids").numpy().tolist() == [0, 1, 2, 3, 4]


def test_files_the_safetensors_package_writes(tmp_path: Path) -> None:
    torch = require_peer("torch")
    save_file = require_peer("safetensors.torch").save_file
    safe_open = require_peer("safetensors").safe_open
    gen = torch.Generator().manual_seed(22)
    tensors = {"w": torch.randn(5, 7, generator=gen).to(torch.bfloat16),
               "h": torch.randn(3, generator=gen).half(), "f": torch.randn(2, 2, 2, generator=gen),
               "i": torch.arange(-4, 4, dtype=torch.int8), "b": torch.tensor([True, False, True]),
               "l": torch.arange(3, dtype=torch.int64)}
    save_file(tensors, tmp_path / "t.safetensors", metadata={"format": "pt"})
    hg.convert(tmp_path / "t.safetensors", tmp_path / "t.hrry")
    with hg.open_file(tmp_path / "t.hrry") as f, safe_open(tmp_path / "t.safetensors",
                                                           "pt") as peer:
        assert f.metadata == {"safetensors.format": "pt"}
        for name in peer.keys():  # noqa: SIM118 - safe_open has no __iter__
            want = peer.get_tensor(name)
            got = f.read(name).numpy()
            assert got.shape == tuple(want.shape)
            raw = want.view(torch.int16) if want.dtype == torch.bfloat16 else want
            assert _bits(got) == _bits(raw.numpy()), name


def test_copy_to_works_without_a_file_descriptor_and_checks_the_span(tmp_path: Path) -> None:
    import io

    from hurray_gpu.io.convert.source import SourceFile

    data = stable_rng("copy_to").integers(0, 256, 100_000, dtype=np.uint8).tobytes()
    (tmp_path / "s.bin").write_bytes(data)
    src = SourceFile(tmp_path / "s.bin", reuse=True)
    try:
        out = io.BytesIO()  # no fileno: the bounded-read path
        src.copy_to(out, 123, 70_000, "a span")
        assert out.getvalue() == data[123:70_123]
        with open(tmp_path / "o.bin", "wb") as f:  # a file: the kernel copies
            f.write(b"head")
            src.copy_to(f, 5, 1000, "a span")
            f.write(b"tail")
        assert (tmp_path / "o.bin").read_bytes() == b"head" + data[5:1005] + b"tail"
        with pytest.raises(ConversionError, match="runs past the end"):
            src.copy_to(io.BytesIO(), 99_000, 2000, "a span")
    finally:
        src.close()
