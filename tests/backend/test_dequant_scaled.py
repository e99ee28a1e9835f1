""""Lookup, then scale": SCALE8_<T> statements and the dequant runs that use them.

Values ``s * T(code)`` (MX, NF4, per-block int4 and int8 without zero points, 6- and 8-bit
unpacking) go eight codes at a time through one statement (host C: vector lookups, one multiply,
a vector conversion). Checked bit-exact against NumPy on every backend: NaN table entries keep their
bits, products overflow or round into subnormal halves, runs start off the 8-element groups,
end short of them and split across work items.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hurray_gpu.dialect.kernel import KernelDef, buf, scalar
from hurray_gpu.dialect.render import expand_scale8, lint_body
from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
from hurray_gpu.format.descriptor.quant import MXFP, NF4, PerBlockAffine
from hurray_gpu.format.dtypes import buffer_size, by_name
from hurray_gpu.ops import dequantize
from hurray_gpu.ops.plan import bind_inputs, launch, plan_dequantize, table_values
from hurray_gpu.ops.quantize import SCALE_TYPE_TAGS, random_quantized
from hurray_gpu.parts import assemble
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.tensor import Tensor
from tests._support import stable_rng as _rng

_NP = {"F32": np.float32, "BF16": by_name("bfloat16").numpy, "F16": np.float16}
_DST = {"F32": ("f32", np.uint32), "BF16": ("u16", np.uint16), "F16": ("u16", np.uint16)}


def _scale8_kernel(conv: str, bits: int) -> KernelDef:
    """One SCALE8 statement per work item: ``g`` groups of 8 codes (``bits * g`` bytes) in,
    scale ``s``."""
    return KernelDef(
        name=f"scale8_probe_{conv.lower()}_{bits}",
        params=(buf("dst", _DST[conv][0], "w"), buf("tab", "f32"), buf("data", "u8"),
                scalar("n"), scalar("g"), scalar("s", "f32")),
        body=f"""
            u32 it = GLOBAL_ID(0);
            if (it * 8u * g >= n) return;
            u32 b = it * {bits}u * g;
            u32 k = it * 8u * g;
            SCALE8_{conv}(dst, k, tab, data, b, {bits}, s, n, g);
        """, grid=lambda a: (int(a["n"]) // (8 * int(a["g"])),),
        extents=lambda a: {"dst": int(a["n"]), "tab": 1 << bits,
                           "data": int(a["n"]) * bits // 8},
        # host_isa: compiled for this host's vector units, so host C takes its AVX2 rendering.
        reference=lambda a: None, tags=("host_isa",))


def _table(bits: int) -> np.ndarray:
    """2^bits f32 entries: finite values of every magnitude, infinities, quiet and signalling
    NaNs with payloads and both signs."""
    rng = _rng("scale8 table", bits)
    raw = rng.integers(0, 1 << 32, 1 << bits, dtype=np.uint64).astype(np.uint32)
    mag = rng.uniform(-149, 127, 1 << bits)
    tab = (np.sign(rng.standard_normal(1 << bits)) * np.exp2(mag)).astype(np.float32)
    special = np.array([0x7FC00000, 0xFFC01234, 0x7F800001, 0xFFBFFFFF, 0x7F800000,
                        0xFF800000, 0x00000001, 0x80000000], np.uint32)
    tab = tab.view(np.uint32)
    tab[: special.size] = special
    tab[special.size: special.size + 4] = raw[:4] | 0x7F800001  # random NaN payloads
    return tab.view(np.float32)


@pytest.mark.parametrize("bits", [4, 6, 8])
@pytest.mark.parametrize("conv", ["F32", "BF16", "F16"])
def test_scale8_is_eight_scaled_lookups(kernel_device: Device, conv: str, bits: int) -> None:
    tab = _table(bits)
    if kernel_device.kind != "cpu":
        # OpenCL compilers may quiet a signalling NaN they pass through (host C keeps it; the
        # library's tables hold quiet NaNs only).
        tab = np.where(np.isnan(tab), (tab.view(np.uint32) | 0x400000).view(np.float32), tab)
    n = 8 * 96
    data = _rng("scale8 data", bits).integers(0, 256, n * bits // 8, dtype=np.uint8)
    stream = np.unpackbits(data, bitorder="little").reshape(n, bits)
    codes = (stream.astype(np.uint32) << np.arange(bits, dtype=np.uint32)).sum(1)
    t = tab[codes]
    # Runs of 1..3 groups take the per-group path, longer ones the once-converted table (4-bit:
    # 32 codes per shuffle step, then the 1..3 groups left); the scales overflow T to
    # infinities, round it into subnormals or keep it finite.
    for s, g in itertools.product((np.float32(2.0 ** -100), np.float32(0.7),
                                   np.float32(2.0 ** 100)), (1, 2, 3, 4, 6, 12, 32)):
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            v = np.where(np.isnan(t), t, t * s).astype(np.float32)
            want = v.astype(_NP[conv]).view(_DST[conv][1]) if conv != "F32" else v.view(np.uint32)
        out = Buffer(kernel_device, want.nbytes)
        kernel_device.run(_scale8_kernel(conv, bits), out, Buffer.from_bytes(kernel_device, tab),
                          Buffer.from_bytes(kernel_device, data), n=n, g=g, s=float(s))
        got = out.numpy(want.dtype)
        if conv == "F32":  # NaN products are kept entries: their bits must come back unchanged
            assert np.array_equal(got, want), f"s={s} g={g}"
        else:
            assert np.array_equal(got, want), f"s={s} g={g}: {np.flatnonzero(got != want)[:8]}"


def test_scale8_lint() -> None:
    def lint(call: str) -> None:
        lint_body(KernelDef(name="k", params=(buf("dst", "f32", "w"), buf("tab", "f32"),
                                              buf("data", "u8")), body=call,
                            grid=lambda a: (1,), extents=lambda a: {}, reference=lambda a: None))

    lint("u32 b = 0u; u32 n = 8u; f32 s = 1.0f; SCALE8_F32(dst, 0u, tab, data, b, 6, s, n, n);")
    for bad in ("SCALE8_F32(dst, 0u, tab, data, b, 5, s, n, n);",
                "SCALE8_F64(dst, 0u, tab, data, b, 6, s, n, n);",
                "SCALE8_F32(dst, 0u, tab, data, b, 6, s, n);"):
        with pytest.raises(Exception, match="SCALE8"):
            lint("u32 b = 0u; u32 n = 8u; f32 s = 1.0f; " + bad)
    with pytest.raises(Exception, match="LOAD of 'dst'"):
        lint("u32 b = 0u; u32 n = 8u; f32 s = 1.0f; SCALE8_F32(tab, 0u, dst, data, b, 6, s, n, n);")


def test_mxscale8_lint_and_expansion() -> None:
    """MXSCALE8's arity and code width are checked, its scales and err buffers too (a STORE to
    a read-only err is refused); the portable expansion reads scales[p + q] per block."""
    def kernel(call: str, err: str = "rw") -> KernelDef:
        return KernelDef(name="k", params=(buf("dst", "u16", "w"), buf("tab", "f32"),
                                           buf("data", "u8"), buf("sc", "u8"),
                                           buf("err", "u32", err)), body=call,
                         grid=lambda a: (1,), extents=lambda a: {}, reference=lambda a: None)

    decl = "u32 b = 0u; u32 n = 8u; u32 p = 0u; "
    good = "MXSCALE8_BF16(dst, 0u, tab, data, b, 8, sc, p, n, n, n, err);"
    lint_body(kernel(decl + good))
    assert "LOAD(sc, p + hg_q)" in expand_scale8(good)
    for bad in ("MXSCALE8_BF16(dst, 0u, tab, data, b, 7, sc, p, n, n, n, err);",
                "NFSCALE8_BF16(dst, 0u, tab, data, b, 8, sc, p, n, n, err);"):
        with pytest.raises(Exception, match="HFSCALE8_<F32"):
            lint_body(kernel(decl + bad))
    with pytest.raises(Exception, match="HFAFFINE8_<F32"):
        lint_body(kernel(decl + "HFAFFINE8_BF16(dst, 0u, data, b, n, n, sc, p, n, n, err);"))
    hfa = "HFAFFINE8_BF16(dst, 0u, data, b, n, n, sc, p, n, n, n, err);"
    lint_body(kernel(decl + hfa))
    text = expand_scale8(hfa)  # per block: the f16 scale read and checked, then AFFINE8's stores
    assert "LOAD(sc, hg_w4 + 1u)" in text and "F16_BITS_TO_F32(hg_e)" in text
    assert "STORE(err, 0u, 1u)" in text and text.count("STORE(dst, hg_k") == 8
    with pytest.raises(Exception, match="STORE of 'err'"):
        lint_body(kernel(decl + good, err="r"))


def _bits(t: Tensor) -> np.ndarray:
    return np.asarray(t.to("cpu").buffers[0]).copy()


def _mx_with_nan_codes(storage: str, shape: tuple[int, int]) -> Tensor:
    """MX tensor whose code bytes are every byte value (float8 NaN and infinity codes
    included), e8m0 scales spanning 1..254 so products overflow and go subnormal."""
    rng = _rng("mx nan", storage)
    data = rng.permutation(np.resize(np.arange(256, dtype=np.uint8),
                                     buffer_size(by_name(storage), shape[0] * shape[1])))
    nblocks = shape[0] * -(-shape[1] // 32)
    scales = rng.integers(1, 255, nblocks, dtype=np.uint8)
    scales[:2] = (1, 254)
    desc = TensorDescriptor(by_name(storage), shape, RowMajor(),
                            (BufferHandle(data.nbytes, 64), BufferHandle(scales.nbytes, 64)),
                            quantization=MXFP(1, 32, 1))
    tensor: Tensor = assemble(desc, [data, scales])
    return tensor


@pytest.mark.parametrize("shape", [(6, 224), (5, 32)])
@pytest.mark.parametrize("storage", ["float8_e4m3", "float8_e5m2", "float6_e2m3",
                                     "float6_e3m2", "float4_e2m1"])
def test_mx_extreme_scales_and_nan_codes(kernel_device: Device, storage: str,
                                         shape: tuple[int, int]) -> None:
    """Every code, scales whose products overflow to infinity or round into subnormals (host
    C: 4-bit runs of whole blocks take the once-converted table, single-block rows are runs of
    exactly four groups)."""
    t = _mx_with_nan_codes(storage, shape)
    for out in ("float32", "float16", "bfloat16"):
        want = _bits(dequantize(t, out, device="reference"))
        assert np.array_equal(_bits(dequantize(t, out, device=kernel_device)), want), out


_CASES = [("mxfp", "float8_e4m3"), ("mxfp", "float6_e2m3"), ("mxfp", "float4_e2m1"),
          ("nf4", "uint4"), ("per_block", "int4"), ("per_block", "uint4"),
          ("per_block", "int8"), ("per_block", "uint8")]


@pytest.mark.parametrize("ept", [32, 37, 1024])
@pytest.mark.parametrize("scheme,storage", _CASES)
def test_scaled_runs_off_the_groups(kernel_device: Device, scheme: str, storage: str,
                                    ept: int) -> None:
    """Rows of 203 elements (MX: 224, whole blocks): runs start at every residue mod 8, rows end
    in 11-element runs, work items of ``ept`` elements cut runs anywhere; all three outputs."""
    block = 64 if scheme == "nf4" else 32
    cols = 224 if scheme == "mxfp" else 203
    t = random_quantized(_rng("scaled runs", scheme, storage), scheme, storage, (5, cols),
                         axis=1, block_size=block, scale_type="float16",
                         # int8 as Q8_0 (no zero points: 8-bit codes through SCALE8), uint8
                         # with them (the byte loop)
                         symmetric=storage == "int8")
    dev_t = t.to(kernel_device)
    for out, width in (("float32", 4), ("float16", 2), ("bfloat16", 2)):
        want = _bits(dequantize(t, out, device="reference"))
        plan = plan_dequantize(dev_t.descriptor, out, ept=ept)
        bufs = list(dev_t.buffers)
        if not isinstance(bufs[0], Buffer):
            bufs = [Buffer.from_bytes(kernel_device, np.ascontiguousarray(b)) for b in bufs]
        got = Buffer(kernel_device, width * plan.count)
        launch(plan, kernel_device, bind_inputs(plan, kernel_device, bufs), got)
        assert np.array_equal(got.numpy(), want), f"{t} -> {out} with ept={ept}"


_MX_STORAGES = ["float8_e4m3", "float8_e5m2", "float6_e2m3", "float6_e3m2", "float4_e2m1"]


@pytest.mark.parametrize("storage", _MX_STORAGES)
def test_mx_every_code_at_every_scale(kernel_device: Device, storage: str) -> None:
    """Row e - 1 has e8m0 scale e for every block (1..254: both sides of each format's range
    where host C adds the exponent instead of multiplying) and every code; all three outputs,
    through dequantize and with 37-element work items (runs cut off the 8-code groups)."""
    bits = by_name(storage).bits
    cols = 2 * max(1 << bits, 32)
    rng = _rng("mx every scale", storage)
    codes = np.stack([np.roll(np.resize(np.arange(1 << bits, dtype=np.uint8), cols),
                              int(rng.integers(0, cols))) for _ in range(254)])
    stream = (codes.reshape(-1, 1) >> np.arange(bits, dtype=np.uint8)) & 1
    data = np.packbits(stream.astype(np.uint8).ravel(), bitorder="little")
    scales = np.repeat(np.arange(1, 255, dtype=np.uint8), -(-cols // 32))
    desc = TensorDescriptor(by_name(storage), (254, cols), RowMajor(),
                            (BufferHandle(data.nbytes, 64), BufferHandle(scales.nbytes, 64)),
                            quantization=MXFP(1, 32, 1))
    t = assemble(desc, [data, scales])
    dev_t = t.to(kernel_device)
    bufs = list(dev_t.buffers)
    if not isinstance(bufs[0], Buffer):
        bufs = [Buffer.from_bytes(kernel_device, np.ascontiguousarray(b)) for b in bufs]
    for out, width in (("float32", 4), ("float16", 2), ("bfloat16", 2)):
        want = _bits(dequantize(t, out, device="reference"))
        assert np.array_equal(_bits(dequantize(t, out, device=kernel_device)), want), out
        plan = plan_dequantize(dev_t.descriptor, out, ept=37)
        got = Buffer(kernel_device, width * plan.count)
        launch(plan, kernel_device, bind_inputs(plan, kernel_device, bufs), got)
        assert np.array_equal(got.numpy(), want), f"{out} with ept=37"


def _normal_range(tab: np.ndarray) -> tuple[int, int]:
    """The e8m0 exponents e for which 2^(e-127) keeps every nonzero finite entry normal."""
    fields = (tab.view(np.uint32) >> 23) & 0xFF
    live = fields[(tab != 0) & np.isfinite(tab)]
    return 128 - int(live.min()), 381 - int(live.max())


@pytest.mark.parametrize("storage", _MX_STORAGES)
@pytest.mark.parametrize("conv", ["F32", "BF16", "F16"])
def test_scale8_format_tables(kernel_device: Device, conv: str, storage: str) -> None:
    """SCALE8 with the library's own tables (host C: exponent arithmetic after checking the
    table), power-of-two scales at and just past both ends of the exact range, a scale that is
    no power of two, runs of 1..8 groups; then the same table buffer rewritten in place with
    one entry off by an ulp (host C checks tables per chunk: that one has no fast path)."""
    bits = by_name(storage).bits
    tab = np.asarray(table_values(storage), np.float32).copy()
    lo, hi = _normal_range(tab)
    n = 8 * 120  # whole runs of every g below
    data = _rng("scale8 formats", storage).integers(0, 256, n * bits // 8, dtype=np.uint8)
    stream = np.unpackbits(data, bitorder="little").reshape(n, bits)
    codes = (stream.astype(np.uint32) << np.arange(bits, dtype=np.uint32)).sum(1)
    tab_buf = Buffer.from_bytes(kernel_device, tab)
    probe = _scale8_kernel(conv, bits)  # one program, relaunched over the same buffers
    odd = tab.copy()
    odd.view(np.uint32)[3] += 1
    scales = [np.float32(2.0 ** (e - 127)) for e in (1, lo - 1, lo, 127, hi, hi + 1, 254)]
    for table, s, g in itertools.product((tab, odd), scales + [np.float32(0.75)],
                                         (1, 2, 3, 4, 5, 8)):
        tab_buf.copyin(table)
        t = table[codes]
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            v = np.where(np.isnan(t), t, t * s).astype(np.float32)
            want = v.astype(_NP[conv]).view(_DST[conv][1]) if conv != "F32" else v.view(np.uint32)
        out = Buffer(kernel_device, want.nbytes)
        kernel_device.run(probe, out, tab_buf, Buffer.from_bytes(kernel_device, data), n=n, g=g,
                          s=float(s))
        got = out.numpy(want.dtype)
        assert np.array_equal(got, want), \
            f"{'odd ' if table is odd else ''}s={s} g={g}: {np.flatnonzero(got != want)[:8]}"


_WHOLE = [*(("mxfp", s) for s in _MX_STORAGES), ("nf4", "uint4"), ("per_block", "int4"),
          ("per_block", "uint4")]


@pytest.mark.parametrize("shape", [(2100, 64), (300, 1000)])
@pytest.mark.parametrize("scheme,storage", _WHOLE)
def test_whole_block_runs(kernel_device: Device, scheme: str, storage: str,
                          shape: tuple[int, int]) -> None:
    """Runs of whole blocks (host C: one lookup and one SCALE8 per block after a run): rows of
    whole blocks, which the block loop continues into within an item, and rows of 1000
    elements (MX: 31 blocks, no partial ones; others: a partial block, left to the run loop;
    items start mid-row); enough elements for several host chunks; int4 without zero points,
    uint4 with them."""
    if scheme == "mxfp" and shape[1] == 1000:
        shape = (shape[0], 992)
    t = random_quantized(_rng("whole blocks", scheme, storage, *shape), scheme, storage, shape,
                         axis=1, block_size=64 if scheme == "nf4" else 32,
                         symmetric=storage == "int4", scale_type="float16")
    for out in ("float32", "float16", "bfloat16"):
        want = _bits(dequantize(t, out, device="reference"))
        assert np.array_equal(_bits(dequantize(t, out, device=kernel_device)), want), out


@pytest.mark.parametrize("bad", [0, 255])
@pytest.mark.parametrize("storage", ["float8_e4m3", "float6_e2m3", "float4_e2m1"])
def test_whole_block_runs_flag_invalid_scales(kernel_device: Device, storage: str,
                                              bad: int) -> None:
    """An invalid e8m0 byte in the third block of a row of whole blocks (host C reads it in
    its block loop, not in the run loop) is reported, for every output."""
    rows, cols = 4, 256
    data = _rng("whole blocks bad", storage).integers(
        0, 256, buffer_size(by_name(storage), rows * cols), dtype=np.uint8)
    scales = np.full(rows * cols // 32, 127, np.uint8)
    scales[cols // 32 + 2] = bad
    desc = TensorDescriptor(by_name(storage), (rows, cols), RowMajor(),
                            (BufferHandle(data.nbytes, 64), BufferHandle(scales.nbytes, 64)),
                            quantization=MXFP(1, 32, 1))
    t = assemble(desc, [data, scales])
    for out in ("float32", "bfloat16"):
        with pytest.raises(HurrayFormatError, match="Fix:"):
            dequantize(t, out, device=kernel_device)


def test_nf4_block_scales_round_like_the_oracle(kernel_device: Device) -> None:
    """NF4 absmax values whose products with the table's +-1.0 entries are exact rounding ties
    of bf16 (both parities) and f16, overflow either, go subnormal, or are -0.0 (host C scales
    each block's 16 entries and rounds them once per block); rows of whole 64-code blocks,
    every code in every block; 64-code blocks and 32-code ones (host C's half step)."""
    ties = [0x3F808000, 0x3F818000, 0x3F801000, 0x3F803000, 0x477FF000, 0x7F7FFFFF, 0x00000001,
            0x00400000, 0x80000000, 0x00000000, 0x33800000, 0x38801000, 0x3F800000, 0x40490FDB]
    rng = _rng("nf4 ties")
    nblk = 4 * len(ties)
    scales = np.array(ties * 4, np.uint32)
    scales[len(ties):] = rng.permutation(scales[len(ties):])
    codes = np.stack([rng.permutation(np.resize(np.arange(16, dtype=np.uint8), 64))
                      for _ in range(nblk)]).ravel()
    data = (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8)
    for block in (64, 32):
        n = nblk * block
        desc = TensorDescriptor(by_name("uint4"), (n // 256, 256), RowMajor(),
                                (BufferHandle(n // 2, 64), BufferHandle(scales.nbytes, 64)),
                                quantization=NF4(1, block, 1))
        t = assemble(desc, [data[: n // 2], scales.view(np.uint8)])
        for out in ("float32", "float16", "bfloat16"):
            want = _bits(dequantize(t, out, device="reference"))
            got = _bits(dequantize(t, out, device=kernel_device))
            assert np.array_equal(got, want), f"{out}, blocks of {block}"


def test_q4_0_every_f16_scale(kernel_device: Device) -> None:
    """Q4_0 (int4, f16 scale per 32) with every finite nonzero f16 scale, subnormal ones
    included, both signs, all 16 codes in every block (host C: runs of whole blocks read their
    f16 scales in one HFSCALE8 statement and scale the 16 entries once per block)."""
    halves = np.arange(1 << 16, dtype=np.uint32)
    scales = halves[((halves & 0x7C00) != 0x7C00) & ((halves & 0x7FFF) != 0)].astype(np.uint16)
    scales = np.concatenate([scales, scales[:2]])  # 63488 blocks: 1984 rows of 1024
    codes = np.tile(np.arange(16, dtype=np.uint8), scales.size * 2)
    codes = _rng("q4_0 f16 scales").permutation(codes.reshape(-1, 32)).reshape(-1)
    data = (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8)
    desc = TensorDescriptor(by_name("int4"), (scales.size * 32 // 1024, 1024), RowMajor(),
                            (BufferHandle(data.nbytes, 64), BufferHandle(scales.nbytes, 64)),
                            quantization=PerBlockAffine(1, 32, 1, None, SCALE_TYPE_TAGS["float16"]))
    t = assemble(desc, [data, scales.view(np.uint8)])
    for out in ("float16", "float32", "bfloat16"):
        want = _bits(dequantize(t, out, device="reference"))
        assert np.array_equal(_bits(dequantize(t, out, device=kernel_device)), want), out


@pytest.mark.parametrize("storage", ["int8", "uint8"])
def test_q8_0_every_f16_scale(kernel_device: Device, storage: str) -> None:
    """Q8_0 (int8, f16 scale per 32; and uint8 codes) with every finite nonzero f16 scale, both
    signs, and all 256 codes at each: products round to every f16 result, overflow to infinity
    and fall into f16 subnormals (host C: runs of whole blocks in one HFAFFINE8 statement); also
    through work items of 37 elements (runs cut anywhere), and the f32 and bf16 outputs."""
    halves = np.arange(1 << 16, dtype=np.uint32)
    ok = ((halves & 0x7C00) != 0x7C00) & ((halves & 0x7FFF) != 0)
    scales = halves[ok].astype(np.uint16)
    scales = np.concatenate([scales, scales[:2]])  # 63488 blocks: 1984 rows of 1024
    rows, cols = scales.size * 32 // 1024, 1024
    codes = np.tile(np.arange(256, dtype=np.uint8), scales.size // 8)
    codes = _rng("q8_0 f16 scales").permutation(codes.reshape(-1, 32)).reshape(-1)
    desc = TensorDescriptor(by_name(storage), (rows, cols), RowMajor(),
                            (BufferHandle(codes.nbytes, 64), BufferHandle(scales.nbytes, 64)),
                            quantization=PerBlockAffine(1, 32, 1, None, SCALE_TYPE_TAGS["float16"]))
    t = assemble(desc, [codes, scales.view(np.uint8)])
    dev_t = t.to(kernel_device)
    bufs = list(dev_t.buffers)
    if not isinstance(bufs[0], Buffer):
        bufs = [Buffer.from_bytes(kernel_device, np.ascontiguousarray(b)) for b in bufs]
    for out, width in (("float16", 2), ("float32", 4), ("bfloat16", 2)):
        want = _bits(dequantize(t, out, device="reference"))
        assert np.array_equal(_bits(dequantize(t, out, device=kernel_device)), want), out
        plan = plan_dequantize(dev_t.descriptor, out, ept=37)
        got = Buffer(kernel_device, width * plan.count)
        launch(plan, kernel_device, bind_inputs(plan, kernel_device, bufs), got)
        assert np.array_equal(got.numpy(), want), f"{out} with ept=37"


def test_q8_0_f32_scales_subnormal_and_huge(kernel_device: Device) -> None:
    """Q8_0-style int8 with f32 scales: subnormal ones (products f32 subnormals, which host C's
    AVX512-BF16 conversion would flush: it must not take them), the smallest normals, huge
    ones (products overflow) and ordinary ones, both signs, every code; all three outputs."""
    special = np.array([0x00000001, 0x00012345, 0x007FFFFF, 0x00800000, 0x80800000, 0x80000ABC,
                        0x7F7FFFFF, 0xFF000000, 0x3F800000, 0x3DCCCCCD, 0x33800000, 0x1F000000],
                       np.uint32).view(np.float32)
    scales = np.repeat(special, 8)  # each scale over 8 blocks: every code (int8) once
    codes = np.tile(np.arange(256, dtype=np.uint8), special.size)
    rows = codes.size // 256
    desc = TensorDescriptor(by_name("int8"), (rows, 256), RowMajor(),
                            (BufferHandle(codes.nbytes, 64), BufferHandle(scales.nbytes, 64)),
                            quantization=PerBlockAffine(1, 32, 1, None, SCALE_TYPE_TAGS["float32"]))
    t = assemble(desc, [codes, scales.view(np.uint8)])
    for out in ("float16", "bfloat16", "float32"):
        want = _bits(dequantize(t, out, device="reference"))
        assert np.array_equal(_bits(dequantize(t, out, device=kernel_device)), want), out
