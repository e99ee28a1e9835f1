"""GLSL for the Vulkan backend: the shared GLSL 450 dialect plus chunked-dispatch offsets.

Each launch may be split into dispatches over windows of big buffers, so work-item ids get a
per-dispatch base and every subscript is rebased and range-checked against its binding.
"""

from __future__ import annotations

from typing import ClassVar

from hurray_gpu.dialect.glsl import GLSLRenderer
from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.errors import UnsupportedOpError

__all__ = ["PUSH_HEADER_WORDS", "VulkanGLSLRenderer", "push_words"]

# Push-constant words before the per-buffer offsets: the work-item base on each axis.
PUSH_HEADER_WORDS = 3
# Bumped whenever the text this module adds changes meaning (it is part of the cache key).
VULKAN_GLSL_ABI = 1


def push_words(kernel: KernelDef) -> int:
    """Push-constant words a kernel uses: 3 bases, one offset per buffer, one per scalar."""
    return PUSH_HEADER_WORDS + len(kernel.buffers) + len(kernel.scalars)


def guard_subscripts(pattern: str) -> str:
    """Wrap every ``{b}[...]`` subscript of a load/store pattern in ``hg_ix_{b}(...)``."""
    out, pos, opener = [], 0, "{b}["
    while (start := pattern.find(opener, pos)) >= 0:
        depth, end = 1, start + len(opener)
        while depth:
            if end >= len(pattern):
                raise ValueError(f"unbalanced subscript in GLSL pattern {pattern!r}")
            depth += {"[": 1, "]": -1}.get(pattern[end], 0)
            end += 1
        inner = pattern[start + len(opener):end - 1]
        out.append(pattern[pos:start] + "{b}[hg_ix_{b}(" + inner + ")]")
        pos = end
    return "".join(out) + pattern[pos:]


class VulkanGLSLRenderer(GLSLRenderer):
    """GLSLRenderer whose ids carry a dispatch base and whose subscripts are rebased.

    Push constants: ``hg_base0..2`` (work-item base per axis), ``hg_d_<buffer>`` (words from
    the bound window's start to the buffer's element 0, modulo 2**32), then the scalars.
    Binding ``len(buffers)`` is a one-word fault flag set when an index leaves its window.
    """

    index_expr = tuple(  # type: ignore[assignment]
        f"(gl_GlobalInvocationID.{axis} + hg_pc.hg_base{d})" for d, axis in enumerate("xyz")
    )
    load_map: ClassVar[dict[str, str]] = {
        k: guard_subscripts(v) for k, v in GLSLRenderer.load_map.items()
    }
    store_map: ClassVar[dict[str, str]] = {
        k: guard_subscripts(v) for k, v in GLSLRenderer.store_map.items()
    }

    def render_accessors(self, kernel: KernelDef) -> str:
        lines = super().render_accessors(kernel).split("\n")
        blocks = [line for line in lines if line.startswith("layout(std430")]
        functions = [line for line in lines if not line.startswith("layout(")]
        fault = (f"layout(std430, set = 0, binding = {len(kernel.buffers)}) buffer "
                 "hg_fault_block { uint hg_fault; };")
        return "\n".join(blocks + [fault, self.render_push_block(kernel)]
                         + self.render_index_helpers(kernel) + functions)

    def render_push_block(self, kernel: KernelDef) -> str:
        """The push-constant block: bases, per-buffer word offsets, then the scalars."""
        names = [f"hg_base{d}" for d in range(PUSH_HEADER_WORDS)]
        names += [f"hg_d_{p.name}" for p in kernel.buffers]
        fields = [f"uint {name};" for name in names]
        fields += [f"{self.type_map[p.dtype]} {p.name};" for p in kernel.scalars]
        return f"layout(push_constant) uniform hg_push_block {{ {' '.join(fields)} }} hg_pc;"

    def render_index_helpers(self, kernel: KernelDef) -> list[str]:
        """``hg_ix_<b>``: rebase a word index into the window; flag it when outside."""
        return [
            f"uint hg_ix_{p.name}(uint hg_j) {{ uint hg_k = hg_j + hg_pc.hg_d_{p.name}; "
            f"if (hg_k >= uint({p.name}.length())) {{ atomicOr(hg_fault, 1u); }} return hg_k; }}"
            for p in kernel.buffers
        ]


def check_push_size(kernel: KernelDef, limit: int) -> int:
    """Return the push-constant bytes of ``kernel``.

    Raises:
        UnsupportedOpError: more than the device's ``maxPushConstantsSize``.
    """
    size = 4 * push_words(kernel)
    if size > limit:
        raise UnsupportedOpError(
            f"kernel {kernel.name} needs {size} bytes of Vulkan push constants; the device "
            f"allows {limit}",
            fix="pass fewer scalars or buffers (each takes one 32-bit word).",
        )
    return size
