"""hg.export and ``hurray-gpu export``: GGUF -> .hrry -> GGUF and safetensors -> .hrry ->
safetensors byte for byte (checked with gguf-py and the safetensors package), .npz and torch
sources to safetensors, refusals, dequantized export, the CLI."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.cli import main
from hurray_gpu.errors import ConversionError, UnsupportedConversionError
from hurray_gpu.ops.quantize import quantized_tensor
from tests._support import require_peer, stable_rng
from tests.hurray._convert_samples import MAPPED, write_gguf

GGUF_SPECS = [(f"{kind}.{i}", kind, shape) for kind in MAPPED
              for i, shape in enumerate(((4, 64), (3, 5, 32), (13, 160)))]
GGUF_SPECS += [("ids8", "I8", (7,)), ("ids16", "I16", (2, 3)), ("ids32", "I32", (9,))]
# more blocks than one encoding step (32768)
GGUF_SPECS += [(f"big.{kind}", kind, (2, 17, 32 * 1217)) for kind in ("Q4_0", "Q5_1")]


def _gguf_model(tmp_path: Path) -> tuple[Path, dict]:
    gguf = require_peer("gguf")
    meta = {"general.name": ("tiny", gguf.GGUFValueType.STRING),
            "llama.context_length": (4096, gguf.GGUFValueType.UINT32),
            "llama.rope.freq_base": (10000.0, gguf.GGUFValueType.FLOAT32),
            "general.file_type": (7, gguf.GGUFValueType.UINT64),
            "tokenizer.ggml.tokens": (["<s>", "a", "b"], gguf.GGUFValueType.ARRAY),
            "tokenizer.ggml.scores": ([0.5, -1.0, 2.0], gguf.GGUFValueType.ARRAY),
            "tokenizer.ggml.add_bos_token": (True, gguf.GGUFValueType.BOOL)}
    sources = write_gguf(tmp_path / "m.gguf", GGUF_SPECS, meta)
    return tmp_path / "m.gguf", sources


def test_gguf_round_trip_is_byte_identical(tmp_path: Path) -> None:
    gguf = require_peer("gguf")
    from gguf.quants import dequantize

    model, sources = _gguf_model(tmp_path)
    hg.convert(model, tmp_path / "m.hrry")
    result = hg.export(tmp_path / "m.hrry", tmp_path / "back.gguf")
    assert result.tensors == len(GGUF_SPECS) and result.kinds["Q5_0"] == 3
    assert (tmp_path / "back.gguf").read_bytes() == model.read_bytes()
    want, got = gguf.GGUFReader(model), gguf.GGUFReader(tmp_path / "back.gguf")
    assert list(got.fields) == list(want.fields)
    for key, field in want.fields.items():
        assert got.fields[key].types == field.types, key
        assert [bytes(p) for p in got.fields[key].parts] == [bytes(p) for p in field.parts], key
    for t in got.tensors:
        raw, qtype = sources[t.name]
        assert t.tensor_type == qtype and bytes(t.data) == raw.tobytes(), t.name
        if t.tensor_type.name.startswith("I"):
            continue  # gguf-py dequantizes no integer types; their bytes are equal above
        back = dequantize(t.data, t.tensor_type)
        assert np.array_equal(back.view(np.uint8), dequantize(raw, qtype).view(np.uint8))


def test_hurray_quantized_tensors_become_the_smallest_exact_ggml_type(tmp_path: Path) -> None:
    gguf = require_peer("gguf")
    rng = stable_rng("export", "requant")
    scales = rng.uniform(0.01, 2, 8).astype(np.float16)
    made = {name: quantized_tensor(rng.integers(lo, hi + 1, (4, 64)), "int8", "per_block",
                                   axis=1, scales=scales, scale_type="float16")
            for name, lo, hi in (("wide", -127, 127), ("narrow", -16, 15), ("over", 16, 16),
                                 ("under", -17, -17))}
    hg.save(tmp_path / "q.hrry", made, metadata={"note": "mine", "n": 3})
    hg.export(tmp_path / "q.hrry", tmp_path / "q.gguf")
    reader = gguf.GGUFReader(tmp_path / "q.gguf")
    kinds = {t.name: t.tensor_type.name for t in reader.tensors}
    assert kinds == {"wide": "Q8_0", "narrow": "Q5_0", "over": "Q8_0", "under": "Q8_0"}
    for t in reader.tensors:
        want = hg.materialize(made[t.name], "float32").numpy()
        got = gguf.quants.dequantize(t.data, t.tensor_type).reshape(want.shape)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), t.name
    assert bytes(reader.fields["hurray.note"].parts[-1]) == b"mine"
    assert int(reader.fields["hurray.n"].parts[-1][0]) == 3


def test_safetensors_round_trip_matches_the_package_byte_for_byte(tmp_path: Path) -> None:
    st = require_peer("safetensors.numpy")
    rng = stable_rng("export", "safetensors")
    kinds = [np.bool_, np.uint8, np.int8, np.int16, np.uint16, np.float16, ml_dtypes.bfloat16,
             np.int32, np.uint32, np.float32, np.float64, np.int64, np.uint64,
             ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.complex64]
    arrays = {f"t{i}.{np.dtype(k).name}": (rng.normal(size=(3, 5)) * 4).astype(k)
              for i, k in enumerate(kinds)}
    arrays["empty"] = np.zeros((0, 4), np.float32)
    st.save_file(arrays, str(tmp_path / "a.safetensors"), metadata={"format": "pt"})
    hg.convert(tmp_path / "a.safetensors", tmp_path / "a.hrry")
    hg.export(tmp_path / "a.hrry", tmp_path / "b.safetensors")
    assert (tmp_path / "b.safetensors").read_bytes() == (tmp_path / "a.safetensors").read_bytes()
    from safetensors import safe_open

    with safe_open(str(tmp_path / "b.safetensors"), "numpy") as f:
        for name, a in arrays.items():
            if "float8" in name:
                continue  # safetensors.numpy cannot load them; their bytes are equal above
            assert f.get_tensor(name).tobytes() == a.tobytes(), name


def test_npz_and_torch_sources_export_to_safetensors(tmp_path: Path) -> None:
    st = require_peer("safetensors.numpy")
    torch = require_peer("torch")
    rng = stable_rng("export", "npz")
    fortran = np.asfortranarray(rng.normal(size=(3, 4)))
    swapped = rng.integers(-9, 9, 6).astype(">i4")
    np.savez(tmp_path / "a.npz", f=fortran, s=swapped, b=np.array([True, False, True]))
    hg.convert(tmp_path / "a.npz", tmp_path / "a.hrry")
    hg.export(tmp_path / "a.hrry", tmp_path / "a.safetensors")
    back = st.load_file(str(tmp_path / "a.safetensors"))
    assert np.array_equal(back["f"], fortran) and back["f"].flags.c_contiguous
    assert back["s"].dtype == np.int32 and np.array_equal(back["s"], swapped)
    assert np.array_equal(back["b"], [True, False, True])
    w = torch.randn(4, 8, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    torch.save({"w": w, "step": 3}, tmp_path / "sd.pt")
    hg.convert(tmp_path / "sd.pt", tmp_path / "sd.hrry")
    hg.export(tmp_path / "sd.hrry", tmp_path / "sd.safetensors")
    from safetensors import safe_open

    with safe_open(str(tmp_path / "sd.safetensors"), "pt") as f:
        assert torch.equal(f.get_tensor("w"), w) and f.metadata() == {"torch.step": "3"}


def test_refusals_are_typed_and_write_nothing(tmp_path: Path) -> None:
    model, _ = _gguf_model(tmp_path)
    hg.convert(model, tmp_path / "m.hrry")
    with pytest.raises(UnsupportedConversionError, match=r"tensor 'Q8_0.0'.*Fix:.*dequantize"):
        hg.export(tmp_path / "m.hrry", tmp_path / "m.safetensors")
    assert not (tmp_path / "m.safetensors").exists()
    hg.save(tmp_path / "u.hrry", {"u": np.arange(4, dtype=np.uint16)})
    with pytest.raises(UnsupportedConversionError, match="'u'.*uint16.*GGUF carries"):
        hg.export(tmp_path / "u.hrry", tmp_path / "u.gguf")
    with pytest.raises(ConversionError, match="export format"):
        hg.export(tmp_path / "u.hrry", tmp_path / "u.bin")
    with pytest.raises(ConversionError, match="not a float type"):
        hg.export(tmp_path / "u.hrry", tmp_path / "u.gguf", dequantize="int8")
    hg.save(tmp_path / "r.hrry", {"__metadata__": np.ones(2, np.float32)})
    with pytest.raises(UnsupportedConversionError, match="reserves this name"):
        hg.export(tmp_path / "r.hrry", tmp_path / "r.safetensors")


def test_dequantize_writes_the_dequantized_values(tmp_path: Path) -> None:
    st = require_peer("safetensors.numpy")
    model, _ = _gguf_model(tmp_path)
    hg.convert(model, tmp_path / "m.hrry")
    result = hg.export(tmp_path / "m.hrry", tmp_path / "m.safetensors", dequantize="bfloat16")
    assert "Q4_1.2" in result.dequantized and "F32.0" not in result.dequantized
    back = st.load_file(str(tmp_path / "m.safetensors"))
    with hg.open_file(tmp_path / "m.hrry") as f:
        for name in ("Q4_1.2", "Q5_0.1", "Q8_0.0"):
            want = hg.materialize(f.read(name), "bfloat16").numpy()
            assert back[name].dtype == ml_dtypes.bfloat16
            assert back[name].tobytes() == want.tobytes(), name
        assert back["F16.1"].tobytes() == f.read("F16.1").numpy().tobytes()


def test_cli_export(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    model, _ = _gguf_model(tmp_path)
    hg.convert(model, tmp_path / "m.hrry")
    out = tmp_path / "o.gguf"
    assert main(["export", str(tmp_path / "m.hrry"), str(out)]) == 0
    assert "29 tensors" in " ".join(capsys.readouterr().out.split()) and out.read_bytes() == model.read_bytes()
    assert main(["export", str(tmp_path / "m.hrry"), str(out)]) == 1  # exists: --force
    assert main(["export", str(tmp_path / "m.hrry"), str(tmp_path / "o.safetensors")]) == 1
    assert "Fix:" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "m.hrry"), str(tmp_path / "o.safetensors"),
                 "--dequantize", "float32", "--json"]) == 0
    assert '"dequantized"' in capsys.readouterr().out


def test_gguf_metadata_types_are_restored_and_bad_ones_refused(tmp_path: Path) -> None:
    gguf = require_peer("gguf")
    meta = {"gguf.version": 3, "gguf.a.empty": "[]", "gguf.a.small": [1, 2, 3],
            "gguf.a.f": 0.5, "gguf.a.name": "x",
            "gguf.value_types": ["a.empty=ARRAY[INT32]", "a.small=ARRAY[UINT16]",
                                 "a.f=FLOAT32", "a.name=STRING"]}
    hg.save(tmp_path / "m.hrry", {"w": np.ones(4, np.float32)}, metadata=meta)
    hg.export(tmp_path / "m.hrry", tmp_path / "m.gguf")
    fields = gguf.GGUFReader(tmp_path / "m.gguf").fields
    assert [f.types for f in (fields["a.small"], fields["a.f"])] == [
        [gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.UINT16], [gguf.GGUFValueType.FLOAT32]]
    assert fields["a.small"].contents() == [1, 2, 3] and fields["a.f"].contents() == 0.5
    # an empty array: type ARRAY, element type INT32, length 0 (gguf-py keeps no types for it)
    assert [int(p[0]) for p in fields["a.empty"].parts[2:]] == [9, 5, 0]
    meta["gguf.value_types"] = ["a.small=ARRAY[ARRAY[?]]"]
    hg.save(tmp_path / "bad.hrry", {"w": np.ones(4, np.float32)}, metadata=meta)
    with pytest.raises(UnsupportedConversionError, match=r"'a.small'.*Fix:"):
        hg.export(tmp_path / "bad.hrry", tmp_path / "bad.gguf")
    assert not (tmp_path / "bad.gguf").exists()


def test_other_layouts_are_written_row_major(tmp_path: Path) -> None:
    st = require_peer("safetensors.numpy")
    gguf = require_peer("gguf")
    from hurray_gpu.format.descriptor.layouts import Morton, Strided, Tiled

    x = stable_rng("export", "layouts").normal(size=(6, 8)).astype(np.float32)
    layouts = {"tiled": Tiled((4, 4)), "morton": Morton((3, 3)), "reversed": Strided((-8, 1))}
    made = {name: hg.relayout(hg.Tensor.from_numpy(x), lay) for name, lay in layouts.items()}
    assert {t.descriptor.layout_tag for t in made.values()} == {0x03, 0x04, 0x05}
    hg.save(tmp_path / "l.hrry", made)
    hg.export(tmp_path / "l.hrry", tmp_path / "l.safetensors")
    hg.export(tmp_path / "l.hrry", tmp_path / "l.gguf")
    back = st.load_file(str(tmp_path / "l.safetensors"))
    assert all(np.array_equal(back[name], x) for name in layouts)
    for t in gguf.GGUFReader(tmp_path / "l.gguf").tensors:
        assert np.array_equal(np.asarray(t.data).reshape(6, 8), x), t.name


def test_ternary_forms_export_as_tq1_0(tmp_path: Path) -> None:
    # TQ1_0 written by gguf-py comes back byte for byte; TQ2_0 (whose codes 0..2 int2 holds)
    # as TQ1_0, the smaller type of the same values; int2 codes -2 have no ternary type.
    gguf = require_peer("gguf")
    from gguf.quants import dequantize

    specs = [("t1", "TQ1_0", (3, 512)), ("t2", "TQ2_0", (2, 256)),
             ("big", "TQ1_0", (2, 3, 256 * 700))]  # > one encoding step; every byte value
    sources = write_gguf(tmp_path / "t.gguf", specs)
    hg.convert(tmp_path / "t.gguf", tmp_path / "t.hrry")
    hg.export(tmp_path / "t.hrry", tmp_path / "t2.gguf")
    for t in gguf.GGUFReader(tmp_path / "t2.gguf").tensors:
        raw, qtype = sources[t.name]
        assert t.tensor_type.name == "TQ1_0", t.name
        if qtype.name == "TQ1_0":
            assert bytes(t.data) == raw.tobytes(), t.name
        want = dequantize(raw, qtype)
        assert np.array_equal(dequantize(t.data, t.tensor_type).view(np.uint32),
                              want.view(np.uint32)), t.name
    minus2 = quantized_tensor(np.full((1, 256), -2), "int2", "per_block", axis=1, block_size=256,
                              scales=np.ones(1, np.float16), scale_type="float16")
    hg.save(tmp_path / "m.hrry", {"m": minus2})
    with pytest.raises(UnsupportedConversionError, match="tensor 'm'.*TQ1_0/TQ2_0"):
        hg.export(tmp_path / "m.hrry", tmp_path / "m.gguf")


def test_iq4_nl_forms_export_as_iq4_nl(tmp_path: Path) -> None:
    # Byte for byte from random IQ4_NL blocks; a d = 0 block (repaired on import) to the same
    # values; f32 scales that are no f16, or int8 codes outside the table, have no IQ4_NL.
    gguf = require_peer("gguf")
    from gguf.quants import dequantize

    specs = [("nl", "IQ4_NL", (3, 64)), ("big", "IQ4_NL", (2, 17, 32 * 1217))]
    sources = write_gguf(tmp_path / "n.gguf", specs)
    zero = np.zeros((2, 18), np.uint8)  # d = -0 over index 9 (13); d = +0 over index 0 (-127)
    zero[0, 1], zero[0, 2:] = 0x80, 0x99
    writer = gguf.GGUFWriter(str(tmp_path / "z.gguf"), "llama")
    writer.add_tensor("z", zero.reshape(1, -1), raw_dtype=gguf.GGMLQuantizationType.IQ4_NL)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    for name in ("n", "z"):
        hg.convert(tmp_path / f"{name}.gguf", tmp_path / f"{name}.hrry")
        hg.export(tmp_path / f"{name}.hrry", tmp_path / f"{name}2.gguf")
        for t in gguf.GGUFReader(tmp_path / f"{name}2.gguf").tensors:
            src, qtype = sources.get(t.name, (zero, gguf.GGMLQuantizationType.IQ4_NL))
            assert t.tensor_type == qtype, t.name
            if name == "n":
                assert bytes(t.data) == src.tobytes(), t.name
            want = dequantize(src, qtype)
            assert np.array_equal(dequantize(t.data, qtype).reshape(want.shape).view(np.uint32),
                                  want.view(np.uint32)), t.name
    made = {"scale": quantized_tensor(np.full((1, 32), 13), "int8", "per_block", axis=1,
                                      scales=np.array([0.1], np.float32)),
            "code": quantized_tensor(np.full((1, 32), 12), "int8", "per_block", axis=1,
                                     scales=np.array([0.5], np.float32))}
    for name, t in made.items():
        hg.save(tmp_path / f"{name}.hrry", {name: t})
        with pytest.raises(UnsupportedConversionError, match=f"tensor '{name}'.*IQ4_NL"):
            hg.export(tmp_path / f"{name}.hrry", tmp_path / f"{name}.gguf")


# Sub-block scale ranges: (lo, hi, scale of raw byte 0, mins).
_K_RANGES = {"Q6_K": (-128, 127, 0, False), "Q3_K": (-32, 31, -32, False),
             "IQ4_XS": (-32, 31, -32, False), "Q2_K": (0, 15, 0, True),
             "Q4_K": (0, 63, 0, True), "Q5_K": (0, 63, 0, True)}


def _k_blocks(kind: str, count: int) -> np.ndarray:
    """Valid random ``kind`` super-blocks as llama.cpp's quantizers shape them: random codes,
    random f16 d (and dmin), integer scales (and mins) with one sub-block at the range's
    extreme; some zero scales (signed types: over random codes of both signs; unsigned: over
    zero codes); block 0 all zero scales (d = +0; signed: over random codes); signed types'
    block 1 a zero scale over codes of one sign."""
    gguf = require_peer("gguf")
    lo, hi, sc0, mins = _K_RANGES[kind]
    size = gguf.GGML_QUANT_SIZES[getattr(gguf.GGMLQuantizationType, kind)][1]
    subs = 16 if kind in ("Q6_K", "Q3_K", "Q2_K") else 8
    rng = stable_rng("k_blocks", kind, count)
    raw = rng.integers(0, 256, (count, size), dtype=np.uint8)

    def scales() -> np.ndarray:
        sc = rng.integers(lo, hi + 1, (count, subs))
        sc[np.arange(count), rng.integers(0, subs, count)] = lo if lo < 0 else hi
        sc[(rng.random((count, subs)) < 0.15) & (np.abs(sc) != max(-lo, hi))] = 0
        return sc

    def halves() -> np.ndarray:
        d = rng.normal(0, 0.05, count).astype(np.float16)
        return np.where(d == 0, np.float16(0.01), d).view("<u2").reshape(-1, 1).view(np.uint8)

    sc, m = scales(), scales()
    sc[0], m[0] = sc0, 0
    sc[1, :2] = (lo if lo < 0 else hi), 0  # block 1: sub-block 1's zero scale over ...
    if not mins:  # ... codes of one sign that are not the quantizers' zero bytes
        at, byte = {"Q6_K": (slice(0, 192), [0x99] * 128 + [0] * 64),
                    "Q3_K": (slice(0, 96), [0xFF] * 32 + [0x55] * 64),
                    "IQ4_XS": (slice(8, 136), [0x99] * 128)}[kind]
        raw[1, at] = byte  # Q6_K q = -23, Q3_K q = 1, IQ4_XS value 13
    u = (sc - lo if lo < 0 else sc).astype(np.uint8)  # 6-bit raw (signed) or the value
    zero = sc == 0
    if kind == "Q6_K":
        raw[:, 192:208], raw[:, 208:] = sc.astype(np.int8).view(np.uint8), halves()
    elif kind == "Q3_K":
        raw[:, 96:104] = (u[:, :8] & 15) | ((u[:, 8:] & 15) << 4)
        raw[:, 104:108] = sum((u[:, 4 * k:4 * k + 4] >> 4) << (2 * k) for k in range(4))
        raw[:, 108:] = halves()
    elif kind == "IQ4_XS":
        raw[:, :2] = halves()
        high = sum((u[:, i].astype(np.uint16) >> 4) << (2 * i) for i in range(8))
        raw[:, 2:4] = high.astype("<u2").reshape(-1, 1).view(np.uint8)
        raw[:, 4:8] = (u[:, 0::2] & 15) | ((u[:, 1::2] & 15) << 4)
    elif kind == "Q2_K":
        raw[:, :16], raw[:, 80:82], raw[:, 82:] = u | (m.astype(np.uint8) << 4), halves(), halves()
        for b, s in zip(*np.nonzero(zero), strict=True):  # codes 0 under a zero scale
            j = 16 + (s // 8) * 32 + (s % 2) * 16
            raw[b, j:j + 16] &= ~np.uint8(3 << (2 * ((s % 8) // 2)))
    else:  # Q4_K, Q5_K
        mn = m.astype(np.uint8)
        raw[:, :2], raw[:, 2:4] = halves(), halves()
        raw[:, 4:8] = (u[:, :4] & 63) | ((u[:, 4:] >> 4) << 6)
        raw[:, 8:12] = (mn[:, :4] & 63) | ((mn[:, 4:] >> 4) << 6)
        raw[:, 12:16] = (u[:, 4:] & 15) | ((mn[:, 4:] & 15) << 4)
        at = 16 if kind == "Q4_K" else 48
        for b, s in zip(*np.nonzero(zero), strict=True):
            j = at + (s // 2) * 32
            raw[b, j:j + 32] &= np.uint8(0xF0 if s % 2 == 0 else 0x0F)
            if kind == "Q5_K":
                raw[b, 16:48] &= ~np.uint8(1 << s)
    if mins:
        raw[0] = 0  # llama.cpp's zero block: every byte 0
    else:
        raw[0, {"Q6_K": 208, "Q3_K": 108, "IQ4_XS": 0}[kind]:][:2] = 0  # d = +0
    return raw


@pytest.mark.parametrize("kind", list(_K_RANGES))
def test_k_quant_and_iq4_xs_forms_export_byte_for_byte(tmp_path: Path, kind: str) -> None:
    gguf = require_peer("gguf")
    from gguf.quants import dequantize

    qtype = getattr(gguf.GGMLQuantizationType, kind)
    blocks = _k_blocks(kind, 3 * 40)
    writer = gguf.GGUFWriter(str(tmp_path / "k.gguf"), "llama")
    writer.add_tensor("k", blocks.reshape(3, -1), raw_dtype=qtype)
    for key in ("write_header_to_file", "write_kv_data_to_file", "write_tensors_to_file",
                "close"):
        getattr(writer, key)()
    hg.convert(tmp_path / "k.gguf", tmp_path / "k.hrry")
    with hg.open_file(tmp_path / "k.hrry") as f:  # the +-0 sub-blocks kept their codes
        assert f.read("k").is_composite
    hg.export(tmp_path / "k.hrry", tmp_path / "k2.gguf")
    assert (tmp_path / "k2.gguf").read_bytes() == (tmp_path / "k.gguf").read_bytes()
    t = gguf.GGUFReader(tmp_path / "k2.gguf").tensors[0]
    assert np.array_equal(dequantize(t.data, qtype).view(np.uint32),
                          dequantize(blocks.reshape(3, -1), qtype).view(np.uint32))


def test_k_quant_iq4_and_mxfp4_from_gguf_py_export_exactly(tmp_path: Path) -> None:
    # MXFP4 as gguf-py quantizes it comes back byte for byte; random K-quant bytes (scales
    # not at the range's extreme) to the same values; products that are no f16 times
    # integers are refused by name unless dequantized.
    gguf = require_peer("gguf")
    from gguf.quants import dequantize

    specs = [("k4", "Q4_K", (2, 256)), ("k6", "Q6_K", (3, 256)), ("mx", "MXFP4", (2, 64)),
             ("x", "IQ4_XS", (2, 512)), ("k3", "Q3_K", (1, 768))]
    sources = write_gguf(tmp_path / "k.gguf", specs)
    hg.convert(tmp_path / "k.gguf", tmp_path / "k.hrry")
    hg.export(tmp_path / "k.hrry", tmp_path / "k2.gguf")
    for t in gguf.GGUFReader(tmp_path / "k2.gguf").tensors:
        raw, qtype = sources[t.name]
        assert t.tensor_type == qtype, t.name
        want = dequantize(raw, qtype)
        assert np.array_equal(dequantize(t.data, qtype).reshape(want.shape).view(np.uint32),
                              want.view(np.uint32)), t.name
        assert t.name != "mx" or bytes(t.data) == raw.tobytes()
    odd = quantized_tensor(np.full((1, 256), 3), "int8", "per_block", axis=1, block_size=16,
                           scales=np.array([0.1, 0.3] * 8, np.float32))
    hg.save(tmp_path / "odd.hrry", {"odd": odd})
    with pytest.raises(UnsupportedConversionError, match="tensor 'odd'.*Q6_K form, but "
                                                         "super-block 0's sub-block scales"):
        hg.export(tmp_path / "odd.hrry", tmp_path / "odd.gguf")
    hg.export(tmp_path / "odd.hrry", tmp_path / "odd.gguf", dequantize="float32")
    got = np.asarray(gguf.GGUFReader(tmp_path / "odd.gguf").tensors[0].data)
    want = np.repeat(np.tile(np.float32([0.1, 0.3]), 8), 16) * np.float32(3)
    assert np.array_equal(got.reshape(-1).view(np.uint32), want.view(np.uint32))
