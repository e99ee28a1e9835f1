"""Every MUST-reject rule of the descriptor, each with a hand-built malformed descriptor."""

from __future__ import annotations

import struct

import pytest

from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.format.descriptor import decode_descriptor

P = struct.pack
F32, I8, U4, I4 = 0x03, 0x10, 0x49, 0x48


def handle(size: int = 48, align: int = 64, dev: int = 0, sync: int = 0, mem: int = 0,
           res: int = 0) -> bytes:
    return P("<QIBBBB", size, align, dev, sync, mem, res)


def build(*, ttag: int = F32, ltag: int = 1, shape: tuple = (3, 4), byte_offset: int = 0,
          layout: bytes = b"", buffers: tuple = (handle(),), flags: int = 0,
          sections: bytes = b"", major: int = 1, minor: int = 0, length: int | None = None,
          rank: int | None = None, count: int | None = None, magic: bytes = b"HRRY") -> bytes:
    body = (P(f"<{len(shape)}Q", *shape) + P("<Q", byte_offset) + layout
            + bytes([len(buffers) if count is None else count]) + b"".join(buffers) + sections)
    total = 20 + len(body) if length is None else length
    r = len(shape) if rank is None else rank
    return magic + P("<BBIIBBI", major, minor, total, flags, ttag, ltag, r) + body


def quant(payload: bytes, length: int | None = None) -> bytes:
    return P("<I", len(payload) if length is None else length) + payload


def per_tensor(scale: float = 0.5, zp: int = 0, flags: int = 0, ver: int = 1,
               res: bytes = bytes(4), tag: int = 1) -> bytes:
    return quant(P("<BBHfi", tag, ver, flags, scale, zp) + res)


def per_channel(axis: int = 0, s: int = 1, z: int = 2, flags: int = 0, stype: int = 3,
                res: bytes = bytes(3)) -> bytes:
    return quant(P("<BBHIIIB", 2, 1, flags, axis, s, z, stype) + res)


def per_block(axis: int = 1, block: int = 4, s: int = 1, z: int = 0xFFFFFFFF, flags: int = 1,
              stype: int = 3) -> bytes:
    return quant(P("<BBHIIIIB3x", 3, 1, flags, axis, block, s, z, stype))


def blocked(tag: int, axis: int = 1, block: int = 32, s: int = 1, flags: int = 0) -> bytes:
    return quant(P("<BBHIII", tag, 1, flags, axis, block, s))


def q_desc(q: bytes, ttag: int = I8, shape: tuple = (4, 8), bufs: tuple = (32, 16, 16),
           **kw) -> bytes:
    return build(ttag=ttag, shape=shape, buffers=tuple(handle(b) for b in bufs), flags=1,
                 sections=q, **kw)


def tiled(tile: tuple = (2, 2), outer: int = 1, inner: int = 1, res: bytes = b"\0\0",
          extra: bytes = b"") -> bytes:
    return P(f"<{len(tile)}Q", *tile) + bytes([outer, inner]) + res + extra


def nested_tiled(levels: int) -> bytes:
    block = tiled((1, 1), 1, 1)
    for _ in range(levels - 1):
        block = tiled((1, 1), 1, 4) + block
    return block


def bp(page: int = 4, pages: int = 2, axis: int = 0, seqs: int = 1, role: int = 2,
       itype: int = 0, res: bytes = bytes(6)) -> bytes:
    return P("<IQIIBIB", page, pages, axis, seqs, role, 0xFFFFFFFF, itype) + res


BP_BUFS = (handle(128), handle(8), handle(8))


def composite(rule: int = 1, op: int = 0, count: int = 2, res: bytes = b"\0\0") -> bytes:
    return bytes([rule, op]) + res + P("<I", count)


def comp(layout: bytes, **kw) -> bytes:
    kw.setdefault("buffers", ())
    return build(ltag=0x0B, layout=layout, **kw)


def stats(mask: int = 0, res: int = 0, nnz: int = 0, sd: float = 0.0, nm: tuple = (0, 0),
          nan_inf: tuple = (0, 0), res2: int = 0) -> bytes:
    return P("<IIQddddddBBBBI", mask, res, nnz, 0.0, 0.0, 0.0, 0.0, 0.0, sd, *nm, *nan_inf, res2)


def ext(bw: int = 8, pf: int = 1, fl: int = 0, sg: int = 0, sb: int = 0, eb: int = 0,
        mb: int = 0, res: int = 0, bias: int = 0, nan: int = 0, inf: int = 0,
        res2: int = 0) -> bytes:
    return P("<IBBBBBBHIBBH", bw, pf, fl, sg, sb, eb, mb, res, bias, nan, inf, res2)


def csr(nnz: int = 2, res: bytes = bytes(8)) -> bytes:
    return P("<Q", nnz) + res


CSR_BUFS = (handle(8), handle(16), handle(32))
COO_BUFS = (handle(8), handle(32))
DYN = 0xFFFFFFFFFFFFFFFF

CASES: list[tuple[str, bytes, str]] = [
    # fixed header
    ("magic", build(magic=b"HRRX"), "magic"),
    ("version_major_0", build(major=0), "version_major"),
    ("version_major_2", build(major=2), "version_major"),
    ("length_below_20", build(length=19), "descriptor_length"),
    ("length_past_input", build(length=200), "descriptor_length"),
    ("length_too_long_minor0", build(length=62) + b"\0", "descriptor_length"),
    ("length_too_short", build(length=60)[:60], "buffers"),
    ("reserved_flag_bit5", build(flags=0x20), "flags"),
    ("reserved_flag_bit31", build(flags=0x80000000), "flags"),
    ("type_tag_0", build(ttag=0x00), "type_tag"),
    ("type_tag_ff", build(ttag=0xFF), "type_tag"),
    ("type_tag_47", build(ttag=0x47), "type_tag"),
    ("type_tag_reserved_80", build(ttag=0x80), "type_tag"),
    ("type_tag_unknown_strict", build(ttag=0x30), "type_tag"),
    ("layout_tag_0", build(ltag=0x00), "layout_tag"),
    ("layout_tag_ff", build(ltag=0xFF), "layout_tag"),
    ("layout_tag_reserved_0c", build(ltag=0x0C), "layout_tag"),
    ("layout_tag_reserved_41", build(ltag=0x41), "layout_tag"),
    ("layout_tag_reserved_ef", build(ltag=0xEF), "layout_tag"),
    ("rank_65", build(shape=(1,) * 65, buffers=(handle(4),)), "rank"),
    ("rank_huge_in_tiny_input", build(rank=0xFFFFFFFF, shape=()), "rank"),
    ("rank_claims_more_dims", build(rank=64, shape=(3, 4)), "shape"),
    ("buffer_count_past_end", build(count=200), "buffers"),
    # core fields and the scalar / dynamic rules
    ("scalar_strided", build(ltag=3, shape=(), buffers=(handle(4),)), "rank"),
    ("scalar_morton", build(ltag=5, shape=(), buffers=(handle(4),)), "rank"),
    ("byte_offset_past_buffer", build(byte_offset=49), "byte_offset"),
    ("byte_offset_on_sparse", build(ltag=7, layout=csr(), byte_offset=8,
                                    buffers=(handle(64), handle(16), handle(32))), "byte_offset"),
    ("data_buffer_too_small", build(buffers=(handle(47),)), "byte_size"),
    ("data_buffer_too_small_with_offset", build(byte_offset=4), "byte_size"),
    ("bool_buffer_too_small", build(ttag=0x20, shape=(10,), buffers=(handle(1),)), "byte_size"),
    ("float6_groups", build(ttag=0x44, shape=(5,), buffers=(handle(4),)), "byte_size"),
    ("dynamic_dim_with_shard", build(shape=(DYN, 4), flags=2,
                                     sections=P("<4Q", 8, 4, 0, 0)), "parent_shape"),
    ("dynamic_quant_axis", q_desc(per_channel(axis=0), shape=(DYN, 8)), "axis"),
    ("dynamic_block_axis", q_desc(blocked(4, axis=0, block=8), ttag=U4, shape=(DYN, 8),
                                  bufs=(16, 4)), "axis"),
    # strided
    ("strided_negative_reach", build(ltag=3, layout=P("<2q", -4, 1), byte_offset=28),
     "byte_offset"),
    ("strided_too_small", build(ltag=3, layout=P("<2q", 8, 1), buffers=(handle(76),)),
     "byte_size"),
    # tiled
    ("tiled_zero_tile", build(ltag=4, layout=tiled((0, 2))), "tile_shape"),
    ("tiled_outer_4", build(ltag=4, layout=tiled(outer=4)), "outer_layout"),
    ("tiled_outer_0", build(ltag=4, layout=tiled(outer=0)), "outer_layout"),
    ("tiled_inner_5", build(ltag=4, layout=tiled(inner=5)), "inner_layout"),
    ("tiled_reserved", build(ltag=4, layout=tiled(res=b"\0\1")), "tiled._reserved"),
    ("tiled_depth_9", build(ltag=4, layout=nested_tiled(9)), "inner_layout"),
    ("tiled_buffer_short", build(ltag=4, layout=tiled((2, 3)), buffers=(handle(47),)),
     "byte_size"),
    ("tiled_scalar", build(ltag=4, shape=(), layout=b"\1\1\0\0", buffers=(handle(4),)), "rank"),
    # Morton / Hilbert
    ("morton_bits_0", build(ltag=5, layout=P("<2I", 0, 2)), "morton_bits"),
    ("morton_shape_exceeds", build(ltag=5, layout=P("<2I", 1, 2), buffers=(handle(64),)),
     "morton_bits"),
    ("morton_buffer_short", build(ltag=5, shape=(4, 4), layout=P("<2I", 2, 2),
                                  buffers=(handle(60),)), "byte_size"),
    ("morton_huge_bits", build(ltag=5, shape=(4, 4), layout=P("<2I", 40, 40)), "byte_size"),
    ("hilbert_order_0", build(ltag=0x40, shape=(1, 1), layout=P("<2I", 0, 2)), "hilbert_order"),
    ("hilbert_rank_mismatch", build(ltag=0x40, shape=(4, 4), layout=P("<2I", 2, 3)),
     "hilbert_rank"),
    ("hilbert_rank_1", build(ltag=0x40, shape=(4,), layout=P("<2I", 2, 1)), "hilbert_rank"),
    ("hilbert_not_power", build(ltag=0x40, shape=(4, 3), layout=P("<2I", 2, 2),
                                buffers=(handle(64),)), "hilbert_order"),
    # sparse
    ("coo_is_sorted_2", build(ltag=6, layout=P("<QB7x", 2, 2), buffers=COO_BUFS), "is_sorted"),
    ("coo_reserved", build(ltag=6, layout=P("<QB6xB", 2, 1, 1), buffers=COO_BUFS),
     "coo._reserved"),
    ("coo_scalar", build(ltag=6, shape=(), layout=P("<QB7x", 0, 0),
                         buffers=(handle(0), handle(0))), "rank"),
    ("coo_one_buffer", build(ltag=6, layout=P("<QB7x", 2, 0), buffers=(handle(8),)),
     "buffer_count"),
    ("coo_indices_short", build(ltag=6, layout=P("<QB7x", 2, 0),
                                buffers=(handle(8), handle(24))), "byte_size"),
    ("csr_rank_3", build(ltag=7, shape=(2, 3, 4), layout=csr(), buffers=CSR_BUFS), "rank"),
    ("csr_reserved", build(ltag=7, layout=csr(res=b"\1" + bytes(7)), buffers=CSR_BUFS),
     "sparse._reserved"),
    ("csr_two_buffers", build(ltag=7, layout=csr(), buffers=CSR_BUFS[:2]), "buffer_count"),
    ("csr_row_ptr_short", build(ltag=7, layout=csr(), buffers=CSR_BUFS[:2] + (handle(24),)),
     "byte_size"),
    ("csc_col_ptr_short", build(ltag=8, layout=csr(), buffers=CSR_BUFS[:2] + (handle(32),)),
     "byte_size"),
    ("csf_rank_2", build(ltag=9, layout=P("<Q2I8x", 1, 0, 1),
                         buffers=tuple(handle(64) for _ in range(5))), "rank"),
    ("csf_mode_order_dup", build(ltag=9, shape=(2, 2, 2), layout=P("<Q3I8x", 1, 0, 0, 2),
                                 buffers=tuple(handle(64) for _ in range(7))), "mode_order"),
    ("csf_reserved", build(ltag=9, shape=(2, 2, 2), layout=P("<Q3I7xB", 1, 0, 1, 2, 1),
                           buffers=tuple(handle(64) for _ in range(7))), "csf._reserved"),
    ("csf_buffer_count", build(ltag=9, shape=(2, 2, 2), layout=P("<Q3I8x", 1, 0, 1, 2),
                               buffers=tuple(handle(64) for _ in range(6))), "buffer_count"),
    ("csf_with_shard", build(ltag=9, shape=(2, 2, 2), layout=P("<Q3I8x", 1, 0, 1, 2),
                             buffers=tuple(handle(64) for _ in range(7)), flags=2,
                             sections=P("<6Q", 2, 2, 2, 0, 0, 0)), "flags"),
    ("sparse_stats_nnz_mismatch", build(ltag=7, layout=csr(), buffers=CSR_BUFS, flags=8,
                                        sections=stats(mask=1, nnz=3)), "nnz"),
    # block-paged
    ("bp_rank_2", build(ltag=0x0A, shape=(4, 4), layout=bp(), buffers=BP_BUFS), "rank"),
    ("bp_page_size_0", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(page=0), buffers=BP_BUFS),
     "page_size"),
    ("bp_paged_axis_1", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(axis=1), buffers=BP_BUFS),
     "paged_axis"),
    ("bp_kv_role_3", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(role=3), buffers=BP_BUFS),
     "kv_role"),
    ("bp_index_type_2", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(itype=2), buffers=BP_BUFS),
     "block_table_index_type"),
    ("bp_reserved", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(res=bytes(5) + b"\1"),
                          buffers=BP_BUFS), "block_paged._reserved"),
    ("bp_shard", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(), buffers=BP_BUFS, flags=2,
                       sections=P("<6Q", 4, 2, 2, 0, 0, 0)), "flags"),
    ("bp_page_pool_short", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(),
                                 buffers=(handle(127),) + BP_BUFS[1:]), "byte_size"),
    ("bp_seq_ptr_short", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(),
                               buffers=BP_BUFS[:2] + (handle(7),)), "byte_size"),
    ("bp_per_channel_axis0", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(), ttag=I8,
                                   buffers=(handle(32),) + BP_BUFS[1:] + (handle(16),),
                                   flags=1, sections=per_channel(0, 3, 0xFFFFFFFF, 1)), "axis"),
    ("bp_per_block_axis1", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(), ttag=I8,
                                 buffers=(handle(32),) + BP_BUFS[1:] + (handle(32),), flags=1,
                                 sections=per_block(axis=1, block=4, s=3)), "block_size"),
    ("bp_per_block_not_page", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(), ttag=I8,
                                    buffers=(handle(32),) + BP_BUFS[1:] + (handle(16),),
                                    flags=1, sections=per_block(axis=0, block=2, s=3)),
     "block_size"),
    ("bp_scales_wrong_size", build(ltag=0x0A, shape=(4, 2, 2), layout=bp(), ttag=I8,
                                   buffers=(handle(32),) + BP_BUFS[1:] + (handle(16),),
                                   flags=1, sections=per_block(axis=0, block=4, s=3)),
     "byte_size"),
    # composite head
    ("comp_rule_0", comp(composite(rule=0)), "composition_rule"),
    ("comp_rule_4", comp(composite(rule=4)), "composition_rule"),
    ("comp_rule_ef", comp(composite(rule=0xEF)), "composition_rule"),
    ("comp_rule_ff", comp(composite(rule=0xFF)), "composition_rule"),
    ("comp_rule_private_strict", comp(composite(rule=0xF0)), "composition_rule"),
    ("comp_partition_op", comp(composite(rule=1, op=1)), "combine_op"),
    ("comp_overlay_op_0", comp(composite(rule=2, op=0)), "combine_op"),
    ("comp_overlay_op_3", comp(composite(rule=2, op=3)), "combine_op"),
    ("comp_open_count", comp(composite(count=0xFFFFFFFF)), "member_count"),
    ("comp_overlay_empty", comp(composite(rule=2, op=1, count=0)), "member_count"),
    ("comp_reserved", comp(composite(res=b"\0\1")), "composite._reserved"),
    ("comp_with_buffer", comp(composite(), buffers=(handle(0),)), "buffer_count"),
    ("comp_byte_offset", comp(composite(), byte_offset=8), "byte_offset"),
    ("comp_quantized", comp(composite(), flags=1, sections=per_tensor()), "flags"),
    ("comp_member_flag", comp(composite(), flags=0x10, sections=b"\1" + bytes(15)), "flags"),
    # buffer table and handles
    ("dense_zero_buffers", build(buffers=()), "buffer_count"),
    ("dense_two_buffers", build(buffers=(handle(), handle())), "buffer_count"),
    ("alignment_0", build(buffers=(handle(align=0),)), "alignment"),
    ("alignment_not_pow2", build(buffers=(handle(align=96),)), "alignment"),
    ("alignment_32", build(buffers=(handle(align=32),)), "alignment"),
    ("device_tag_09", build(buffers=(handle(dev=0x09),)), "device_tag"),
    ("device_tag_ef", build(buffers=(handle(dev=0xEF),)), "device_tag"),
    ("device_tag_ff", build(buffers=(handle(dev=0xFF),)), "device_tag"),
    ("sync_mode_3", build(buffers=(handle(dev=1, sync=3, align=4096),)), "sync_mode"),
    ("sync_mode_ff", build(buffers=(handle(dev=1, sync=0xFF, align=4096),)), "sync_mode"),
    ("cpu_sync_event", build(buffers=(handle(sync=1),)), "sync_mode"),
    ("memory_class_4", build(buffers=(handle(mem=4),)), "memory_class"),
    ("memory_class_ff", build(buffers=(handle(mem=0xFF),)), "memory_class"),
    ("private_class_public_device", build(buffers=(handle(mem=0xF0),)), "memory_class"),
    ("private_device_pinned", build(buffers=(handle(dev=0xF1, mem=1),)), "memory_class"),
    ("cpu_peer", build(buffers=(handle(mem=3),)), "memory_class"),
    ("metal_peer", build(buffers=(handle(dev=3, mem=3),)), "memory_class"),
    ("webgpu_pinned", build(buffers=(handle(dev=5, mem=1),)), "memory_class"),
    ("webgpu_unified", build(buffers=(handle(dev=5, mem=2),)), "memory_class"),
    ("hexagon_peer", build(buffers=(handle(dev=6, mem=3),)), "memory_class"),
    ("opencl_peer", build(buffers=(handle(dev=8, mem=3),)), "memory_class"),
    ("handle_reserved", build(buffers=(handle(res=1),)), "_reserved"),
    ("colocation_device", q_desc(per_channel(), bufs=(32, 16, 16)).replace(
        handle(16), handle(16, 4096, 1, 0, 0), 1), "device_tag"),
    ("colocation_class", q_desc(per_channel(), bufs=(32, 16, 16)).replace(
        handle(16), handle(16, mem=1), 1), "device_tag"),
    # quantization framing and headers
    ("quant_length_3", q_desc(quant(b"\1\1\0", 3), bufs=(32,)), "quantization_length"),
    ("quant_length_below_scheme", q_desc(quant(P("<BBH8x", 1, 1, 0)), bufs=(32,)),
     "quantization_length"),
    ("quant_length_past_end", q_desc(quant(P("<BBHfi4x", 1, 1, 0, 1.0, 0), 64), bufs=(32,)),
     "quantization"),
    ("scheme_0", q_desc(per_tensor(tag=0), bufs=(32,)), "scheme_tag"),
    ("scheme_ff", q_desc(per_tensor(tag=0xFF), bufs=(32,)), "scheme_tag"),
    ("scheme_06_strict", q_desc(per_tensor(tag=6), bufs=(32,)), "scheme_tag"),
    ("scheme_nested_60", q_desc(per_tensor(tag=0x60), bufs=(32,)), "scheme_tag"),
    ("scheme_private_f0", q_desc(per_tensor(tag=0xF0), bufs=(32,)), "scheme_tag"),
    ("scheme_version_0", q_desc(per_tensor(ver=0), bufs=(32,)), "scheme_version"),
    ("scheme_version_2", q_desc(per_tensor(ver=2), bufs=(32,)), "scheme_version"),
    ("per_tensor_flags", q_desc(per_tensor(flags=1), bufs=(32,)), "quantization.flags"),
    ("per_tensor_reserved", q_desc(per_tensor(res=b"\0\0\0\1"), bufs=(32,)),
     "per_tensor._reserved"),
    ("per_tensor_scale_0", q_desc(per_tensor(scale=0.0), bufs=(32,)), "scale"),
    ("per_tensor_scale_nan", q_desc(per_tensor(scale=float("nan")), bufs=(32,)), "scale"),
    ("per_tensor_scale_inf", q_desc(per_tensor(scale=float("inf")), bufs=(32,)), "scale"),
    ("per_tensor_zp_range", q_desc(per_tensor(zp=128), bufs=(32,)), "zero_point"),
    ("per_tensor_zp_uint4", q_desc(per_tensor(zp=16), ttag=U4, bufs=(16,)), "zero_point"),
    ("per_tensor_float_storage", q_desc(per_tensor(), ttag=F32, bufs=(128,)), "type_tag"),
    ("per_tensor_extra_buffer", q_desc(per_tensor(), bufs=(32, 4)), "buffer_count"),
    ("per_channel_flags", q_desc(per_channel(flags=2)), "quantization.flags"),
    ("per_channel_axis_rank", q_desc(per_channel(axis=2)), "axis"),
    ("per_channel_sym_with_zp", q_desc(per_channel(flags=1), bufs=(32, 16)),
     "zero_point_buffer_index"),
    ("per_channel_asym_without_zp", q_desc(per_channel(z=0xFFFFFFFF), bufs=(32, 16)),
     "zero_point_buffer_index"),
    ("per_channel_scale_index_max", q_desc(per_channel(s=0xFFFFFFFF)), "scale_buffer_index"),
    ("per_channel_scale_type_f16", q_desc(per_channel(stype=1)), "scale_type_tag"),
    ("per_channel_reserved", q_desc(per_channel(res=b"\0\0\1")), "quantization._reserved"),
    ("per_channel_aliases_data", q_desc(per_channel(s=0, z=1), bufs=(32, 16)),
     "scale_buffer_index"),
    ("per_channel_index_out_of_table", q_desc(per_channel(s=1, z=3)), "scale_buffer_index"),
    ("per_channel_missing_buffer", q_desc(per_channel(), bufs=(32, 16)), "scale_buffer_index"),
    ("per_channel_scales_size", q_desc(per_channel(), bufs=(32, 12, 16)), "buffers[1]"),
    ("per_channel_zp_size", q_desc(per_channel(), bufs=(32, 16, 20)), "buffers[2]"),
    ("per_channel_shared_short", q_desc(per_channel(s=1, z=1), bufs=(32, 31)), "buffers[1]"),
    ("per_channel_extra_buffer", q_desc(per_channel(), bufs=(32, 16, 16, 4)), "buffer_count"),
    ("per_block_block_3", q_desc(per_block(block=3), bufs=(32, 32)), "block_size"),
    ("per_block_block_1", q_desc(per_block(block=1), bufs=(32, 128)), "block_size"),
    ("per_block_block_gt_axis", q_desc(per_block(block=16), bufs=(32, 16)), "block_size"),
    ("per_block_int16", q_desc(per_block(), ttag=0x12, bufs=(64, 32)), "type_tag"),
    ("per_block_scale_type_4", q_desc(per_block(stype=4), bufs=(32, 32)), "scale_type_tag"),
    ("per_block_sym_with_zp", q_desc(per_block(z=2), bufs=(32, 32, 32)),
     "zero_point_buffer_index"),
    ("per_block_scales_size", q_desc(per_block(), bufs=(32, 36)), "buffers[1]"),
    ("per_block_f16_scales_size", q_desc(per_block(stype=1), bufs=(32, 32)), "buffers[1]"),
    ("nf4_int4_storage", q_desc(blocked(4, block=8), ttag=I4, bufs=(16, 16)), "type_tag"),
    ("nf4_block_4", q_desc(blocked(4, block=4), ttag=U4, bufs=(16, 32)), "block_size"),
    ("nf4_block_gt_axis", q_desc(blocked(4, block=16), ttag=U4, bufs=(16, 16)), "block_size"),
    ("nf4_flags", q_desc(blocked(4, block=8, flags=1), ttag=U4, bufs=(16, 16)),
     "quantization.flags"),
    ("nf4_scales_size", q_desc(blocked(4, block=8), ttag=U4, bufs=(16, 12)), "buffers[1]"),
    ("nf4_empty_axis_scales", q_desc(blocked(4, block=8), ttag=U4, shape=(4, 0), bufs=(0, 4)),
     "buffers[1]"),
    ("mxfp_block_8", q_desc(blocked(5, block=8), ttag=0x40, shape=(2, 64), bufs=(128, 16)),
     "block_size"),
    ("mxfp_block_4096", q_desc(blocked(5, block=4096), ttag=0x40, shape=(1, 4096),
                               bufs=(4096, 1)), "block_size"),
    ("mxfp_block_48", q_desc(blocked(5, block=48), ttag=0x40, shape=(2, 96), bufs=(192, 4)),
     "block_size"),
    ("mxfp_partial_block", q_desc(blocked(5, block=32), ttag=0x40, shape=(2, 48),
                                  bufs=(96, 4)), "block_size"),
    ("mxfp_empty_axis", q_desc(blocked(5, block=32), ttag=0x40, shape=(2, 0), bufs=(0, 0)),
     "block_size"),
    ("mxfp_f16_storage", q_desc(blocked(5, block=32), ttag=0x01, shape=(2, 64),
                                bufs=(256, 4)), "type_tag"),
    ("mxfp_scales_size", q_desc(blocked(5, block=32), ttag=0x40, shape=(2, 64), bufs=(128, 8)),
     "buffers[1]"),
    # shard, statistics, extension type, composite member
    ("shard_out_of_parent", build(flags=2, sections=P("<4Q", 4, 4, 2, 0)), "shard_offset"),
    ("shard_dynamic_parent", build(flags=2, sections=P("<4Q", DYN, 4, 0, 0)), "parent_shape"),
    ("shard_truncated", build(flags=2, sections=P("<3Q", 4, 4, 0)), "shard_offset"),
    ("stats_mask_bit6", build(flags=8, sections=stats(mask=0x40)), "computed_mask"),
    ("stats_reserved", build(flags=8, sections=stats(res=1)), "statistics._reserved"),
    ("stats_reserved2", build(flags=8, sections=stats(res2=1)), "statistics._reserved"),
    ("stats_nm", build(flags=8, sections=stats(mask=0x10, nm=(4, 2))), "nm_n"),
    ("stats_nan_flag_2", build(flags=8, sections=stats(mask=0x20, nan_inf=(2, 0))), "has_nan"),
    ("stats_negative_stddev", build(flags=8, sections=stats(mask=0x08, sd=-1.0)),
     "value_stddev"),
    ("stats_truncated", build(flags=8, sections=stats()[:71]), "statistics"),
    ("ext_flag_public_type", build(flags=4, sections=ext()), "flags"),
    ("private_type_without_ext", build(ttag=0xF2), "flags"),
    ("ext_bit_width_0", build(ttag=0xF2, flags=4, sections=ext(bw=0)), "bit_width"),
    ("ext_bit_width_3", build(ttag=0xF2, flags=4, sections=ext(bw=3, pf=2)), "bit_width"),
    ("ext_bit_width_12", build(ttag=0xF2, flags=4, sections=ext(bw=12)), "bit_width"),
    ("ext_packing", build(ttag=0xF2, flags=4, sections=ext(bw=4, pf=1)), "packing_factor"),
    ("ext_bool_byte", build(ttag=0xF2, flags=4, sections=ext(fl=2)), "is_float"),
    ("ext_float_signed", build(ttag=0xF2, flags=4, sections=ext(fl=1, sg=1, sb=1)),
     "is_signed"),
    ("ext_sign_bits_2", build(ttag=0xF2, flags=4, sections=ext(fl=1, sb=2)), "sign_bits"),
    ("ext_int_exponent", build(ttag=0xF2, flags=4, sections=ext(eb=3)), "exponent_bits"),
    ("ext_reserved", build(ttag=0xF2, flags=4, sections=ext(res=1)), "extension_type._reserved"),
    ("ext_buffer_short", build(ttag=0xF2, flags=4, sections=ext(bw=32), buffers=(handle(47),)),
     "byte_size"),
    ("member_role_2", build(flags=0x10, sections=b"\2" + bytes(15)), "member_role"),
    ("member_reserved", build(flags=0x10, sections=b"\1" + bytes(14) + b"\1"),
     "composite_member._reserved"),
]


@pytest.mark.parametrize(("data", "field"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_reject(data: bytes, field: str) -> None:
    with pytest.raises(HurrayFormatError) as info:
        decode_descriptor(data)
    err = info.value
    assert err.field is not None and field in err.field, str(err)
    assert "Fix:" in str(err)
    assert err.offset is not None, str(err)


def test_case_ids_are_unique() -> None:
    assert len({c[0] for c in CASES}) == len(CASES)


def test_trailing_bytes_after_descriptor() -> None:
    with pytest.raises(HurrayFormatError) as info:
        decode_descriptor(build() + b"\0")
    assert info.value.field == "descriptor_length" and info.value.offset == 61


@pytest.mark.parametrize("data", [
    build(ttag=0x30),
    build(ltag=0x0C),
    build(ltag=9, shape=(2, 2, 2), layout=P("<Q3I8x", 1, 0, 0, 2),
          buffers=tuple(handle(64) for _ in range(7))),
    build(ltag=0x0A, shape=(4, 2, 2), layout=bp(axis=1), buffers=BP_BUFS),
    comp(composite(rule=0xF0, op=7)),
    q_desc(per_tensor(tag=6), bufs=(32,)),
    q_desc(per_tensor(tag=0xF0), bufs=(32,)),
])
def test_permissive_accepts_what_strict_rejects(data: bytes) -> None:
    with pytest.raises(HurrayFormatError):
        decode_descriptor(data)
    d = decode_descriptor(data, permissive=True)
    assert d.encode(permissive=True) == data


@pytest.mark.parametrize("data", [
    build(ttag=0x00), build(ttag=0x47), build(ltag=0x00), build(ltag=0xFF), build(flags=0x20),
    build(buffers=(handle(mem=3),)), q_desc(per_tensor(tag=0xFF), bufs=(32,)),
    comp(composite(rule=0xFF)), build(major=2),
])
def test_permissive_still_rejects_invalid(data: bytes) -> None:
    with pytest.raises(HurrayFormatError):
        decode_descriptor(data, permissive=True)


@pytest.mark.parametrize("data", [
    build(buffers=(handle(0, align=1),), shape=(0, 4)),        # empty buffer: any power of two
    build(buffers=(handle(48, 4096, 0xF3, 2, 0xF7),)),          # private device + private class
    build(buffers=(handle(48, 4096, 1, 1, 3),)),                # CUDA PEER with events
    build(ttag=0x20, shape=(10,), buffers=(handle(2),)),
    build(ltag=0x40, shape=(4, 4), layout=P("<2I", 2, 2), buffers=(handle(64),)),
    build(ltag=4, layout=nested_tiled(8), buffers=(handle(48),)),  # exactly 8 tiled blocks
    build(ltag=5, shape=(3, 4), layout=P("<2I", 2, 2), buffers=(handle(64),)),
    q_desc(per_channel(flags=1, z=0xFFFFFFFF), bufs=(32, 16)),
    q_desc(per_channel(s=2, z=1)),                              # zero point before scale
    q_desc(per_channel(s=1, z=1), bufs=(32, 32)),               # shared [scales | zp]
    q_desc(blocked(4, block=8), ttag=U4, shape=(4, 0), bufs=(0, 0)),
    q_desc(per_block(block=16), shape=(4, 0), bufs=(0, 0)),
    comp(composite(rule=3, count=0)),
    build(ltag=0xF5, layout=P("<QI", 7, 2) + b"zz", buffers=(handle(8), handle(0))),
])
def test_edge_cases_accepted(data: bytes) -> None:
    assert decode_descriptor(data).encode() == data


@pytest.mark.parametrize("data", [b"", b"HRRY", build()[:19], build(rank=64, shape=())[:20],
                                  build(count=255)])
def test_short_inputs_fail_before_allocating(data: bytes) -> None:
    with pytest.raises(HurrayFormatError) as info:
        decode_descriptor(data)
    assert info.value.offset is not None


def test_prefix_offsets_are_absolute() -> None:
    from hurray_gpu.format.descriptor import decode_descriptor_prefix

    blob = b"\0" * 7 + build(buffers=(handle(res=1),))
    with pytest.raises(HurrayFormatError) as info:
        decode_descriptor_prefix(blob, 7)
    assert info.value.offset == 7 + 45 + 15
