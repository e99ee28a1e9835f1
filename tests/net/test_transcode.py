"""Layout negotiation and transcoding: the server converts with the library's own ops."""

from __future__ import annotations

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import RemoteError
from hurray_gpu.format import descriptor as d
from hurray_gpu.format import protocol as P
from tests._support import stable_rng
from tests.net.conftest import Start


def tiled() -> hg.Tensor:
    values = stable_rng("net-tiled").standard_normal((6, 10)).astype(np.float32)
    return hg.relayout(hg.from_numpy(values), d.Tiled((4, 4)))


def int4_blocks() -> hg.Tensor:
    values = stable_rng("net-int4").standard_normal((8, 64)).astype(np.float32)
    return hg.quantize(values, "per_block", axis=1, block_size=32, dtype="int4")


def test_tiled_to_row_major_only_when_allowed(start: Start) -> None:
    t = tiled()
    server, _ = start({"t": t})
    with hg.connect(server.url) as c:
        assert c.get("t", layouts=["tiled"]).layout_name == "tiled"  # acceptable as stored
        with pytest.raises(RemoteError) as info:
            c.get("t", layouts=["row_major"])
        assert info.value.code == P.ErrorCode.LAYOUT_UNAVAILABLE
        got = c.get("t", layouts=["row_major"], allow_transcode=True)
        assert got.layout_name == "row_major"
        assert np.array_equal(got.numpy(), hg.materialize(t).numpy())
        cm = c.get("t", layouts=["col_major", "row_major"], allow_transcode=True)
        assert cm.layout_name == "col_major"  # the first acceptable entry wins
        assert np.array_equal(hg.materialize(cm).numpy(), hg.materialize(t).numpy())
        # a preference list whose first entry matches as stored needs no transcoding
        assert c.get("t", layouts=["tiled", "row_major"], allow_transcode=True
                     ).layout_name == "tiled"


def test_int4_to_bfloat16_equals_local_dequantize(start: Start) -> None:
    q = int4_blocks()
    server, _ = start({"q": q})
    with hg.connect(server.url) as c:
        stored = c.get("q")
        assert stored.dtype.name == "int4" and stored.quantization is not None
        with pytest.raises(RemoteError) as info:
            c.get("q", dtype="bfloat16")
        assert info.value.code == P.ErrorCode.LAYOUT_UNAVAILABLE
        got = c.get("q", dtype="bfloat16", allow_transcode=True)
        local = hg.dequantize(q, "bfloat16")
        assert got.dtype.name == "bfloat16" and got.quantization is None
        assert got.numpy().tobytes() == local.numpy().tobytes()
        f32 = c.get("q", layouts=["row_major", "col_major"], allow_transcode=True)
        assert f32.quantization is not None  # row-major as stored: no dequantization


def test_transcode_limit(start: Start) -> None:
    q = int4_blocks()  # 8 x 64 values: 1 KiB as bfloat16
    server, _ = start({"q": q, "t": tiled()}, transcode_limit=1023)
    with hg.connect(server.url) as c:
        with pytest.raises(RemoteError) as info:
            c.get("q", dtype="bfloat16", allow_transcode=True)
        assert info.value.code == P.ErrorCode.TRANSCODE_LIMIT_EXCEEDED
        assert "1024" in str(info.value) and "1023" in str(info.value)
        assert c.get("t", layouts=["row_major"], allow_transcode=True).shape == (6, 10)
    server2, _ = start({"q": q}, transcode_limit=1024)
    with hg.connect(server2.url) as c:
        assert c.get("q", dtype="bfloat16", allow_transcode=True).nbytes == 1024


def test_hello_advertises_transcoding_only_when_enabled(start: Start) -> None:
    on, _ = start({}, transcode_limit=1 << 20)
    off, _ = start({"t": tiled()}, transcode_limit=0)
    with hg.connect(on.url) as a, hg.connect(off.url) as b:
        both = P.Capability.TRANSCODING | P.Capability.PARALLEL_STREAMS
        assert a.server_hello.capabilities == both
        assert b.server_hello.capabilities == P.Capability.PARALLEL_STREAMS
        assert not b.server_hello.capabilities & P.Capability.RDMA_DATA_PLANE
        with pytest.raises(RemoteError) as info:
            b.get("t", layouts=["row_major"], allow_transcode=True)
        assert info.value.code == P.ErrorCode.TRANSCODE_LIMIT_EXCEEDED
