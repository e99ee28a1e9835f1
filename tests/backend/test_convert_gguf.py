"""hg.convert of GGUF files gguf-py writes: every mapped type, on every device, bit for bit
equal to gguf-py's own dequantization (float32)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import UnsupportedConversionError
from hurray_gpu.ops import dequantize, materialize
from tests._support import require_peer, stable_rng
from tests.hurray._convert_samples import (
    IMPORTED,
    K_MAPPED,
    K_SHAPES,
    MAPPED,
    SHAPES,
    write_gguf,
)

QUANTIZED = ("Q8_0", "Q4_0", "Q5_0", "Q4_1", "Q5_1")


def _f32_on(t: object, device: object) -> np.ndarray:
    moved = t.to(device)  # type: ignore[attr-defined]
    if moved.descriptor.quantization is not None:
        out = dequantize(moved, "float32")
    else:
        out = materialize(moved, "float32")
    return out.to("cpu").numpy()


def _shapes(kind: str) -> tuple[tuple[int, ...], ...]:
    return K_SHAPES if kind in K_MAPPED else SHAPES


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("gguf")
    specs = [(f"{kind}.{i}", kind, shape) for kind in MAPPED + IMPORTED + K_MAPPED
             for i, shape in enumerate(_shapes(kind))]
    raw = write_gguf(folder / "model.gguf", specs)
    hg.convert(folder / "model.gguf", folder / "model.hrry")
    return folder / "model.hrry", raw


@pytest.mark.parametrize("kind", MAPPED + IMPORTED + K_MAPPED)
def test_every_mapped_type_dequantizes_like_gguf_py(device, kind: str, converted) -> None:
    from gguf.quants import dequantize as gguf_dequantize

    path, raw = converted
    with hg.open_file(path) as f:
        for i, shape in enumerate(_shapes(kind)):
            data, qtype = raw[f"{kind}.{i}"]
            want = np.asarray(gguf_dequantize(data, qtype), np.float32)
            t = f.read(f"{kind}.{i}")
            assert t.shape == shape == want.shape
            got = _f32_on(t, device)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (kind, shape)


def test_quantized_types_take_their_hurray_forms(converted) -> None:
    path, _ = converted
    forms = {"Q8_0": "int8", "Q4_0": "int4", "Q5_0": "int8", "F32": "float32",
             "F16": "float16", "BF16": "bfloat16", "Q4_1": "uint4", "Q5_1": "uint8",
             "Q6_K": "int8", "Q3_K": "int4", "Q2_K": "uint2", "Q4_K": "uint4", "Q5_K": "uint8",
             "IQ4_NL": "int8", "IQ4_XS": "int8", "MXFP4": "float4_e2m1", "TQ1_0": "int2",
             "TQ2_0": "int2"}
    # block size and scale type of the per-block affine types (f32: K-quant sub-block scales)
    blocks = {**dict.fromkeys(QUANTIZED, (32, 0x01)), "IQ4_NL": (32, 0x03),
              "IQ4_XS": (32, 0x03), "Q4_K": (32, 0x03), "Q5_K": (32, 0x03),
              "Q6_K": (16, 0x03), "Q3_K": (16, 0x03), "Q2_K": (16, 0x03),
              "TQ1_0": (256, 0x01), "TQ2_0": (256, 0x01)}
    with hg.open_file(path) as f:
        for kind, storage in forms.items():
            t = f.read(f"{kind}.1")
            if kind in ("Q4_1", "Q5_1", "Q2_K", "Q4_K", "Q5_K"):  # overlay add of the offsets
                assert t.dtype.name == "float32" and t.layout.combine_op == 2
                base, offsets = t.members
                assert (base.dtype.name, offsets.dtype.name) == (storage, "uint2")
                assert offsets.descriptor.quantization.block_size == blocks[kind][0]
                t = base
            assert t.dtype.name == storage
            quant = t.descriptor.quantization
            if kind in blocks:  # symmetric per-block on the innermost axis
                assert (quant.SCHEME, quant.axis) == (0x03, 1) and quant.symmetric
                assert (quant.block_size, quant.scale_type_tag) == blocks[kind]
            elif kind == "MXFP4":
                assert (quant.SCHEME, quant.axis, quant.block_size) == (0x05, 1, 32)
            else:
                assert quant is None


def _one_block(path: Path, kind: str, d_bits: int, codes: np.ndarray,
               m_bits: int | None = None) -> Path:
    """A GGUF file with one hand-made block (scale bits ``d_bits``, offset bits ``m_bits`` for
    Q4_1, 4-bit/8-bit ``codes``)."""
    head = np.array([d_bits] + ([] if m_bits is None else [m_bits]), "<u2").view(np.uint8)
    if kind == "Q8_0":
        block = np.concatenate([head, codes.astype(np.int8).view(np.uint8)])
    else:  # Q4_0/Q4_1: element j in the low nibble of byte j, element j + 16 in its high one
        nib = codes.astype(np.uint8)
        block = np.concatenate([head, nib[:16] | (nib[16:] << 4)])
    return _raw_block(path, kind, block)


def _raw_block(path: Path, kind: str, block: np.ndarray) -> Path:
    """A GGUF file holding one tensor ``t`` of the block bytes ``block``."""
    gguf = require_peer("gguf")
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("t", block.reshape(1, -1), raw_dtype=getattr(gguf.GGMLQuantizationType,
                                                                   kind))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize(("kind", "d_bits", "codes", "m_bits"), [
    ("Q8_0", 0x8000, np.zeros(32), None),            # d = -0: every element -0.0
    ("Q8_0", 0x0000, -np.arange(1, 33), None),       # d = +0, negative codes: -0.0
    ("Q4_0", 0x8000, np.full(32, 9), None),          # d = -0, codes q - 8 = 1: -0.0
    ("Q4_0", 0x0000, np.full(32, 8), None),          # d = +0, codes 0: +0.0
    ("Q4_1", 0x8000, np.arange(32) % 16, 0x8000),    # -0 * q + -0 = -0.0
    ("Q4_1", 0x0000, np.arange(32) % 16, 0x8000),    # +0 * q + -0 = +0.0
    ("Q4_1", 0x3C00, np.arange(32) % 16, 0x0000),    # q + +0: the offset a signed zero
    ("Q4_1", 0x2E66, np.arange(32) % 16, 0xB4CD),    # 0.1 q - 0.3: each sum rounded once
])
def test_zero_scales_keep_the_sign_of_each_zero(device, tmp_path: Path, kind: str, d_bits: int,
                                                codes: np.ndarray, m_bits: int | None) -> None:
    gguf = require_peer("gguf")
    from gguf.quants import dequantize as gguf_dequantize

    src = _one_block(tmp_path / "z.gguf", kind, d_bits, codes, m_bits)
    hg.convert(src, tmp_path / "z.hrry", device=device)
    raw = gguf.GGUFReader(str(src)).tensors[0].data
    want = np.asarray(gguf_dequantize(raw, getattr(gguf.GGMLQuantizationType, kind)),
                      np.float32)
    with hg.open_file(tmp_path / "z.hrry") as f:
        got = _f32_on(f.read("t"), device)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_zero_scale_with_mixed_signs_is_refused(tmp_path: Path) -> None:
    codes = np.concatenate([np.full(16, 3), np.full(16, -3)])
    src = _one_block(tmp_path / "m.gguf", "Q8_0", 0x0000, codes)
    with pytest.raises(UnsupportedConversionError, match=r"'t'.*Q8_0.*block 0 has a zero "
                                                         r"scale and codes of both signs"):
        hg.convert(src, tmp_path / "m.hrry")
    assert not (tmp_path / "m.hrry").exists()


def test_an_infinite_scale_or_offset_is_refused(tmp_path: Path) -> None:
    src = _one_block(tmp_path / "i.gguf", "Q4_0", 0x7C00, np.full(32, 3))
    with pytest.raises(UnsupportedConversionError, match="infinite or NaN f16 scale"):
        hg.convert(src, tmp_path / "i.hrry")
    src = _one_block(tmp_path / "n.gguf", "Q4_1", 0x3C00, np.full(32, 3), 0x7E00)
    with pytest.raises(UnsupportedConversionError, match="infinite or NaN f16 offset m"):
        hg.convert(src, tmp_path / "n.hrry")


def _q6_k(d_bits: int, scales: list[int], low: int = 0, high: int = 0) -> np.ndarray:
    """One Q6_K super-block: ql bytes ``low``, qh bytes alternately ``high`` and 0 (codes
    q - 32), int8 sub-block scales."""
    ql, qh = np.full(128, low, np.uint8), np.resize(np.array([high, 0], np.uint8), 64)
    sc = np.array(scales, np.int8).view(np.uint8)
    return np.concatenate([ql, qh, sc, np.array([d_bits], "<u2").view(np.uint8)])


def _q4_k(d_bits: int, dmin_bits: int) -> np.ndarray:
    """One Q4_K super-block with random scales, mins and codes."""
    rest = stable_rng("q4_k", d_bits, dmin_bits).integers(0, 256, 140, dtype=np.uint8)
    return np.concatenate([np.array([d_bits, dmin_bits], "<u2").view(np.uint8), rest])


def _q3_k(zero_low: int) -> np.ndarray:
    """One Q3_K super-block with random codes (hmask, qs), d = 1 and sub-block scales 1 (raw
    33) except sub-block 0, whose scale is 0 (raw 32: low nibble ``zero_low`` & 0xF = 0)."""
    rest = stable_rng("q3_k", zero_low).integers(0, 256, 96, dtype=np.uint8)
    scales = np.array([zero_low] + [0x11] * 7 + [0xAA] * 4, np.uint8)
    return np.concatenate([rest, scales, np.array([0x3C00], "<u2").view(np.uint8)])


def _iq4_xs(d_bits: int) -> np.ndarray:
    """One IQ4_XS super-block with random table indices, sub-block 0's scale 0 and the others
    1 (6-bit raw 32 and 33)."""
    qs = stable_rng("iq4_xs", d_bits).integers(0, 256, 128, dtype=np.uint8)
    head = np.array([d_bits, 0xAAAA], "<u2").view(np.uint8)
    return np.concatenate([head, np.array([0x10, 0x11, 0x11, 0x11], np.uint8), qs])


def _mxfp4(e: int, codes: list[int]) -> np.ndarray:
    """One MXFP4 block: e8m0 byte ``e``, 4-bit codes in gguf-py's order (element j low nibble of
    byte j, element j + 16 its high nibble)."""
    nib = np.resize(np.array(codes, np.uint8), 32)
    return np.concatenate([[np.uint8(e)], nib[:16] | (nib[16:] << 4)]).astype(np.uint8)


def _tq2_0(d_bits: int, code: int, last: int | None = None) -> np.ndarray:
    """One TQ2_0 block: every 2-bit code ``code`` (value ``d * (code - 1)``), the last one
    ``last``."""
    qs = np.full(64, code * 0x55, np.uint8)
    if last is not None:
        qs[-1] = (qs[-1] & 0x3F) | (last << 6)
    return np.concatenate([qs, np.array([d_bits], "<u2").view(np.uint8)])


def _tq1_0(d_bits: int, byte: int) -> np.ndarray:
    """One TQ1_0 block: every qs and qh byte ``byte`` (five base-3 trits, four in qh)."""
    return np.concatenate([np.full(52, byte, np.uint8), np.array([d_bits], "<u2").view(
        np.uint8)])


@pytest.mark.parametrize(("kind", "block"), [
    ("TQ2_0", _tq2_0(0x0000, 0)),                      # d = +0, t - 1 = -1: -0.0 everywhere
    ("TQ2_0", _tq2_0(0x8000, 1)),                      # d = -0, t - 1 = 0: -0.0
    ("TQ2_0", _tq2_0(0xBC00, 2)),                      # d = -1: -1.0 everywhere
    ("TQ1_0", _tq1_0(0x8000, 0)),                      # d = -0, trits 0: +0.0
    ("TQ1_0", _tq1_0(0x0000, 0xFF)),                   # d = +0, trits 2: +0.0
    ("TQ1_0", _tq1_0(0x3555, 0x5A)),                   # mixed trits, d = 1/3 (rounded)
    ("TQ1_0", _tq1_0(0x0001, 0xC3)),                   # a subnormal d
    ("Q6_K", _q6_k(0x3C00, [0] + [1] * 15)),           # sc 0, codes -32: -0.0 in sub-block 0
    ("Q6_K", _q6_k(0xBC00, [0, -3] * 8, low=0x99)),    # d < 0, sc 0, codes -23: +0.0
    ("Q6_K", _q6_k(0x0000, [5] * 16, low=0xFF)),       # d = +0, codes -17: -0.0 everywhere
    ("Q6_K", _q6_k(0x3C00, [1] * 3 + [0] * 13, 0x5A, 0xFF)),  # sc 0, +-0 mixed: replaced
    ("Q6_K", _q6_k(0xBC00, [0] * 16, 0x5A, 0xFF)),     # every sc 0, d < 0, +-0 mixed
    ("Q3_K", _q3_k(0x10)),                             # sc 0 over random codes -4..3
    ("IQ4_XS", _iq4_xs(0x3C00)),                       # sc 0 over table values of both signs
    ("IQ4_XS", _iq4_xs(0x8000)),                       # d = -0: every sub-block +-0 mixed
    ("Q4_K", _q4_k(0x0000, 0x8000)),                   # +0 * q - (-0 * m) = +0
    ("Q4_K", _q4_k(0x8000, 0x0000)),                   # -0 * q - (+0 * m) = -0
    ("Q4_K", _q4_k(0x2E66, 0x8001)),                   # dmin a negative subnormal
    ("MXFP4", _mxfp4(0x00, [0, 8])),                   # e8m0 0x00, zero codes: re-encoded
    ("MXFP4", _mxfp4(0x7F, list(range(16)))),          # nibble 8 is +0.0 in gguf-py
    ("MXFP4", _mxfp4(0x01, list(range(16)))),          # 2^-127 * v: subnormal values
    ("MXFP4", _mxfp4(0xFE, [1, 9, 2, 10])),            # 2^126 * v, finite
])
def test_hand_made_super_blocks_dequantize_like_gguf_py(device, tmp_path: Path, kind: str,
                                                        block: np.ndarray) -> None:
    gguf = require_peer("gguf")
    from gguf.quants import dequantize as gguf_dequantize

    src = _raw_block(tmp_path / "k.gguf", kind, block)
    hg.convert(src, tmp_path / "k.hrry", device=device)
    raw = gguf.GGUFReader(str(src)).tensors[0].data
    want = np.asarray(gguf_dequantize(raw, getattr(gguf.GGMLQuantizationType, kind)),
                      np.float32)
    with hg.open_file(tmp_path / "k.hrry") as f:
        got = _f32_on(f.read("t"), device)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize(("kind", "block", "why"), [
    ("Q6_K", _q6_k(0x7C00, [1] * 16), "sub-block 0 has an infinite or NaN scale"),
    ("TQ2_0", _tq2_0(0x3C00, 1, last=3), "block 0 has 2-bit code 3"),
    ("TQ2_0", _tq2_0(0x0000, 1, last=0), "block 0 has a zero scale and codes of both signs"),
    ("TQ1_0", _tq1_0(0xFC00, 0x5A), "block 0 has an infinite or NaN f16 scale"),
    ("Q4_K", _q4_k(0x3C00, 0x7E00), "sub-block 0 has an infinite or NaN min"),
    ("MXFP4", _mxfp4(0x00, [0, 1]), "block 0 has e8m0 scale byte 0x00 and nonzero codes"),
    ("MXFP4", _mxfp4(0xFF, [0]), "block 0 has e8m0 scale byte 0xFF"),
])
def test_super_blocks_hurray_cannot_reproduce_are_refused(tmp_path: Path, kind: str,
                                                          block: np.ndarray, why: str) -> None:
    src = _raw_block(tmp_path / "r.gguf", kind, block)
    with pytest.raises(UnsupportedConversionError, match=f"'t'.*{kind}.*{why}"):
        hg.convert(src, tmp_path / "r.hrry")
    assert not (tmp_path / "r.hrry").exists()


def test_convert_checks_every_tensor_on_the_device(device, tmp_path: Path) -> None:
    specs = [(f"{kind}", kind, (2, 64)) for kind in MAPPED]
    write_gguf(tmp_path / "c.gguf", specs)
    result = hg.convert(tmp_path / "c.gguf", tmp_path / "c.hrry", device=device)
    assert result.checked_on == device.spec and result.tensors == len(MAPPED)


def test_empty_quantized_tensors_convert(device, tmp_path: Path) -> None:
    # Found by fuzz/convert.py: a block type with no blocks once failed to reshape its scales.
    gguf = require_peer("gguf")
    writer = gguf.GGUFWriter(str(tmp_path / "e.gguf"), "llama")
    kinds = QUANTIZED + IMPORTED + K_MAPPED
    for kind in kinds:
        block, size = gguf.GGML_QUANT_SIZES[getattr(gguf.GGMLQuantizationType, kind)]
        writer.add_tensor(kind, np.zeros((0, size), np.uint8),
                          raw_dtype=getattr(gguf.GGMLQuantizationType, kind))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    hg.convert(tmp_path / "e.gguf", tmp_path / "e.hrry", device=device)
    with hg.open_file(tmp_path / "e.hrry") as f:
        for kind in kinds:
            assert _f32_on(f.read(kind), device).shape == (0, 256 if kind in K_MAPPED else 32)


def test_mixed_signed_zeros_become_an_overlay_replace_of_their_sub_blocks(tmp_path: Path) -> None:
    src = _raw_block(tmp_path / "x.gguf", "Q6_K", _q6_k(0x3C00, [1] * 3 + [0] * 13, 0x5A, 0xFF))
    hg.convert(src, tmp_path / "x.hrry")
    with hg.open_file(tmp_path / "x.hrry") as f:
        t = f.read("t")
        layout = t.descriptor.layout
        assert (layout.composition_rule, layout.combine_op, len(t.members)) == (2, 1, 14)
        offsets = [m.descriptor.shard.shard_offset for m in t.members[1:]]
        assert offsets == [(0, 16 * i) for i in range(3, 16)]
        base = t.members[0]  # the base keeps the codes; scale +1, the sign of d = +1
        assert np.array_equal(base.buffers[1].numpy().view("<f4")[3:], np.ones(13, np.float32))
        assert base.buffers[0].numpy()[48:].view(np.int8).any()
