"""Every error message docs/troubleshooting.md quotes is the one a user really gets.

Each quoted case is triggered for real and its message compared with the quote
(tests/docs/quotes.py turns a quote into a pattern; ``...`` stands for run-time parts): the
"backend is missing" rows in child processes whose environment lacks the driver, the package or
the tool (a package is made unimportable through ``sys.modules``, the OpenCL and Vulkan loaders
are pointed at no driver, PATH at a folder without the tool), the rest here or in the test that
already triggers them (``doc_quote("...")`` in tests/backend). A quote no test triggers fails
the coverage test below.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hurray_gpu as hg
from hurray_gpu.errors import UnsupportedOpError
from tests._support import skip_or_fail, trusted_tensor
from tests.docs.quotes import DOC, doc_quote, pattern, quoted_messages

ROOT = Path(__file__).resolve().parents[2]

# Runs in a child process: argv[1] is the scenario, argv[2] the modules made unimportable.
# Prints a JSON list of every message seen: `hurray-gpu devices --json` reasons (backends and
# toolchains) and the errors of the scenario's triggers.
_CHILD = r"""
import contextlib, importlib.abc, io, json, sys
scenario, blocked = sys.argv[1], [m for m in sys.argv[2].split(",") if m]
for name in blocked:
    sys.modules[name] = None  # `import name` now raises ImportError, as when not installed

class _NoVulkanLoader(importlib.abc.MetaPathFinder):
    # The vulkan package's cffi module dlopens libvulkan when imported; without the loader
    # library that import raises OSError.
    def find_spec(self, name, path=None, target=None):
        if name == "vulkan":
            raise OSError("cannot load library 'libvulkan.so.1': libvulkan.so.1: cannot open "
                          "shared object file: No such file or directory")
        return None

if scenario == "no-vulkan-loader":
    sys.meta_path.insert(0, _NoVulkanLoader())
import numpy as np
import hurray_gpu as hg
from hurray_gpu.cli import main

out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert main(["devices", "--json"]) == 0
inventory = json.loads(out.getvalue())
seen = [row["reason"] for row in inventory["backends"] + inventory["toolchains"] if "reason" in row]

def attempt(call):
    try:
        call()
    except hg.HurrayGPUError as exc:
        seen.append(str(exc))

w = hg.quantize(np.ones((4, 64), np.float32), "per_block", axis=1, block_size=32, dtype="int4")
if scenario == "no-packages":
    attempt(lambda: hg.device("metal:0"))
    attempt(lambda: hg.device("cuda:0"))
    attempt(lambda: hg.dequantize(w.to("cpu"), "float32"))
if scenario == "no-glslang":
    attempt(lambda: hg.dequantize(w.to("vulkan:0"), "float32"))
print(json.dumps(seen))
"""

# scenario -> (modules made unimportable, environment changes, quotes it must trigger)
SCENARIOS: dict[str, tuple[str, dict[str, str], tuple[str, ...]]] = {
    "no-packages": ("pyopencl,vulkan,cupy,ziglang,wgpu", {"PATH": "{empty}"},
                    ("pyopencl is not installed", "the Vulkan backend needs the",
                     "backend needs CuPy", "has no hurray_gpu backend", "no C compiler to build",
                     "the wgpu package is not installed")),
    "no-drivers": ("cupy", {"OCL_ICD_VENDORS": "{empty}", "VK_ICD_FILENAMES": "{empty}/no.json"},
                   ("no OpenCL device found", "no Vulkan device",
                    "wgpu finds no Vulkan, Metal or D3D12 adapter")),
    "no-vulkan-loader": ("cupy", {}, ("libvulkan could not be loaded",)),
    "no-glslang": ("cupy", {"PATH": "{cc_only}"}, ("was not found on PATH",)),
}


def _cc_only_path(tmp_path: Path) -> str:
    """A folder holding only the host C compiler (cc and the gcc it may call)."""
    import shutil

    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("cc", "gcc", "as", "ld"):
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    return str(folder)


def _messages(scenario: str, tmp_path: Path) -> list[str]:
    blocked, changes, _ = SCENARIOS[scenario]
    empty = tmp_path / "empty"
    empty.mkdir()
    fill = {"empty": str(empty), "cc_only": _cc_only_path(tmp_path)}
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "HURRAY_GPU_CC")}
    env.update({k: v.format(**fill) for k, v in changes.items()})
    env.update(PYTHONPATH=str(ROOT), HURRAY_GPU_CACHE_DIR=str(tmp_path / "cache"),
               HURRAY_GPU_PROGRESS="0")
    done = subprocess.run([sys.executable, "-c", _CHILD, scenario, blocked], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_backend_missing_rows_are_the_real_messages(scenario: str, tmp_path: Path) -> None:
    if scenario == "no-glslang" and "vulkan" not in {d.kind for d in hg.devices()}:
        skip_or_fail("no Vulkan device here", "apt install mesa-vulkan-drivers; pip install "
                     ".[vulkan]")
    seen = _messages(scenario, tmp_path)
    for fragment in SCENARIOS[scenario][2]:
        if fragment.startswith("wgpu finds") and sys.version_info < (3, 11):
            continue  # wgpu 0.32 needs Python 3.11: on 3.10 it is not installed at all
        quote = doc_quote(fragment)
        assert any(quote.search(m) for m in seen), (fragment, quote.pattern, seen)


def test_no_device_hint_for_cuda_is_the_quoted_one() -> None:
    """CuPy without an NVIDIA GPU cannot be set up here; `devices` prints the same hint table
    for every backend whose driver loads but finds no device (the no-drivers scenario shows
    it for OpenCL and Vulkan), so the CUDA row is that table's entry."""
    from hurray_gpu.cli.devices import NO_DEVICE_HINTS

    assert doc_quote("sees no NVIDIA GPU").search(NO_DEVICE_HINTS["cuda"])


def test_32_bit_indexing_message() -> None:
    # 2**32 int4 elements: 2 GiB of codes that the check refuses before any launch or read
    # (the tensor's buffers are never touched, so a zero-stride view of one byte stands in).
    from hurray_gpu.format.descriptor import BufferHandle, RowMajor, TensorDescriptor
    from hurray_gpu.format.dtypes import by_name

    count = 1 << 32
    desc = TensorDescriptor(by_name("int4"), (1 << 16, 1 << 16), RowMajor(),
                            (BufferHandle(count // 2),))
    codes = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (count // 2,), (0,))
    with pytest.raises(UnsupportedOpError, match=doc_quote("32-bit indexing")):
        hg.dequantize(trusted_tensor(desc, [codes]), "float32")


def test_every_quote_is_triggered_by_a_test() -> None:
    """Each quote is named (by a fragment) by exactly one trigger: a scenario here, the CUDA
    hint or 32-bit checks above, or a ``doc_quote("...")`` in another test."""
    quotes = quoted_messages(DOC.read_text(encoding="utf-8"))
    assert len(quotes) >= 12, quotes
    fragments = [f for _, _, frags in SCENARIOS.values() for f in frags]
    fragments += ["sees no NVIDIA GPU", "32-bit indexing"]
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if path.name != Path(__file__).name:
            fragments += re.findall(r'doc_quote\("([^"]+)"\)', path.read_text(encoding="utf-8"))
    untriggered = [q for q in quotes if not any(f in q for f in fragments)]
    assert not untriggered, f"{DOC.name} quotes cases no test triggers: {untriggered}"


def test_a_stale_quote_is_caught() -> None:
    real = "device tag metal (0x03) has no hurray_gpu backend; supported: cpu. Fix: ..."
    assert pattern("device tag ... has no hurray_gpu backend").search(real)
    assert not pattern("device tag ... has no backend at all").search(real)
    assert not pattern("the Vulkan backend needs the vulkan package").search(
        "the Vulkan backend needs the `vulkan` package (No module named 'vulkan').")
