"""``hurray-gpu``: help, usage errors, one-line errors with Fix:, devices, inspect, vyre."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hurray_gpu import devices
from hurray_gpu.cli import main
from hurray_gpu.errors import HurrayGPUError
from hurray_gpu.runtime.registry import resolve_device
from tests._support import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
VYRE = ROOT / "tests" / "golden" / "vyre"
K02_A = "000000000100000002000000030000006400000056555555ffffffff07000000"
K02_B = "0a000000140000001e00000028000000320000000100000002000000ffffffff"
K02_OUT = "0a0000001700000024000000310000005e01000003000000ffffffff14000000"


@pytest.mark.parametrize("argv", [[], ["devices"], ["inspect"], ["materialize"], ["convert"],
                                  ["export"], ["demo"],
                                  ["bench"], ["vyre"], ["vyre", "inspect"], ["vyre", "run"]])
def test_help_works_for_every_command(argv: list[str], capsys: pytest.CaptureFixture) -> None:
    assert main([*argv, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: hurray-gpu")


def _one_line_error(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "Fix:" in err and "\n" not in err
    assert "Traceback" not in err and "usage:" not in err
    return err


def test_usage_errors_exit_2_with_one_line(capsys: pytest.CaptureFixture) -> None:
    assert main([]) == 2
    assert "COMMAND" in _one_line_error(capsys)
    assert main(["frobnicate"]) == 2
    assert "frobnicate" in _one_line_error(capsys)
    assert main(["materialize", "x.hrry"]) == 2  # NAME and --out missing
    assert "hurray-gpu materialize --help" in _one_line_error(capsys)


def test_negative_grid_is_one_error_line(capsys: pytest.CaptureFixture) -> None:
    # Was: argparse took -1,1,1 for an option and printed its usage block (exit 2).
    assert main(["vyre", "run", str(VYRE / "k02_add_mul.vir"), "--grid", "-1,1,1"]) == 1
    assert "bad --grid '-1,1,1'" in _one_line_error(capsys)


def test_bad_inputs_give_one_line_with_fix(tmp_path: Path, capsys: pytest.CaptureFixture
                                           ) -> None:
    missing = str(tmp_path / "missing.hrry")
    assert main(["inspect", missing]) == 1
    assert "No such file" in _one_line_error(capsys)
    bad = tmp_path / "bad.hrry"
    bad.write_bytes(b"HRRY" + bytes(60))
    assert main(["inspect", str(bad), "--kind", "file"]) == 1
    _one_line_error(capsys)
    assert main(["materialize", missing, "w", "--out", str(tmp_path / "o.npy")]) == 1
    _one_line_error(capsys)
    assert main(["materialize", missing, "w", "--device", "metal",
                 "--out", str(tmp_path / "o.npy")]) == 1
    assert "metal" in _one_line_error(capsys)
    assert main(["materialize", missing, "w", "--dtype", "int3",
                 "--out", str(tmp_path / "o.npy")]) == 1
    assert "int3" in _one_line_error(capsys)
    assert main(["demo", "--device", "warp9"]) == 1
    _one_line_error(capsys)
    assert main(["vyre", "run", str(tmp_path / "none.vir")]) == 1
    _one_line_error(capsys)


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    with pytest.raises(HurrayGPUError):
        main(["--debug", "demo", "--device", "warp9"])
    with pytest.raises(OSError):
        main(["--debug", "inspect", str(tmp_path / "missing.hrry")])


def test_devices_text_and_json(capsys: pytest.CaptureFixture) -> None:
    assert main(["devices"]) == 0
    text = capsys.readouterr().out
    assert "cpu:0" in text and "Kernel toolchains" in text and "\ndefault: " in text
    assert main(["devices", "--json"]) == 0
    inv = json.loads(capsys.readouterr().out)
    tags = [b["tag"] for b in inv["backends"]]
    assert tags == [f"0x{t:02x}" for t in range(9)]  # every Hurray device tag, in order
    for b in inv["backends"]:
        assert b["available"] == bool(b["devices"])
        if not b["available"]:
            assert "Fix:" in b["reason"]  # every unusable backend says why and what to do
        for d in b["devices"]:
            assert d["memory_classes"][0] == "standard"
    cpu = inv["backends"][0]
    assert cpu["available"] and cpu["devices"][0]["spec"] == "cpu:0"
    pool, alloc = cpu["devices"][0]["pool"], resolve_device("cpu:0").allocator
    assert pool == {"limit_bytes": alloc.pool_limit, "idle_budget_bytes": alloc.pool_idle_budget,
                    "idle_seconds": alloc.pool_idle_seconds, "pooled_bytes": alloc.pooled_bytes}
    pools = "Buffer pools" + text.split("\nBuffer pools")[1].split("\n\n")[0]
    assert "\ncpu:0 " in pools and "HURRAY_GPU_POOL_IDLE_SECONDS" in pools
    assert max(len(line) for line in pools.splitlines()) <= 100
    names = [t["name"] for t in inv["toolchains"]]
    assert names == ["NVRTC", "hipRTC", "OpenCL", "glslang", "wgpu", "host C compiler"]
    for d in inv["backends"][5]["devices"]:  # webgpu: the adapter's backend and features
        assert d["adapter_backend"] in ("Vulkan", "Metal", "D3D12")
        assert f"{d['spec']} ({d['adapter_backend']} adapter) features: " in text
        assert all(len(line) <= 100 for line in text.splitlines() if d["spec"] + " (" in line)
    cc = inv["toolchains"][-1]
    assert cc["available"] and cc["version"]  # the cpu backend needs it, so it is here
    assert inv["default"]["spec"]


def test_console_entry_point_runs_as_a_module() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "hurray_gpu.cli", "devices", "--json"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["backends"][0]["backend"] == "cpu"


def test_vyre_inspect_and_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    prog = str(VYRE / "k02_add_mul.vir")
    assert main(["vyre", "inspect", prog]) == 0
    assert "decode: ok" in capsys.readouterr().out
    assert main(["vyre", "run", prog, "--kat", str(VYRE / "k02_add_mul.kat.json")]) == 0
    out = capsys.readouterr().out
    assert "kat out: match" in out and "reference interpreter" in out
    (tmp_path / "b.bin").write_bytes(bytes.fromhex(K02_B))
    assert main(["vyre", "run", prog, "--grid", "2,1,1", "--json", "--inputs",
                 f"a=hex:{K02_A}", f"b={tmp_path / 'b.bin'}", f"out=hex:{'00' * 32}"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["outputs"] == {"out": K02_OUT}
    assert main(["vyre", "run", prog, "--inputs", "a"]) == 1
    assert "NAME=SRC" in _one_line_error(capsys)
    assert main(["vyre", "run", prog, "--grid", "2,1"]) == 1
    _one_line_error(capsys)
    broken = tmp_path / "broken.vir"
    broken.write_bytes(b"VIR0" + bytes(10))
    assert main(["vyre", "inspect", str(broken)]) == 1
    assert "decode: FAILED" in capsys.readouterr().out


@pytest.mark.parametrize("spec", ["cpu", "opencl:0", "vulkan:0"])
def test_vyre_run_on_a_device_matches_the_kat(spec: str, capsys: pytest.CaptureFixture) -> None:
    if spec.split(":")[0] not in {d.kind for d in devices()}:
        skip_or_fail(f"{spec} is not available here", "install pocl-opencl-icd and "
                     "mesa-vulkan-drivers, then pip install .[opencl,vulkan]")
    prog = str(VYRE / "k06_atomic_histogram.vir")
    assert main(["vyre", "run", prog, "--kat", str(VYRE / "k06_atomic_histogram.kat.json"),
                 "--device", spec]) == 0
    out = capsys.readouterr().out
    assert f"ran on: lowered kernels on {spec}" in out and "kat hist: match" in out


def test_vyre_run_max_loop_passes_bounds_a_device_run(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    """``--max-loop-passes N`` reaches the device run: a 1000-pass loop stops with the typed
    loop-budget error under N=100 and runs to the reference's answer under N=5000."""
    import numpy as np

    import vyre
    from tests.vyre.test_device_time_bound import _counted, _inputs

    prog = tmp_path / "counted.vir"
    prog.write_bytes(vyre.to_wire(_counted()))
    n = (tmp_path / "n.bin")
    n.write_bytes(_inputs(1000, 0)["n"])
    run = ["vyre", "run", str(prog), "--device", "cpu", "--json", "--inputs", f"n={n}",
           f"out=hex:{'00' * 16}", "--grid", "1,1,1", "--max-loop-passes"]
    assert main([*run, "100"]) == 1
    assert "max_loop_passes=100" in _one_line_error(capsys)
    assert main([*run, "5000"]) == 0
    want = vyre.reference.run(_counted(), {"n": n.read_bytes(), "out": bytes(16)},
                              grid=(1, 1, 1))["out"]
    got = json.loads(capsys.readouterr().out)["outputs"]["out"]
    assert bytes.fromhex(got) == bytes(want) and np.frombuffer(want, "<u4").any()
    assert main(["vyre", "run", str(prog), "--max-loop-passes", "10"]) == 1
    assert "Fix: add --device cpu" in _one_line_error(capsys)
