"""Descriptor codec: spec worked examples, every layout/scheme/section round-trips byte-exactly."""

from __future__ import annotations

import struct

import pytest

from hurray_gpu.format.descriptor import (
    COO,
    CSC,
    CSF,
    CSR,
    MXFP,
    NF4,
    BlockPaged,
    BufferHandle,
    ColMajor,
    Composite,
    CompositeMember,
    DeviceTag,
    Extension,
    ExtensionType,
    Hilbert,
    MemoryClass,
    Morton,
    PerBlockAffine,
    PerChannelAffine,
    PerTensorAffine,
    RawQuantization,
    RowMajor,
    Shard,
    Statistics,
    Strided,
    TensorDescriptor,
    Tiled,
    UnknownLayout,
    decode_descriptor,
    decode_descriptor_prefix,
    peek_descriptor_length,
)
from hurray_gpu.format.dtypes import by_name, by_tag

WORKED_EXAMPLE = bytes.fromhex(
    "48525259 01 00 3D000000 00000000 03 01 02000000"
    "0300000000000000 0400000000000000"
    "0000000000000000"
    "01"
    "C000000000000000 40000000 00 00 00 00".replace(" ", "")
)


def H(size: int, align: int = 64, dev: int = 0, sync: int = 0, mem: int = 0) -> BufferHandle:
    return BufferHandle(size, align, dev, sync, mem)


def roundtrip(d: TensorDescriptor) -> bytes:
    data = d.encode()
    back = decode_descriptor(data)
    assert back.encode() == data
    assert back == d
    assert struct.unpack_from("<I", data, 6)[0] == len(data) == d.descriptor_length
    return data


def test_spec_worked_example_61_bytes() -> None:
    assert len(WORKED_EXAMPLE) == 61
    d = decode_descriptor(WORKED_EXAMPLE)
    assert (d.dtype.name, d.shape, d.layout, d.byte_offset) == ("float32", (3, 4), RowMajor(), 0)
    assert d.buffers == (H(192),)  # over-sized data buffer is legal (docs/format.md, Buffer sizes)
    assert d.required_buffer_sizes() == (48,)
    assert d.encode() == WORKED_EXAMPLE
    built = TensorDescriptor(by_name("float32"), (3, 4), RowMajor(), (H(192),))
    assert built.encode() == WORKED_EXAMPLE
    assert peek_descriptor_length(WORKED_EXAMPLE[:10]) == 61


def test_prefix_decoding_of_two_descriptors() -> None:
    other = TensorDescriptor.dense("int8", (5,)).encode()
    blob = WORKED_EXAMPLE + other
    first, n1 = decode_descriptor_prefix(blob)
    second, n2 = decode_descriptor_prefix(memoryview(blob), n1)
    assert (n1, n2) == (61, 53)
    assert first.shape == (3, 4) and second.shape == (5,)
    assert decode_descriptor(bytearray(other)) == second


def test_dense_constructor_variants() -> None:
    d = TensorDescriptor.dense("uint4", (3, 5), col_major=True)
    assert d.layout == ColMajor() and d.buffers == (H(8),)
    cuda = TensorDescriptor.dense(by_tag(0x03), (2,), device_tag=DeviceTag.CUDA,
                                  memory_class=MemoryClass.PEER)
    assert cuda.buffers == (BufferHandle(8, 4096, 1, 0, 3),)
    scalar = TensorDescriptor.dense(0x44, ())  # float6: ceil(1/4)*3 = 3 bytes
    assert scalar.buffers[0].byte_size == 3 and scalar.element_count == 1
    roundtrip(scalar)


def test_dynamic_dimension_is_none() -> None:
    d = TensorDescriptor(by_name("float32"), (None, 4), RowMajor(), (H(0),))
    data = roundtrip(d)
    assert data[20:28] == b"\xff" * 8
    assert d.is_dynamic and d.element_count is None
    assert d.required_buffer_sizes() == (None,)


@pytest.mark.parametrize("layout,shape,size,need", [
    (Strided((-4, 1)), (3, 4), 48, 48),       # byte_offset 32: offsets -8..3 -> 12 elements
    (Tiled((2, 4)), (6, 8), 192, 192),        # spec tiled example: 3x2 tiles of 8 elements
    (Tiled((2, 4)), (5, 7), 192, 192),        # partial tiles still store whole tiles
    (Tiled((4, 4), 0x02, 0x04, inner=Tiled((2, 2), 0x01, 0x03, inner_strides=(2, 1))),
     (8, 8), 256, 256),
    (Tiled((2, 2), 0x03, 0x01, outer_strides=(2, 1)), (4, 4), 64, 64),
    (Morton((1, 2)), (2, 4), 48, 48),         # unequal bits: max code 11 -> 12 elements
    (Hilbert(2, 2), (4, 4), 64, 64),
])
def test_dense_layouts_roundtrip_and_size(layout, shape, size, need) -> None:
    off = 32 if isinstance(layout, Strided) else 0
    d = TensorDescriptor(by_name("float32"), shape, layout, (H(size),), off)
    assert d.required_buffer_sizes() == (need,)
    roundtrip(d)


def test_tiled_wire_bytes() -> None:
    t = Tiled((2, 4), 0x03, 0x04, outer_strides=(2, 1), inner=Tiled((1, 2)))
    d = TensorDescriptor(by_name("int8"), (6, 8), t, (H(48),))
    data = roundtrip(d)
    block = data[44:44 + 16 + 4 + 16 + 16 + 4]
    assert block == (struct.pack("<2Q", 2, 4) + bytes([3, 4, 0, 0]) + struct.pack("<2q", 2, 1)
                     + struct.pack("<2Q", 1, 2) + bytes([1, 1, 0, 0]))


def test_sparse_layouts_and_buffer_roles() -> None:
    f32 = by_name("float32")
    coo = TensorDescriptor(f32, (4, 5), COO(3, 1), (H(12), H(48)))
    assert [s.role for s in coo.buffer_specs()] == ["values", "indices"]
    assert coo.required_buffer_sizes() == (12, 48)
    csr = TensorDescriptor(f32, (4, 5), CSR(3), (H(12), H(24), H(40)))
    assert csr.required_buffer_sizes() == (12, 24, 40)
    csc = TensorDescriptor(f32, (4, 5), CSC(3), (H(12), H(24), H(48)))
    assert [s.role for s in csc.buffer_specs()] == ["values", "row_indices", "col_ptr"]
    csf = TensorDescriptor(f32, (2, 3, 4), CSF(5, (2, 0, 1)), tuple(H(64) for _ in range(7)))
    assert [s.role for s in csf.buffer_specs()][:3] == ["values", "pos_0", "crd_0"]
    assert csf.required_buffer_sizes() == (20, 16, None, None, None, None, 40)
    for d in (coo, csr, csc, csf):
        roundtrip(d)
    data = csf.encode()
    assert data[52:52 + 8 + 12 + 8] == struct.pack("<Q3I", 5, 2, 0, 1) + bytes(8)


def test_block_paged_with_per_block_scales() -> None:
    bp = BlockPaged(page_size=16, num_pages=4, num_seqs=2, kv_role=0, layer_index=3,
                    block_table_index_type=1)
    q = PerBlockAffine(axis=0, block_size=16, scale_buffer_index=3, scale_type_tag=0x01)
    d = TensorDescriptor(by_name("int8"), (20, 2, 8), bp, (H(1024), H(16), H(24), H(128)),
                         quantization=q)
    assert [s.role for s in d.buffer_specs()] == ["page_pool", "block_table", "seq_ptr",
                                                   "scales"]
    assert d.required_buffer_sizes() == (1024, None, 24, 128)
    data = roundtrip(d)
    lay = data[52:84]
    assert lay == (struct.pack("<IQIIBIB", 16, 4, 0, 2, 0, 3, 1) + bytes(6))


def test_composite_head_and_member() -> None:
    head = TensorDescriptor(by_name("float16"), (64, 64), Composite(2, 1, 2))
    data = roundtrip(head)
    assert data[-9:] == bytes([2, 1, 0, 0]) + struct.pack("<I", 2) + b"\x00"
    assert head.buffer_specs() == () and head.data_buffer_index is None
    member = TensorDescriptor(by_name("float16"), (64, 64), RowMajor(), (H(8192),),
                              shard=Shard((64, 64), (0, 0)), composite_member=CompositeMember(1))
    data = roundtrip(member)
    assert data[-16:] == b"\x01" + bytes(15)
    assert struct.unpack_from("<I", data, 10)[0] == 0x12


def test_extension_type_and_extension_layout() -> None:
    ext = ExtensionType(bit_width=12 * 2, packing_factor=1, is_float=1, sign_bits=1,
                        exponent_bits=8, mantissa_bits=15, exponent_bias=127, has_nan=1)
    d = TensorDescriptor(by_tag(0xF3), (10,), RowMajor(), (H(30),), extension_type=ext)
    assert d.required_buffer_sizes() == (30,)
    data = roundtrip(d)
    assert data[-20:] == struct.pack("<IBBBBBB2xIBB2x", 24, 1, 1, 0, 1, 8, 15, 127, 1, 0)
    lay = Extension(0xF1, 0xDEADBEEF, b"abc")
    x = TensorDescriptor(by_name("int8"), (4,), lay, (H(4), H(64)))
    assert [s.role for s in x.buffer_specs()] == ["opaque", "opaque"]
    assert roundtrip(x)[36:36 + 15] == struct.pack("<QI", 0xDEADBEEF, 3) + b"abc"


def test_statistics_section_bytes() -> None:
    s = Statistics(0x3F, 3, 0.25, -1.5, 2.0, 2.0, 0.125, 1.0, 2, 4, 0, 1)
    d = TensorDescriptor(by_name("float32"), (4,), COO(3), (H(12), H(24)), statistics=s)
    data = roundtrip(d)
    assert data[-72:] == struct.pack("<IIQddddddBBBBI", 0x3F, 0, 3, 0.25, -1.5, 2.0, 2.0, 0.125,
                                     1.0, 2, 4, 0, 1, 0)


def test_per_channel_spec_example_bytes() -> None:
    q = PerChannelAffine(axis=0, scale_buffer_index=1, zero_point_buffer_index=2)
    d = TensorDescriptor(by_name("int8"), (4, 8), RowMajor(), (H(32), H(16), H(16)),
                         quantization=q)
    data = roundtrip(d)
    payload = bytes.fromhex("02010000 00000000 01000000 02000000 03000000".replace(" ", ""))
    assert data[-24:] == struct.pack("<I", 20) + payload
    assert [s.role for s in d.buffer_specs()] == ["data", "scales", "zero_points"]
    assert d.required_buffer_sizes() == (32, 16, 16)


@pytest.mark.parametrize("dtype,shape,q,buffers,payload", [
    ("int8", (4,), PerTensorAffine(0.5, -3), (4,),
     struct.pack("<BBHfi4x", 1, 1, 0, 0.5, -3)),
    ("uint4", (2, 64), PerBlockAffine(1, 32, 2, 1, 0x02), (64, 16, 8),
     struct.pack("<BBHIIIIB3x", 3, 1, 0, 1, 32, 2, 1, 2)),
    ("int4", (128, 128), PerBlockAffine(1, 128, 1, None, 0x01), (8192, 256),
     struct.pack("<BBHIIIIB3x", 3, 1, 1, 1, 128, 1, 0xFFFFFFFF, 1)),
    ("int2", (3, 5), PerBlockAffine(1, 4, 1, 1), (4, 48),  # shared [scales|zp]: 6*4 + 6*4
     struct.pack("<BBHIIIIB3x", 3, 1, 0, 1, 4, 1, 1, 3)),
    ("uint4", (3, 100), NF4(1, 64, 1), (150, 24),
     struct.pack("<BBHIII", 4, 1, 0, 1, 64, 1)),
    ("float4_e2m1", (2, 64), MXFP(1, 32, 1), (64, 4),
     struct.pack("<BBHIII", 5, 1, 0, 1, 32, 1)),
    ("float8_e4m3", (0, 64), MXFP(1, 32, 1), (0, 0),
     struct.pack("<BBHIII", 5, 1, 0, 1, 32, 1)),
    ("uint4", (0, 8), NF4(0, 8, 1), (0, 0),
     struct.pack("<BBHIII", 4, 1, 0, 0, 8, 1)),
])
def test_quantization_schemes(dtype, shape, q, buffers, payload) -> None:
    d = TensorDescriptor(by_name(dtype), shape, RowMajor(), tuple(H(b) for b in buffers),
                         quantization=q)
    assert d.required_buffer_sizes()[1:] == buffers[1:]
    data = roundtrip(d)
    assert struct.pack("<I", len(payload)) + payload in data


def test_quantization_trailing_bytes_are_kept() -> None:
    base = TensorDescriptor(by_name("int8"), (4,), RowMajor(), (H(4),),
                            quantization=PerTensorAffine(2.0, 1))
    data = bytearray(base.encode())
    qpos = 36 + 1 + 16  # layout block of a rank-1 row-major tensor is empty
    data[qpos:qpos + 4] = struct.pack("<I", 20)
    data[qpos + 4 + 16:qpos + 4 + 16] = b"\x01\x02\x03\x04"
    data[6:10] = struct.pack("<I", len(data))
    d = decode_descriptor(bytes(data))
    assert d.quantization == PerTensorAffine(2.0, 1, b"\x01\x02\x03\x04")
    assert d.encode() == bytes(data)


def test_minor_version_trailing_bytes_round_trip() -> None:
    data = bytearray(WORKED_EXAMPLE + b"future")
    data[5] = 3
    data[6:10] = struct.pack("<I", len(data))
    d = decode_descriptor(bytes(data))
    assert (d.version_minor, d.trailing) == (3, b"future")
    assert d.encode() == bytes(data)


def test_permissive_unknown_tags() -> None:
    data = bytearray(WORKED_EXAMPLE)
    data[14] = 0x30  # unassigned Tier 1 type tag
    d = decode_descriptor(bytes(data), permissive=True)
    assert d.dtype.unknown and not d.interpretable
    assert d.required_buffer_sizes() == (None,)
    assert d.encode(permissive=True) == bytes(data)
    data = bytearray(WORKED_EXAMPLE)
    data[15] = 0x20  # reserved layout tag: only header, shape and byte_offset are recoverable
    d = decode_descriptor(bytes(data), permissive=True)
    assert isinstance(d.layout, UnknownLayout) and d.layout.payload == WORKED_EXAMPLE[44:]
    assert d.buffers == () and d.shape == (3, 4)
    assert d.encode(permissive=True) == bytes(data)


def test_permissive_unknown_quantization_scheme() -> None:
    base = TensorDescriptor(by_name("int8"), (4,), RowMajor(), (H(4),),
                            quantization=PerTensorAffine(2.0, 1)).encode()
    data = bytearray(base)
    data[57] = 0x06
    d = decode_descriptor(bytes(data), permissive=True)
    assert isinstance(d.quantization, RawQuantization) and d.quantization.SCHEME == 6
    assert d.encode(permissive=True) == bytes(data)


def test_decode_of_10000_descriptors_is_fast_enough_to_measure() -> None:
    # Timing is reported, not asserted; this only checks the loop works on a memoryview.
    view = memoryview(WORKED_EXAMPLE)
    assert all(decode_descriptor(view).shape == (3, 4) for _ in range(100))


def test_permissive_unknown_layout_with_private_type() -> None:
    data = bytearray(WORKED_EXAMPLE)
    data[14], data[15] = 0xF4, 0x30
    d = decode_descriptor(bytes(data), permissive=True)
    assert d.dtype.private and d.layout.tag == 0x30 and d.extension_type is None
    assert d.encode(permissive=True) == bytes(data)


def test_dense_rejects_private_type() -> None:
    from hurray_gpu.errors import HurrayFormatError

    with pytest.raises(HurrayFormatError):
        TensorDescriptor.dense(0xF1, (4,))


@pytest.mark.parametrize("desc", [
    TensorDescriptor(by_name("float32"), (2,), RowMajor(), (H(8, align=0),)),
    TensorDescriptor(by_name("float32"), (2,), RowMajor(), (H(8, dev=0, sync=1),)),
    TensorDescriptor(by_name("float32"), (2,), RowMajor(), (H(8, mem=3),)),
    TensorDescriptor(by_name("float32"), (2,), RowMajor(), (H(4),)),
    TensorDescriptor(by_name("float32"), (-1,), RowMajor(), (H(8),)),
    TensorDescriptor(by_name("float32"), (2, 2), Strided((1,)), (H(16),)),
    TensorDescriptor(by_name("int8"), (4, 2, 2), BlockPaged(4, 1, kv_role=5), (H(16), H(4), H(8))),
    TensorDescriptor(by_name("int8"), (4,), COO(2 ** 64), (H(4), H(8))),
    TensorDescriptor(by_name("int8"), (4,), RowMajor(), (H(4),),
                     quantization=PerChannelAffine(0, 1, 0xFFFFFFFF)),
    TensorDescriptor(by_tag(0xF1), (4,), RowMajor(), (H(4),)),
    TensorDescriptor(by_name("int8"), (4,), UnknownLayout(0x30, 0x40)),
])
def test_encode_validates_before_writing(desc: TensorDescriptor) -> None:
    from hurray_gpu.errors import HurrayFormatError

    with pytest.raises(HurrayFormatError):
        desc.encode(permissive=True)
