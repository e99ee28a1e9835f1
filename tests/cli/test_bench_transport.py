"""bench/transport.py: its arithmetic, its raw-socket and Flight peers, and a tiny end-to-end
run whose JSON holds every case with passed correctness checks (the quick mode, smaller)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests._support import require_peer

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


@pytest.fixture(scope="module")
def transport() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("transport")
    finally:
        sys.path.remove(str(BENCH))


def test_rows_take_rates_and_ratios_round_by_round(transport: ModuleType) -> None:
    Stats = transport.Stats  # noqa: N806  (bench/_timing's, as the module imported it)
    ours, theirs = Stats.of([1.0, 2.0, 4.0]), Stats.of([2.0, 2.0, 2.0])
    r = transport.row("c", "GB/s", ours, 8.0, "raw", theirs, "of raw", ">= 0.9")
    assert (r["ours"], r["ours_range"]) == (4.0, [2.0, 8.0])
    assert (r["peer_value"], r["peer_value_range"]) == (4.0, [4.0, 4.0])
    # Their time over ours per round: 2/1, 2/2, 2/4.
    assert (r["ratio"], r["ratio_range"]) == (1.0, [0.5, 2.0])
    lat = transport.row("l", "us", Stats.of([3.0, 6.0, 9.0]), 0, "raw",
                        Stats.of([3.0, 3.0, 3.0]), "x raw time", "<= 2", inverse=True)
    assert (lat["ours"], lat["ratio"], lat["ratio_range"]) == (6.0, 2.0, [1.0, 3.0])
    gone = transport.row("c", "GB/s", ours, 8.0, "Flight", None, "x Flight", ">= 2",
                         missing="pyarrow is not installed")
    assert gone["ratio"] is None and gone["missing"] == "pyarrow is not installed"


def test_raw_socket_peer_moves_the_exact_bytes(transport: ModuleType) -> None:
    want = transport.payload(3 << 20, 7)
    assert np.array_equal(want, transport.payload(3 << 20, 7))
    assert not np.array_equal(want, transport.payload(3 << 20, 8))
    server = transport.RawServer([transport.payload(5, 1), want])
    client = transport.RawClient(server.port)
    try:
        out = memoryview(bytearray(want.nbytes))
        client.get(1, out)
        assert np.array_equal(np.frombuffer(out, np.uint8), want)
        client.put(memoryview(want))  # acknowledged after every byte arrived
        client.get(0, out[:5])
        assert bytes(out[:5]) == transport.payload(5, 1).tobytes()
    finally:
        client.close()
        server.sock.close()


def test_flight_peer_streams_the_exact_bytes(transport: ModuleType) -> None:
    fl = require_peer("pyarrow.flight", "pyarrow")
    want = transport.payload((1 << 20) + 3, 5)
    server = transport.flight_server({"k": want}, 1 << 18)
    client = fl.connect(f"grpc://127.0.0.1:{server.port}")
    try:
        table = client.do_get(fl.Ticket(b"k")).read_all()
        assert table.column(0).num_chunks == 5  # 4 full batches and the 3-byte tail
        assert np.array_equal(transport.flight_bytes(table), want)
    finally:
        client.close()
        server.shutdown()


def _run(tmp_path: Path, env: dict[str, str]) -> tuple[int, dict, str]:
    out = tmp_path / "transport.json"
    argv = [sys.executable, str(BENCH / "transport.py"), "--quick", "--sizes-mib", "0.0625,0.5",
            "--runs", "3", "--calls", "16", "--clients", "2", "--side", "128", "--int4", "4096",
            "--kv-tokens", "100", "--kv-layers", "2", "--kv-heads", "2", "--kv-head-dim", "64",
            "--json", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=600, check=False)
    text = done.stdout + done.stderr
    return done.returncode, (json.loads(out.read_text()) if out.exists() else {}), text


@pytest.mark.slow
def test_quick_run_measures_every_case_and_checks_what_arrived(tmp_path: Path) -> None:
    require_peer("pyarrow.flight", "pyarrow")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HURRAY_GPU_PROGRESS": "0"}
    code, data, text = _run(tmp_path, env)
    assert code == 0, text
    assert data["missing_peers"] == [] and data["runs"] == 3 and data["clients"] == 2
    checks = data["checks"]
    assert all(checks.values()) and {
        "get bulk65536", "get file.bulk524288", "get file.bulk524288 with sendfile out=",
        "raw get 524288 B", "flight do_get 65536 B",
        "get 4 KiB", "concurrent clients get 4 KiB", "transcode tiled -> row-major",
        "transcode int4 -> bfloat16", "KV layer 0 put into the decode cache",
        "KV layer 1 put into the decode cache"} <= set(checks)
    cases = [(r["case"], r["peer"]) for r in data["rows"]]
    for size in ("0.0625", "0.5"):
        for source in ("in-memory registry", "mmapped .hrry"):
            case = f"get {size} MiB from the {source}"
            # Same work on both sides: into a reused buffer, or each into a new array.
            assert (case + " into out=", "raw socket recv_into a reused buffer") in cases
            for peer in ("raw socket recv_into a new array", "Arrow Flight do_get"):
                assert (case, peer) in cases
        # a sendfile=True server of the file against the raw server's sendfile of it
        assert (f"get {size} MiB from the mmapped .hrry, served with sendfile=True, into "
                "out=", "raw socket sendfile of the file's bytes, recv_into a reused buffer"
                ) in cases
    # the device get: the best device, else lavapipe or pocl (CI has both), the 0.5 MiB one
    onto = [r for r in data["rows"] if " MiB onto " in r["case"]]
    assert [(r["case"].split(" (")[0], r["peer"]) for r in onto] == [
        (f"get 0.5 MiB onto {spec}", peer) for spec in [onto[0]["case"].split()[4]] for peer in
        ("get to host memory, then .to(device)", "raw socket recv_into a reused host buffer")]
    assert onto[0]["case"].split()[4] != "cpu:0"
    assert [k for k in checks if k.startswith("get bulk524288 onto ")]
    assert len(cases) == 12 + 2 + 2 + 3 + 2 + 2, cases
    assert checks["raw sendfile 524288 B"]
    # CI's machines have two CPUs: the single-client cases ran pinned apart
    cpus = sorted(os.sched_getaffinity(0))
    assert len(cpus) < 2 or data["placement"] == f"single-client cases: clients on CPU " \
        f"{cpus[0]}, every server thread on CPU {cpus[1]}", data["placement"]
    for r in data["rows"]:
        low, high = r["ours_range"]
        assert 0 < low <= r["ours"] <= high, r
        lo, hi = r["ratio_range"]
        assert 0 < lo <= r["ratio"] <= hi, r
    kv = [r for r in data["rows"] if r["case"].startswith("disaggregated KV")]
    assert [r["case"].split()[2] for r in kv] == ["PUT", "GET"]
    assert checks["KV layer GET from the decode cache"]
    for r in kv:  # 2 layers x K and V x 100 tokens x 2 heads x 64 fp16.
        assert r["bytes"] == 2 * 2 * 100 * 2 * 64 * 2 and r["tokens_per_s"] > 0
    assert "get 0.5 MiB from the mmapped .hrry" in text  # the printed table


@pytest.mark.slow
def test_a_missing_flight_fails_the_run_under_ci(tmp_path: Path) -> None:
    # A pyarrow that cannot be imported, first on the path of the bench and its server.
    fake = tmp_path / "fake" / "pyarrow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "fake"), str(ROOT)]),
           "HURRAY_GPU_PROGRESS": "0", "CI": "true"}
    code, data, text = _run(tmp_path, env)
    assert code == 1 and "CI=true but a peer is missing" in text and "Fix:" in text, text
    assert data["missing_peers"] == ["pyarrow is not installed (hidden by the test)"]
    flight = [r for r in data["rows"] if r["peer"] == "Arrow Flight do_get"]
    assert len(flight) == 4 and all(r["ratio"] is None for r in flight)
    assert all(data["checks"].values())
