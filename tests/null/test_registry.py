"""Backend table, device specs, default device, config, and lazy driver imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hurray_gpu import config
from hurray_gpu.errors import BackendUnavailableError
from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.runtime import registry
from hurray_gpu.runtime.registry import (
    BACKENDS,
    default_device,
    devices,
    is_available,
    module_name,
    parse_spec,
    tag_name,
)
from hurray_gpu.runtime.registry import resolve_device as device


def test_table_rows_are_the_hurray_tags() -> None:
    assert BACKENDS == {0x00: "cpu", 0x01: "cuda", 0x02: "rocm", 0x04: "vulkan", 0x05: "webgpu",
                        0x08: "opencl"}
    assert [int(t) for t in DeviceTag] == list(range(9))


@pytest.mark.parametrize(("tag", "name"), [(0x03, "metal"), (0x06, "hexagon"),
                                           (0x07, "level_zero")])
def test_tags_without_backend_name_the_tag_and_the_supported_ones(tag: int, name: str) -> None:
    with pytest.raises(BackendUnavailableError) as info:
        device((tag, 0))
    text = str(info.value)
    assert name in text and f"0x{tag:02x}" in text and "opencl (0x08)" in text
    assert "Fix:" in text


@pytest.mark.parametrize("tag", [0xF0, 0xFE, 0x09, 0xEF, 0xFF, 256, -1])
def test_private_reserved_and_invalid_tags_raise(tag: int) -> None:
    with pytest.raises(BackendUnavailableError):
        device((tag, 0))
    assert not is_available(tag)


def test_tag_names() -> None:
    assert tag_name(0xF3) == "private(0xf3)"
    assert tag_name(0x03) == "metal (0x03)"


@pytest.mark.parametrize(("spec", "want"), [
    ("cpu", (0, 0)), ("CPU:0", (0, 0)), ("opencl:2", (8, 2)), ("vulkan", (4, 0)),
    ("cuda:1", (1, 1)), ("rocm:0", (2, 0)), ("reference", ("reference", 0)),
    ((8, 1), (8, 1)), (("opencl", 3), (8, 3)), (0x04, (4, 0)), ("metal", (3, 0)),
])
def test_parse_spec(spec: object, want: tuple) -> None:
    assert parse_spec(spec) == want


@pytest.mark.parametrize("spec", ["", "gpu", "cpu:x", "cpu:-1", "cpu:0:1", "x" * 100, 1.5,
                                  ("cpu",), (0, "a"), b"cpu", None.__class__])
def test_bad_specs_are_typed_errors(spec: object) -> None:
    with pytest.raises(BackendUnavailableError):
        device(spec)


def test_cpu_and_reference_always_listed() -> None:
    kinds = [d.kind for d in devices()]
    assert kinds[:2] == ["cpu", "reference"]
    assert "null" not in kinds


def test_opened_devices_are_memoised_and_described() -> None:
    cpu = device("cpu")
    assert device((0, 0)) is cpu
    assert (cpu.tag, cpu.kind, cpu.index) == (0x00, "cpu", 0)
    assert cpu.name and cpu.memory_classes[0].label == "standard"


def test_index_out_of_range() -> None:
    with pytest.raises(BackendUnavailableError, match="index 7"):
        device("cpu:7")


def test_env_override_wins_and_never_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HURRAY_GPU_DEVICE", "reference")
    assert default_device().kind == "reference"
    monkeypatch.setenv("HURRAY_GPU_DEVICE", "metal:0")
    with pytest.raises(BackendUnavailableError):
        default_device()


def test_default_device_skips_emulated_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HURRAY_GPU_DEVICE", raising=False)
    chosen = default_device()
    assert not chosen.emulated
    assert chosen.kind in ("cuda", "rocm", "vulkan", "opencl", "cpu")


def test_missing_driver_module_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, 0x08, "no_such_backend_module")
    monkeypatch.setattr(registry, "EXTRAS", {"no_such_backend_module": "opencl"})
    with pytest.raises(BackendUnavailableError, match=r"hurray_gpu\[opencl\]"):
        registry.backend_module(0x08)
    assert module_name(0x08) == "no_such_backend_module"


def test_importing_hurray_gpu_imports_no_driver() -> None:
    code = ("import sys, hurray_gpu, hurray_gpu.runtime.registry, hurray_gpu.runtime.buffer, "
            "hurray_gpu.kernels, hurray_gpu.backends\n"
            "bad = [m for m in ('cupy', 'pyopencl', 'vulkan', 'cuda') if m in sys.modules]\n"
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_import_loads_only_the_errors_and_plain_dtypes_never_load_ml_dtypes() -> None:
    # ``import hurray_gpu`` is cheap (PEP 562 names); a float32 round trip through a kernel
    # never needs ml_dtypes, whose extension takes longer to load than the whole package.
    code = ("import sys, hurray_gpu as hg\n"
            "first = sorted(m for m in sys.modules if m.startswith('hurray_gpu'))\n"
            "assert first == ['hurray_gpu', 'hurray_gpu.errors'], first\n"
            "assert 'numpy' not in sys.modules and hg.Tensor is hg.tensor.Tensor\n"
            "import numpy as np\n"
            "x = hg.from_numpy(np.arange(64, dtype=np.float32))\n"
            "y = hg.materialize(hg.relayout(x, hg.format.descriptor.ColMajor()))\n"
            "assert np.array_equal(y.numpy(), np.arange(64, dtype=np.float32))\n"
            "assert 'ml_dtypes' not in sys.modules, 'ml_dtypes loaded'\n"
            "assert hg.by_name('bfloat16').numpy.name == 'bfloat16' and 'ml_dtypes' in sys.modules\n"
            "print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
    # A service used before anything imported the Tensor class loads it itself.
    code = ("from hurray_gpu.ops.quantize import quantized_tensor\n"
            "t = quantized_tensor([[1, 2]], 'int8', 'per_tensor', scale=0.5)\n"
            "print(type(t).__name__, t.shape)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "Tensor (1, 2)", done.stdout + done.stderr


def test_config_reads_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("HURRAY_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HURRAY_GPU_CACHE_FATAL", "1")
    monkeypatch.setenv("HURRAY_GPU_DEBUG", "oops")
    assert config.cache_dir() == tmp_path
    assert config.cache_fatal() and config.debug_level() == 0
    monkeypatch.setenv("CC", "/definitely/not/a/compiler")
    monkeypatch.delenv("HURRAY_GPU_CC", raising=False)
    assert config.c_compiler() is None


@pytest.mark.parametrize(("module", "spec", "extra"), [("pyopencl", "opencl", "opencl"),
                                                       ("vulkan", "vulkan", "vulkan")])
def test_missing_driver_package_names_pip_extra(module: str, spec: str, extra: str) -> None:
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from hurray_gpu.runtime.registry import resolve_device as device, devices\n"
            "from hurray_gpu.errors import BackendUnavailableError\n"
            f"assert {spec!r} not in [d.kind for d in devices()]\n"
            "try:\n"
            f"    device({spec!r})\n"
            "except BackendUnavailableError as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"hurray_gpu[{extra}]" in done.stdout and "Fix:" in done.stdout


def test_describe_devices_lists_every_backend() -> None:
    from hurray_gpu.runtime.registry import describe_devices

    text = describe_devices()
    for name in ("cpu:0", "cuda", "rocm", "vulkan", "opencl", "reference"):
        assert name in text
    assert "0x08" in text
