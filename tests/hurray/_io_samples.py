"""Sample tensors of many layouts shared by the stream, file and CLI tests."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hurray_gpu.format import descriptor as d
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.tensor import Tensor

# Every Hurray type with a NumPy mapping, with sample values valid for that type.
NUMPY_SAMPLES: dict[str, np.ndarray] = {
    "float16": np.array([1.5, -2.0, 65504.0], dtype=np.float16),
    "bfloat16": np.array([1.0, -3.5, 1e30], dtype=ml_dtypes.bfloat16),
    "float32": np.array([[0.5, -1.0], [3.25, np.inf]], dtype=np.float32),
    "float64": np.array([1e300, -2.5], dtype=np.float64),
    "int8": np.array([-128, 0, 127], dtype=np.int8),
    "uint8": np.array([0, 255, 7], dtype=np.uint8),
    "int16": np.array([-32768, 32767], dtype=np.int16),
    "uint16": np.array([65535, 1], dtype=np.uint16),
    "int32": np.array([[-(2**31), 5], [2**31 - 1, 0]], dtype=np.int32),
    "uint32": np.array([2**32 - 1], dtype=np.uint32),
    "int64": np.array([-(2**63), 2**63 - 1], dtype=np.int64),
    "uint64": np.array([2**64 - 1, 0], dtype=np.uint64),
    "bool": np.array([[True, False, True], [True, True, False], [False, False, True]]),
    "float8_e4m3": np.array([448.0, -0.001953125, 1.0], dtype=ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.array([57344.0, -np.inf, 0.5], dtype=ml_dtypes.float8_e5m2),
    "float8_e8m0": np.array([1.0, 2.0**-126, 2.0**127], dtype=ml_dtypes.float8_e8m0fnu),
    "float4_e2m1": np.array([0.5, -6.0, 3.0, 1.5, 0.0], dtype=ml_dtypes.float4_e2m1fn),
    "float6_e2m3": np.array([7.5, -0.125, 1.0, 2.25, 4.5], dtype=ml_dtypes.float6_e2m3fn),
    "float6_e3m2": np.array([28.0, -0.0625, 3.0], dtype=ml_dtypes.float6_e3m2fn),
    "int4": np.array([[-8, 7, 0], [1, -1, 3]], dtype=ml_dtypes.int4),
    "uint4": np.array([5, 12, 3], dtype=ml_dtypes.uint4),
    "int2": np.array([-2, -1, 0, 1, 1], dtype=ml_dtypes.int2),
    "uint2": np.array([3, 1, 2], dtype=ml_dtypes.uint2),
    "complex64": np.array([1 + 2j, -3.5j], dtype=np.complex64),
    "complex128": np.array([[1e200 - 1j]], dtype=np.complex128),
}


def quantized_per_channel() -> Tensor:
    """int8 [4, 3] per-channel asymmetric: 3 buffers (data, scales, zero points)."""
    q = np.arange(12, dtype=np.int8).reshape(4, 3) - 6
    scales = np.array([0.5, 1.0, 2.0, 4.0], dtype="<f4")
    zps = np.array([0, 1, -1, 2], dtype="<i4")
    desc = d.TensorDescriptor(
        by_name("int8"), (4, 3), d.RowMajor(),
        (d.BufferHandle(12), d.BufferHandle(16), d.BufferHandle(16)),
        quantization=d.PerChannelAffine(axis=0, scale_buffer_index=1, zero_point_buffer_index=2))
    return Tensor.from_parts(desc, [q.view(np.uint8), scales.view(np.uint8), zps.view(np.uint8)])


def coo() -> Tensor:
    """float32 [3, 3] COO with 2 entries: values and u64 indices."""
    values = np.array([1.5, -2.0], dtype="<f4")
    indices = np.array([0, 1, 2, 2], dtype="<u8")
    desc = d.TensorDescriptor(by_name("float32"), (3, 3), d.COO(nnz=2, is_sorted=1),
                              (d.BufferHandle(8), d.BufferHandle(32)))
    return Tensor.from_parts(desc, [values.view(np.uint8), indices.view(np.uint8)])


def strided() -> Tensor:
    """float32 [3, 2] strided view (transposed) over a 2x3 row-major buffer."""
    base = np.arange(6, dtype="<f4")
    desc = d.TensorDescriptor(by_name("float32"), (3, 2), d.Strided((1, 3)),
                              (d.BufferHandle(24),))
    return Tensor.from_parts(desc, [base.view(np.uint8)])


def member(values: np.ndarray, parent: tuple[int, ...], offset: tuple[int, ...],
           role: int | None = None) -> Tensor:
    """A row-major float32 member carrying a shard (and optionally a member role)."""
    arr = np.ascontiguousarray(values, dtype="<f4")
    desc = d.TensorDescriptor(
        by_name("float32"), arr.shape, d.RowMajor(), (d.BufferHandle(arr.nbytes),),
        shard=d.Shard(parent, offset),
        composite_member=None if role is None else d.CompositeMember(role))
    return Tensor.from_parts(desc, [arr.view(np.uint8).reshape(-1)])


def head(rule: int, count: int, shape: tuple[int, ...] = (2, 4), combine: int = 0) -> object:
    """A float32 composite head descriptor."""
    return d.TensorDescriptor(by_name("float32"), shape, d.Composite(rule, combine, count), ())


def partition() -> Tensor:
    """float32 [2, 4] partition of two [2, 2] members."""
    left = member(np.array([[0, 1], [4, 5]]), (2, 4), (0, 0))
    right = member(np.array([[2, 3], [6, 7]]), (2, 4), (0, 2))
    return Tensor.from_parts(head(1, 2), [], [left, right])


def overlay() -> Tensor:
    """float32 [2, 4] overlay (replace): a base and one [1, 2] correction."""
    base = member(np.zeros((2, 4)), (2, 4), (0, 0), role=1)
    fix = member(np.array([[9, 9]]), (2, 4), (1, 1), role=0)
    return Tensor.from_parts(head(2, 2, combine=1), [], [base, fix])


def nested_group() -> Tensor:
    """A group whose second member is itself a partition composite."""
    lone = Tensor.from_numpy(np.array([1, 2, 3], dtype=np.int16))
    return Tensor.from_parts(head(3, 2), [], [lone, partition()])


def sample_tensors() -> dict[str, Tensor]:
    """A small mixed set used by truncation and CLI tests."""
    return {
        "weights": Tensor.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "flags": Tensor.from_numpy(np.array([True, False, True])),
        "q": quantized_per_channel(),
        "part": partition(),
        "empty": Tensor.from_numpy(np.zeros((0, 4), dtype=np.float32)),
    }


def _filled(dtype_name: str, shape: tuple[int, ...], layout: object, count: int,
            seed: int, **sections: object) -> Tensor:
    """A tensor whose buffers have the codec's required sizes (64 B where content-dependent)
    and deterministic pseudo-random content."""
    dtype = by_name(dtype_name) if not dtype_name.startswith("0x") else None
    if dtype is None:
        from hurray_gpu.format.dtypes import by_tag

        dtype = by_tag(int(dtype_name, 16))
    probe = d.TensorDescriptor(dtype, shape, layout, tuple(d.BufferHandle(0) for _ in
                                                          range(count)), **sections)
    sizes = [64 if s.min_size is None else s.min_size for s in probe.buffer_specs()]
    sizes += [64] * (count - len(sizes))
    desc = d.TensorDescriptor(dtype, shape, layout, tuple(d.BufferHandle(s) for s in sizes),
                              **sections)
    rng = np.random.default_rng(seed)
    # 0x7F keeps e8m0 scale bytes valid; the rest is arbitrary.
    bufs = [np.full(s, 0x7F, np.uint8) if i else rng.integers(0, 256, s, dtype=np.uint8)
            for i, s in enumerate(sizes)]
    if dtype.sub_byte and sizes and layout.__class__.__name__ in ("RowMajor", "ColMajor"):
        n = int(np.prod(shape))
        bufs[0] = Tensor.from_numpy(np.zeros(n, dtype=dtype.numpy)).buffers[0].array.copy()
    return Tensor.from_parts(desc, bufs)


def layout_samples() -> dict[str, Tensor]:
    """One tensor per layout family and quantization scheme the descriptor codec supports."""
    nested = d.Tiled((2, 2), inner_layout=0x04, inner=d.Tiled((1, 2)))
    ext = d.ExtensionType(bit_width=16, packing_factor=1)
    return {
        "col_major": _filled("float32", (3, 4), d.ColMajor(), 1, 1),
        "strided": _filled("int16", (3, 4), d.Strided((4, -1)), 1, 2, byte_offset=6),
        "tiled": _filled("float32", (3, 4), d.Tiled((2, 2)), 1, 3),
        "tiled_nested": _filled("float16", (4, 4), nested, 1, 4),
        "morton": _filled("float32", (4, 4), d.Morton((2, 2)), 1, 5),
        "hilbert": _filled("uint8", (4, 4), d.Hilbert(2, 2), 1, 6),
        "coo": _filled("float32", (3, 3), d.COO(2), 2, 7),
        "csr": _filled("float64", (3, 3), d.CSR(2), 3, 8),
        "csc": _filled("float32", (3, 3), d.CSC(2), 3, 9),
        "csf": _filled("float32", (2, 3, 4), d.CSF(2, (2, 0, 1)), 7, 10),
        "block_paged": _filled("float16", (5, 2, 3), d.BlockPaged(4, 2, num_seqs=1), 3, 11),
        "extension_layout": _filled("float32", (3, 4), d.Extension(0xF3, 7, b"xy"), 2, 12),
        "private_dtype": _filled("0xF1", (3, 4), d.RowMajor(), 1, 13, extension_type=ext),
        "per_tensor": _filled("int8", (4, 4), d.RowMajor(), 1, 14,
                              quantization=d.PerTensorAffine(0.5, 3)),
        "per_block": _filled("int4", (2, 64), d.RowMajor(), 3, 15,
                             quantization=d.PerBlockAffine(1, 32, 1, 2, 0x01)),
        "nf4": _filled("uint4", (2, 64), d.RowMajor(), 2, 16, quantization=d.NF4(1, 64, 1)),
        "mxfp": _filled("float8_e4m3", (2, 64), d.RowMajor(), 2, 17,
                        quantization=d.MXFP(1, 32, 1)),
        "scalar": _filled("float64", (), d.RowMajor(), 1, 18),
        "device_buffers": Tensor.from_parts(
            d.TensorDescriptor(by_name("float32"), (2,), d.RowMajor(), (d.BufferHandle(
                8, 4096, d.DeviceTag.CUDA, d.SyncMode.CONSUMER_STREAM,
                d.MemoryClass.UNIFIED),)), [bytes(8)]),
    }


# -- structures that once escaped the reader's bounds (docs/reliability.md) ------------------
def _u8_broadcast(shape: tuple[int, ...], parent: tuple[int, ...] | None = None,
                  offset: tuple[int, ...] = (), value: int = 7) -> Tensor:
    """A uint8 tensor of ``shape`` over one byte (every stride 0), optionally a shard."""
    shard = None if parent is None else d.Shard(parent, offset or (0,) * len(parent))
    desc = d.TensorDescriptor(by_name("uint8"), shape, d.Strided((0,) * len(shape)),
                              (d.BufferHandle(1),), shard=shard)
    return Tensor.from_parts(desc, [bytes([value])])


def broadcast_partition(side: int = 2048) -> Tensor:
    """A [side, side] uint8 partition of two stride-0 halves: ~270 bytes that once made the
    reader paint a side*side coverage grid."""
    half = side // 2
    parts = [_u8_broadcast((half, side), (side, side), (half * i, 0), 3 + i) for i in range(2)]
    return Tensor.from_parts(d.TensorDescriptor(by_name("uint8"), (side, side),
                                                d.Composite(1, 0, 2), ()), [], parts)


def staircase_partition(r: int) -> Tensor:
    """A [r, r] uint8 partition of 2r one-byte members: column j split at row j. Sorting the
    boxes along either axis leaves ~r of them open at once (a quadratic sweep)."""
    shape = (r, r)
    cols = [_u8_broadcast((j, 1), shape, (0, j), j & 0xFF) for j in range(r)]
    cols += [_u8_broadcast((r - j, 1), shape, (j, j), ~j & 0xFF) for j in range(r)]
    return Tensor.from_parts(d.TensorDescriptor(by_name("uint8"), shape,
                                                d.Composite(1, 0, 2 * r), ()), [], cols)


def group_in_partition() -> Tensor:
    """A float32 [2, 4] partition whose left member is a group composite (valid on the wire;
    a group has no dense value, so it cannot be materialized)."""
    group = Tensor.from_parts(
        d.TensorDescriptor(by_name("float32"), (2, 2), d.Composite(3, 0, 1), (),
                           shard=d.Shard((2, 4), (0, 0))),
        [], [Tensor.from_numpy(np.ones((2, 2), dtype=np.float32))])
    right = member(np.full((2, 2), 2.0), (2, 4), (0, 2))
    return Tensor.from_parts(head(1, 2), [], [group, right])


def nested_groups(depth: int) -> Tensor:
    """``depth`` group heads, each holding the next; the innermost holds one int8 tensor."""
    t = Tensor.from_numpy(np.array([1, 2], dtype=np.int8))
    for _ in range(depth):
        t = Tensor.from_parts(d.TensorDescriptor(by_name("int8"), (2,), d.Composite(3, 0, 1),
                                                 ()), [], [t])
    return t


def hostile_samples() -> dict[str, Tensor]:
    """Valid tensors whose structure once escaped a bound (fuzz seeds and regression tests)."""
    return {"broadcast_partition": broadcast_partition(), "staircase": staircase_partition(24),
            "group_in_partition": group_in_partition(), "deep_groups": nested_groups(8),
            "broadcast": _u8_broadcast((1 << 16, 1 << 14))}
