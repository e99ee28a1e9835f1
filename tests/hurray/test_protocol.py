"""The interchange codec (hurray_gpu.format.protocol) against docs/interchange.md, Byte layout.

Golden vectors (tests/golden/protocol/vectors.json) are packed with struct by
tests/golden/protocol/make_vectors.py, independent of the codec; hostile inputs are packed with
struct below; hypothesis checks byte-exact round trips of every message type.
"""

from __future__ import annotations

import json
import pickle
import struct
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hurray_gpu.errors import HurrayGPUError, ProtocolError, RemoteError
from hurray_gpu.format import protocol as P
from hurray_gpu.format.protocol import ErrorCode, LayoutEntry

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "protocol"
VECTORS = json.loads((GOLDEN / "vectors.json").read_text(encoding="utf-8"))
DESC = (GOLDEN.parent / "hurray" / "descriptors" / "row_major_int8_5.bin").read_bytes()
INVALID, TOO_LARGE, SHARD = (ErrorCode.INVALID_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE,
                             ErrorCode.SHARD_MISMATCH)


def _value(v: object) -> object:
    if isinstance(v, str) and v.startswith("hex:"):
        return bytes.fromhex(v[4:])
    if isinstance(v, list):  # layouts are [tag, metadata hex]; device/class lists are ints
        return tuple(LayoutEntry(x[0], bytes.fromhex(x[1])) if isinstance(x, list) else x
                     for x in v)
    return v


def _expected(vec: dict) -> P.Message:
    return getattr(P, vec["class"])(**{k: _value(v) for k, v in vec["fields"].items()})


def _decode(raw: bytes, max_size: int = P.DEFAULT_MAX_MESSAGE) -> P.Message:
    header = P.decode_header(raw[:P.HEADER_SIZE], max_size)
    return P.decode(header, raw[P.HEADER_SIZE:])


def test_golden_vectors_cover_every_message_type() -> None:
    types = {bytes.fromhex(v["hex"])[0] for v in VECTORS}
    assert types == set(P.MessageType)


@pytest.mark.parametrize("vec", VECTORS, ids=[v["name"] for v in VECTORS])
def test_golden_vector_encodes_and_decodes_exactly(vec: dict) -> None:
    raw, msg = bytes.fromhex(vec["hex"]), _expected(vec)
    assert P.encode(msg, vec["stream_id"]) == raw
    header = P.decode_header(raw[:12], P.DEFAULT_MAX_MESSAGE)
    assert header == P.Header(raw[0], vec["stream_id"], len(raw) - 12)
    back = P.decode(header, raw[12:])
    assert type(back) is type(msg) and back == msg
    assert P.decode(header, memoryview(raw)[12:]) == msg  # a memoryview payload too


def test_data_frame_header_and_zero_copy_decode() -> None:
    data = bytes(range(256)) * 4
    assert P.data_header(5, 1 << 40, len(data)) + data == P.encode(P.TensorData(1 << 40, data), 5)
    raw = P.data_header(5, 7, len(data)) + data
    header = P.decode_header(raw[:12], 4096)
    assert P.decode_data_offset(header, raw[12:20]) == 7
    payload = raw[12:]
    msg = P.decode(header, payload)
    assert isinstance(msg, P.TensorData) and isinstance(msg.data, memoryview)
    assert msg.data.obj is payload and bytes(msg.data) == data  # a view of the payload, no copy


def test_decoding_a_large_data_frame_allocates_no_copy() -> None:
    raw = P.data_header(2, 0, 8 << 20) + bytes(8 << 20)
    header = P.decode_header(raw[:12], P.DEFAULT_MAX_MESSAGE)
    tracemalloc.start()
    try:
        P.decode(header, memoryview(raw)[12:])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 10


def _frame(mtype: int, payload: bytes, stream: int = 2) -> bytes:
    return struct.pack("<III", mtype, stream, len(payload)) + payload


def _text(raw: bytes) -> bytes:
    return struct.pack("<I", len(raw)) + raw


def _hello(version: int = 1, caps: int = 0, layouts: bytes = b"\0\0", tail: bytes = b"") -> bytes:
    return _frame(1, struct.pack("<IIQ", version, 4096, caps) + layouts + b"\0\0\0\0" + tail, 1)


def _request(key: bytes = b"k", layouts: bytes = b"\0\0", flags: int = 0,
             tail: bytes = b"") -> bytes:
    return _frame(3, _text(key) + layouts + struct.pack("<BII", 0, 64, flags) + tail)


def _descriptor(desc: bytes = DESC, index: int = 0, total: int = 1, tail: bytes = b"") -> bytes:
    return _frame(4, desc + struct.pack("<QII", 5, index, total) + tail)


BAD_DESC = b"HRRX" + DESC[4:]
HOSTILE = {
    # header-level
    "stream_0": (_frame(0x0A, b"", 0), INVALID),
    "type_0": (_frame(0x00, b""), INVALID),
    "type_0x0E": (_frame(0x0E, b""), INVALID),
    "private_type_0xF0": (_frame(0xF0, b""), INVALID),
    "private_type_0xFE": (_frame(0xFE, b"abc"), INVALID),
    "invalid_type_0xFF": (_frame(0xFF, b""), INVALID),
    "type_high_bits": (_frame(0x100 | 0x0A, b""), INVALID),
    "ping_payload": (_frame(0x0A, b"\0"), INVALID),
    "pong_payload": (_frame(0x0B, b"x"), INVALID),
    "data_end_payload": (_frame(0x06, b"\0\0"), INVALID),
    "put_ack_payload": (_frame(0x08, b"\0"), INVALID),
    "rdma_ready_payload": (_frame(0x0D, b"\0"), INVALID),
    "data_without_offset": (_frame(0x05, b"\0" * 7), INVALID),
    "hello_too_short": (_frame(0x01, b"\0" * 21, 1), INVALID),
    # hello
    "version_0": (_hello(version=0), INVALID),
    "reserved_capability_bit4": (_hello(caps=0x10), INVALID),
    "reserved_capability_bit63": (_hello(caps=1 << 63), INVALID),
    "gpudirect_without_data_plane": (_hello(caps=0x8), INVALID),
    "hello_trailing_byte": (_hello(tail=b"\0"), INVALID),
    "hello_layout_count_past_payload": (_hello(layouts=b"\x05\0\x01"), INVALID),
    "hello_device_count_past_payload": (_frame(1, struct.pack("<IIQ", 1, 4096, 0)
                                               + b"\0\0" + b"\x03\0\0\0" + b"\0\0", 1), INVALID),
    "layout_tag_0x00": (_hello(layouts=b"\x01\0\x00"), INVALID),
    "layout_tag_0x0C_reserved": (_hello(layouts=b"\x01\0\x0c"), INVALID),
    "layout_tag_0x3F_reserved": (_hello(layouts=b"\x01\0\x3f"), INVALID),
    "layout_tag_0xFF": (_hello(layouts=b"\x01\0\xff"), INVALID),
    "private_metadata_past_payload": (_hello(layouts=b"\x01\0\xf1\x09\0abc"), INVALID),
    # request
    "request_key_length_past_payload": (_frame(3, struct.pack("<I", 100) + b"abc"), INVALID),
    "request_key_length_u32_max": (_frame(3, struct.pack("<I", 0xFFFFFFFF) + b"\0" * 11),
                                   INVALID),
    "request_key_invalid_utf8": (_request(key=b"\xff\xfe"), INVALID),
    "request_key_surrogate": (_request(key=b"\xed\xa0\x80"), INVALID),
    "request_reserved_flag_bit2": (_request(flags=4), INVALID),
    "request_reserved_flag_bit31": (_request(flags=1 << 31), INVALID),
    "request_undefined_layout": (_request(layouts=b"\x01\0\x41"), INVALID),
    "request_trailing_byte": (_request(tail=b"\0"), INVALID),
    # descriptor
    "descriptor_bad_magic": (_descriptor(BAD_DESC), INVALID),
    "descriptor_truncated": (_frame(4, DESC[:30] + b"\0" * 16), INVALID),
    "descriptor_trailing_byte": (_descriptor(tail=b"\0"), INVALID),
    "descriptor_missing_shard_fields": (_frame(4, DESC + struct.pack("<QI", 5, 0)), INVALID),
    "total_shards_0": (_descriptor(index=0, total=0), SHARD),
    "shard_index_equals_total": (_descriptor(index=4, total=4), SHARD),
    # put
    "put_descriptor_with_trailing_byte": (_frame(7, _text(b"x") + _text(DESC + b"\0")
                                                 + struct.pack("<Q", 5)), INVALID),
    "put_descriptor_bad_magic": (_frame(7, _text(b"x") + _text(BAD_DESC) + b"\0" * 8), INVALID),
    "put_descriptor_length_past_payload": (_frame(7, _text(b"x") + struct.pack("<I", 999)
                                                  + DESC + b"\0" * 8), INVALID),
    "put_missing_total": (_frame(7, _text(b"x") + _text(DESC)), INVALID),
    # error and rdma
    "error_reserved_code_0": (_frame(9, struct.pack("<I", 0) + _text(b"")), INVALID),
    "error_reserved_code_9": (_frame(9, struct.pack("<I", 9) + _text(b"")), INVALID),
    "error_reserved_code_0xFF": (_frame(9, struct.pack("<I", 0xFF) + _text(b"")), INVALID),
    "error_message_invalid_utf8": (_frame(9, struct.pack("<I", 2) + _text(b"\x80")), INVALID),
    "error_message_past_payload": (_frame(9, struct.pack("<I", 2) + struct.pack("<I", 5) + b"ab"),
                                   INVALID),
    "error_trailing_byte": (_frame(9, struct.pack("<I", 2) + _text(b"") + b"\0"), INVALID),
    "rdma_rkey_past_payload": (_frame(0x0C, struct.pack("<QQI", 1, 2, 3) + b"ab"), INVALID),
    "rdma_trailing_byte": (_frame(0x0C, struct.pack("<QQI", 1, 2, 0) + b"\0"), INVALID),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_message_raises_its_error_code(name: str) -> None:
    raw, code = HOSTILE[name]
    with pytest.raises(ProtocolError) as info:
        _decode(raw)
    assert info.value.code == code, str(info.value)
    text = str(info.value)
    fix = text.split("Fix: ", 1)[1]
    assert text.count("Fix:") == 1 and len(fix) > 20 and fix.endswith("."), text


def test_oversized_payload_is_rejected_from_the_header_alone() -> None:
    raw = struct.pack("<III", 5, 2, 0xFFFFFFFF)
    with pytest.raises(ProtocolError) as info:
        P.decode_header(raw, P.DEFAULT_MAX_MESSAGE)
    assert info.value.code == TOO_LARGE and str(P.DEFAULT_MAX_MESSAGE) in str(info.value)
    assert P.decode_header(struct.pack("<III", 5, 2, 4096), 4096).length == 4096
    with pytest.raises(ProtocolError) as info:
        P.decode_header(struct.pack("<III", 5, 2, 4097), 4096)
    assert info.value.code == TOO_LARGE


@pytest.mark.parametrize("raw", [b"", b"\0" * 11, b"\0" * 13])
def test_header_must_be_exactly_12_bytes(raw: bytes) -> None:
    with pytest.raises(ProtocolError) as info:
        P.decode_header(raw, 4096)
    assert info.value.code == INVALID


def test_payload_length_must_match_the_header() -> None:
    header = P.Header(P.MessageType.ERROR, 3, 20)
    with pytest.raises(ProtocolError, match="header says 20 payload bytes, got 19") as info:
        P.decode(header, b"\0" * 19)
    assert info.value.code == INVALID


def test_decode_data_offset_checks_the_frame() -> None:
    with pytest.raises(ProtocolError) as info:
        P.decode_data_offset(P.Header(P.MessageType.ERROR, 2, 8), b"\0" * 8)
    assert info.value.code == INVALID
    with pytest.raises(ProtocolError):
        P.decode_data_offset(P.Header(P.MessageType.TENSOR_DATA, 2, 16), b"\0" * 7)
    assert P.decode_data_offset(P.Header(5, 2, 8), ((1 << 64) - 1).to_bytes(8, "little")) == (
        (1 << 64) - 1)


def test_hostile_counts_allocate_no_more_than_the_payload() -> None:
    # u16 counts and u32 lengths near their maximum, backed by a few bytes only.
    raws = [_hello(layouts=b"\xff\xff" + b"\x01" * 8), _frame(3, struct.pack("<I", 1 << 31)
                                                             + b"\0" * 11),
            _frame(1, struct.pack("<IIQ", 1, 4096, 0) + b"\0\0\xff\xff" + b"\0" * 6, 1)]
    tracemalloc.start()
    try:
        for raw in raws:
            with pytest.raises(ProtocolError):
                _decode(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 10


ENCODE_ERRORS = {
    "stream_0": (P.Ping(), 0),
    "stream_past_u32": (P.Ping(), 1 << 32),
    "bare_hello": (P.Hello(1, 4096, 0, (), (), ()), 1),
    "not_a_message": (P.Header(1, 1, 0), 1),
    "version_0": (P.ClientHello(0, 4096, 0, (), (), ()), 1),
    "max_size_past_u32": (P.ClientHello(1, 1 << 32, 0, (), (), ()), 1),
    "negative_capabilities": (P.ClientHello(1, 4096, -1, (), (), ()), 1),
    "reserved_capability": (P.ClientHello(1, 4096, 0x10, (), (), ()), 1),
    "gpudirect_alone": (P.ServerHello(1, 4096, 0x8, (), (), ()), 1),
    "device_past_u8": (P.ClientHello(1, 4096, 0, (), (256,), ()), 1),
    "too_many_devices": (P.ClientHello(1, 4096, 0, (), (0,) * 65536, ()), 1),
    "layouts_not_a_tuple": (P.ClientHello(1, 4096, 0, 1, (), ()), 1),  # type: ignore[arg-type]
    "layout_not_an_entry": (P.ClientHello(1, 4096, 0, (1,), (), ()), 1),  # type: ignore[arg-type]
    "undefined_layout_tag": (P.ClientHello(1, 4096, 0, (LayoutEntry(0x0C),), (), ()), 1),
    "standard_tag_with_metadata": (P.ClientHello(1, 4096, 0, (LayoutEntry(1, b"x"),), (), ()), 1),
    "metadata_past_u16": (P.ClientHello(1, 4096, 0, (LayoutEntry(0xF0, bytes(1 << 16)),), (), ()),
                          1),
    "key_not_str": (P.TensorRequest(b"k", (), 0, 64, 0), 2),  # type: ignore[arg-type]
    "key_surrogate": (P.TensorRequest("\ud800", (), 0, 64, 0), 2),
    "reserved_request_flag": (P.TensorRequest("k", (), 0, 64, 4), 2),
    "device_not_int": (P.TensorRequest("k", (), "cpu", 64, 0), 2),  # type: ignore[arg-type]
    "shard_out_of_range": (P.TensorDescriptorMsg(DESC, 5, 1, 1), 2),
    "descriptor_invalid": (P.TensorDescriptorMsg(BAD_DESC, 5), 2),
    "descriptor_with_tail": (P.TensorDescriptorMsg(DESC + b"\0", 5), 2),
    "put_descriptor_with_tail": (P.TensorPut("k", DESC + b"\0", 5), 2),
    "data_not_bytes": (P.TensorData(0, "abc"), 2),  # type: ignore[arg-type]
    "offset_past_u64": (P.TensorData(1 << 64, b""), 2),
    "reserved_error_code": (P.ErrorMsg(9, "x"), 2),
}


@pytest.mark.parametrize("name", sorted(ENCODE_ERRORS))
def test_encode_rejects_what_the_wire_cannot_carry(name: str) -> None:
    msg, stream = ENCODE_ERRORS[name]
    with pytest.raises(ProtocolError) as info:
        P.encode(msg, stream)  # type: ignore[arg-type]
    expect = SHARD if name == "shard_out_of_range" else INVALID
    assert info.value.code == expect and "Fix: " in str(info.value)


@pytest.mark.parametrize("args", [(0, 0, 1 << 32), (2, 0, -1), (2, 1 << 64, 1), (2, 0, (1 << 32) - 8)])
def test_data_header_checks_its_fields(args: tuple[int, int, int]) -> None:
    with pytest.raises(ProtocolError):
        P.data_header(*args)
    assert len(P.data_header(2, (1 << 64) - 1, (1 << 32) - 9)) == P.DATA_HEADER_SIZE


def test_errors_carry_code_fix_and_pickle() -> None:
    err = ProtocolError("bad frame.", code=ErrorCode.MESSAGE_TOO_LARGE, fix="send less.")
    remote = RemoteError(ErrorCode.UNKNOWN_TENSOR, "no tensor named 'w'")
    for exc in (err, remote):
        clone = pickle.loads(pickle.dumps(exc))
        assert type(clone) is type(exc) and str(clone) == str(exc) and clone.code == exc.code
        assert isinstance(clone, HurrayGPUError) and "Fix: " in str(clone)
    assert remote.code == 2 and remote.peer_message == "no tensor named 'w'"
    assert isinstance(remote, ProtocolError)
    with_fix = RemoteError(3, "no such layout. Fix: ask for row_major.")
    assert str(with_fix).endswith("Fix: ask for row_major.") and str(with_fix).count("Fix:") == 1


# -- hypothesis: every message type round-trips byte-exactly --------------------------------

u8, u32 = st.integers(0, 0xFF), st.integers(0, 0xFFFFFFFF)
u64 = st.integers(0, (1 << 64) - 1)
entries = st.one_of(
    st.sampled_from(sorted({0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B,
                            0x40})).map(LayoutEntry),
    st.builds(LayoutEntry, st.integers(0xF0, 0xFE), st.binary(max_size=40)))
layouts = st.lists(entries, max_size=6).map(tuple)
caps = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15])
hellos = st.tuples(st.integers(1, 0xFFFFFFFF), u32, caps, layouts, st.lists(u8, max_size=5).map(tuple),
                   st.lists(u8, max_size=5).map(tuple))
shards = st.integers(1, 0xFFFFFFFF).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n)))
messages = st.one_of(
    hellos.map(lambda a: P.ClientHello(*a)), hellos.map(lambda a: P.ServerHello(*a)),
    st.builds(P.TensorRequest, st.text(max_size=20), layouts, u8, u32, st.integers(0, 3)),
    st.builds(lambda t, s: P.TensorDescriptorMsg(DESC, t, *s), u64, shards),
    st.builds(P.TensorData, u64, st.binary(max_size=64)),
    st.builds(P.TensorPut, st.text(max_size=20), st.just(DESC), u64),
    st.builds(P.ErrorMsg, st.one_of(st.integers(1, 8), st.integers(0xF0, 0xFE)), st.text(max_size=30)),
    st.builds(P.RdmaRegister, u64, u64, st.binary(max_size=16)),
    st.sampled_from([P.TensorDataEnd(), P.TensorPutAck(), P.Ping(), P.Pong(), P.RdmaReady()]))


@settings(max_examples=300, deadline=None)
@given(messages, st.integers(1, 0xFFFFFFFF))
def test_every_message_round_trips_byte_exactly(msg: P.Message, stream: int) -> None:
    raw = P.encode(msg, stream)
    header = P.decode_header(raw[:12], 1 << 20)
    assert (header.stream_id, header.length) == (stream, len(raw) - 12)
    back = P.decode(header, raw[12:])
    assert type(back) is type(msg) and back == msg
    assert P.encode(back, stream) == raw


@settings(max_examples=300, deadline=None)
@given(messages, st.data())
def test_any_corruption_raises_only_protocol_error(msg: P.Message, data: st.DataObject) -> None:
    raw = bytearray(P.encode(msg, 3))
    pos = data.draw(st.integers(0, len(raw) - 1))
    raw[pos] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.integers(0, len(raw)))
    payload = bytes(raw[12:cut]) if cut >= 12 else b""
    try:
        header = P.decode_header(bytes(raw[:12]), 1 << 20)
        back = P.decode(P.Header(header.type, header.stream_id, len(payload)), payload)
    except ProtocolError as exc:
        assert exc.code in (INVALID, TOO_LARGE, SHARD)
        return
    assert P.encode(back, header.stream_id)[12:] == payload


def test_a_payload_view_of_another_format_is_counted_in_bytes() -> None:
    raw = P.encode(P.TensorData(3, bytes(range(16))), 2)
    words = memoryview(bytearray(raw[12:])).cast("Q")  # 3 items, 24 bytes
    msg = P.decode(P.decode_header(raw[:12], 4096), words)
    assert isinstance(msg, P.TensorData) and msg.offset == 3 and bytes(msg.data) == bytes(range(16))


def test_remembered_control_messages_stay_exact_and_bounded() -> None:
    """The codec remembers small control messages: every hit equals a fresh encoding or
    decoding, a rejected payload is rejected again, and the memory stays bounded."""
    for i in range(P._MEMO_ENTRIES + 50):
        req = P.TensorRequest(f"k{i}", (LayoutEntry(0x01),), 0, 0, i % 2)
        raw = P.encode(req, 2 + i)
        again = P.encode(req, 3 + i)
        assert raw[12:] == again[12:] and struct.unpack_from("<I", again, 4)[0] == 3 + i
        header = P.decode_header(raw[:12], 1 << 20)
        assert P.decode(header, raw[12:]) == req and P.decode(header, raw[12:]) == req
        other = P.encode(P.TensorRequest(f"k{i}", (), 0, 0, 1 - i % 2), 2)
        assert P.decode(P.decode_header(other[:12], 1 << 20), other[12:]).flags == 1 - i % 2
    assert len(P._ENCODED) <= P._MEMO_ENTRIES and len(P._DECODED) <= P._MEMO_ENTRIES
    big = P.TensorRequest("k" * (P._MEMO_BYTES + 1), (), 0, 0, 0)
    raw = P.encode(big, 2)
    assert big not in P._ENCODED and P.decode(P.decode_header(raw[:12], 1 << 20), raw[12:]) == big
    assert not any(len(k[1]) > P._MEMO_BYTES for k in P._DECODED)
    bad = bytearray(P.encode(P.TensorRequest("k0", (), 0, 0, 0), 2))
    bad[-1] = 0x80  # a reserved flag bit: refused on every decode, never remembered
    for _ in range(2):
        with pytest.raises(ProtocolError):
            P.decode(P.decode_header(bytes(bad[:12]), 1 << 20), bytes(bad[12:]))
