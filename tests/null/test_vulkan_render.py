"""Golden renderings of what the Vulkan backend really compiles.

The shared GLSL goldens (``expected/*.comp``) show the dialect layer's output; the Vulkan
backend adds dispatch bases, windowed subscripts and a fault flag on top of it
(``VulkanGLSLRenderer`` in ``hurray_gpu/backends/vulkan.py``), and that text is what glslang
turns into SPIR-V. These files make a change to either layer visible in review. Regenerate after an intended change with
``UPDATE_EXPECTED=1 pytest tests/null/test_vulkan_render.py`` and review the diff.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from hurray_gpu.backends.vulkan import VulkanGLSLRenderer
from hurray_gpu.kernels import KERNELS, get_kernel

EXPECTED = Path(__file__).parent / "expected_vulkan"
# One kernel per family: plain elementwise, sub-byte, dequant (affine, LUT), layout gather,
# sparse, KV paging, and the atomics users.
KERNEL_NAMES = ("copy_bytes", "axpy_f32", "f32_to_f16", "dequant_affine_f32", "dequant_lut_bf16",
                "layout_sep_u32", "sparse_csr_rows_u32", "kv_gather_u16", "kv_q8_scatter_f16")
RENDERER = VulkanGLSLRenderer()


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_vulkan_rendering_matches_expected(name: str) -> None:
    path = EXPECTED / f"{name}.comp"
    got = RENDERER.render(get_kernel(name))
    if os.environ.get("UPDATE_EXPECTED") == "1":
        EXPECTED.mkdir(exist_ok=True)
        path.write_text(got)
    want = path.read_text()
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                        str(path), "rendered"))
    assert got == want, f"Vulkan GLSL of {name} changed:\n{diff}"


def test_every_expected_file_has_a_kernel() -> None:
    for path in EXPECTED.iterdir():
        assert path.suffix == ".comp" and path.stem in KERNEL_NAMES and path.stem in KERNELS, \
            f"stale expected file {path.name}"


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_every_subscript_is_guarded_and_rebased(name: str) -> None:
    """Each buffer access goes through hg_ix_<buffer>, which adds the window offset and raises
    the fault flag outside the binding: no raw ``buf[...]`` subscript survives."""
    kernel = get_kernel(name)
    text = RENDERER.render(kernel)
    # Skip the buffer block declarations (``uint dst[];``); accessors and main follow them.
    code = "\n".join(line for line in text.splitlines() if not line.startswith("layout("))
    for param in kernel.buffers:
        assert f"{param.name}[hg_ix_{param.name}(" in code, f"{name}: {param.name} never read"
        raw = code.replace(f"{param.name}[hg_ix_{param.name}(", "")
        assert f"{param.name}[" not in raw, f"{name}: unguarded subscript of {param.name}"
    assert "hg_fault" in text and "hg_pc.hg_base0" in text
