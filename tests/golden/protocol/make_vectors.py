"""Writes vectors.json: interchange messages packed by hand with struct (docs/interchange.md).

Independent of hurray_gpu.format.protocol on purpose: every byte comes from the byte layout
table, so tests/hurray/test_protocol.py compares the codec against the layout, not against
itself. The descriptor is the upstream conformance vector row_major_int8_5.bin. Re-run only to
add vectors (python3 tests/golden/protocol/make_vectors.py); existing bytes must not change.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
DESC = (HERE.parent / "hurray" / "descriptors" / "row_major_int8_5.bin").read_bytes()


def frame(mtype: int, stream: int, payload: bytes) -> bytes:
    return struct.pack("<III", mtype, stream, len(payload)) + payload


def text(s: str) -> bytes:
    raw = s.encode("utf-8")
    return struct.pack("<I", len(raw)) + raw


def u8s(items: list[int]) -> bytes:
    return struct.pack("<H", len(items)) + bytes(items)


def hello(version: int, max_size: int, caps: int, layouts: bytes, n_layouts: int,
          devices: list[int], classes: list[int]) -> bytes:
    return (struct.pack("<IIQH", version, max_size, caps, n_layouts) + layouts + u8s(devices)
            + u8s(classes))


def fields_hello(version: int, max_size: int, caps: int, layouts: list[list[object]],
                 devices: list[int], classes: list[int]) -> dict[str, object]:
    return {"version": version, "max_message_size": max_size, "capabilities": caps,
            "layouts": layouts, "devices": devices, "memory_classes": classes}


def vectors() -> list[dict[str, object]]:
    private = bytes([0xF3]) + struct.pack("<H", 3) + b"\x01\x02\x03"  # tag, u16 len, metadata
    out = [
        ("client_hello", "ClientHello", 1,
         frame(0x01, 1, hello(1, 1 << 20, 0x3, bytes([0x01, 0x40]) + private, 3, [0x00, 0x08],
                              [])),
         fields_hello(1, 1 << 20, 3, [[1, ""], [0x40, ""], [0xF3, "010203"]], [0, 8], [])),
        ("client_hello_private_rdma", "ClientHello", 1,
         frame(0x01, 1, hello(2, 4096, 0xC, bytes([0xFE, 0, 0]), 1, [], [0, 1, 2]))),
        ("server_hello", "ServerHello", 1,
         frame(0x02, 1, hello(1, 64 << 20, 0x1, bytes([0x01]), 1, [0x00], [0x00]))),
        ("tensor_request", "TensorRequest", 2,
         frame(0x03, 2, text("weights/\u21130") + struct.pack("<H", 2) + bytes([0x01, 0x02])
               + struct.pack("<BII", 0x00, 64, 0x3))),
        ("tensor_descriptor", "TensorDescriptorMsg", 2,
         frame(0x04, 2, DESC + struct.pack("<QII", 5, 1, 4))),
        ("tensor_data", "TensorData", 2,
         frame(0x05, 2, struct.pack("<Q", 4096) + b"\x00\x01\x02\x03\xff")),
        ("tensor_data_end", "TensorDataEnd", 2, frame(0x06, 2, b"")),
        ("tensor_put", "TensorPut", 3,
         frame(0x07, 3, text("x") + struct.pack("<I", len(DESC)) + DESC + struct.pack("<Q", 5))),
        ("tensor_put_ack", "TensorPutAck", 3, frame(0x08, 3, b"")),
        ("error", "ErrorMsg", 4, frame(0x09, 4, struct.pack("<I", 2) + text("no tensor 'x'"))),
        ("error_private_code", "ErrorMsg", 4, frame(0x09, 4, struct.pack("<I", 0xF3) + text(""))),
        ("ping", "Ping", 7, frame(0x0A, 7, b"")),
        ("pong", "Pong", 7, frame(0x0B, 7, b"")),
        ("rdma_register", "RdmaRegister", 9,
         frame(0x0C, 9, struct.pack("<QQ", 0x1122334455667788, 5) + struct.pack("<I", 2)
               + b"\xaa\xbb")),
        ("rdma_ready", "RdmaReady", 0xFFFFFFFF, frame(0x0D, 0xFFFFFFFF, b"")),
    ]
    fields: dict[str, dict[str, object]] = {
        "client_hello_private_rdma": fields_hello(2, 4096, 0xC, [[0xFE, ""]], [], [0, 1, 2]),
        "server_hello": fields_hello(1, 64 << 20, 1, [[1, ""]], [0], [0]),
        "tensor_request": {"key": "weights/\u21130", "layouts": [[1, ""], [2, ""]], "device": 0,
                           "min_alignment": 64, "flags": 3},
        "tensor_descriptor": {"descriptor": "hex:" + DESC.hex(), "total_data_bytes": 5,
                              "shard_index": 1, "total_shards": 4},
        "tensor_data": {"offset": 4096, "data": "hex:00010203ff"},
        "tensor_put": {"key": "x", "descriptor": "hex:" + DESC.hex(), "total_data_bytes": 5},
        "error": {"code": 2, "message": "no tensor 'x'"},
        "error_private_code": {"code": 0xF3, "message": ""},
        "rdma_register": {"remote_addr": 0x1122334455667788, "length": 5, "rkey": "hex:aabb"},
    }
    return [{"name": v[0], "class": v[1], "stream_id": v[2], "hex": v[3].hex(),
             "fields": v[4] if len(v) > 4 else fields.get(v[0], {})} for v in out]


if __name__ == "__main__":
    rows = (json.dumps(v, ensure_ascii=False) for v in vectors())
    (HERE / "vectors.json").write_text("[\n" + ",\n".join(rows) + "\n]\n", encoding="utf-8")
