"""The built-in kernels: each a KernelDef (portable source, signature, NumPy reference),
registered by name on import (the registry itself is the dialect's, so a Device can launch a
kernel by name); :func:`run_reference` is the test oracle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_gpu.dialect.kernel import (
    KERNELS,
    KernelDef,
    get_kernel,
    kernel_names,
    numpy_dtype,
    register,
)
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.kernels.basic import BASIC_KERNELS
from hurray_gpu.kernels.dequant import DEQUANT_KERNELS
from hurray_gpu.kernels.dequant_variants import VARIANT_KERNELS
from hurray_gpu.kernels.layout import LAYOUT_KERNELS
from hurray_gpu.kernels.layout_paged import CHECK_PAGED, PAGED_GATHERS
from hurray_gpu.kernels.layout_sparse import SPARSE_KERNELS
from hurray_gpu.kernels.paged import PAGED_KERNELS, QUANT_KERNELS

__all__ = ["KERNELS", "KernelDef", "get_kernel", "kernel_names", "loop_steps", "register",
           "run_reference"]


def loop_steps(device: Any, loops: int = 1, reserve: int = 0) -> int:
    """Iterations each of ``loops`` sequential loops of one work item may take inside
    ``device``'s loop budget less ``reserve`` passes (docs/reliability.md, "Loop budgets");
    2**32 - 1 with no budget."""
    budget = getattr(device, "loop_budget", None)
    return 0xFFFFFFFF if budget is None else max(1, (budget - reserve) // loops - 1)

def run_reference(kernel: KernelDef | str, buffers: dict[str, bytes | bytearray],
                  scalars: dict[str, Any]) -> dict[str, bytearray]:
    """Run the NumPy reference on copies of ``buffers`` and return every buffer's new bytes.

    Args:
        kernel: a KernelDef or registered name.
        buffers: the raw bytes of each buffer parameter.
        scalars: each scalar parameter's value.

    Returns:
        The bytes of every buffer after the kernel (inputs unchanged).

    Raises:
        UnsupportedOpError: a parameter is missing.
    """
    kdef = get_kernel(kernel) if isinstance(kernel, str) else kernel
    missing = [p.name for p in kdef.buffers if p.name not in buffers]
    missing += [p.name for p in kdef.scalars if p.name not in scalars]
    if missing:
        raise UnsupportedOpError(f"{kdef.name}: missing arguments {missing}", fix="pass them.")
    out = {p.name: bytearray(buffers[p.name]) for p in kdef.buffers}
    args: dict[str, Any] = dict(scalars)
    for p in kdef.buffers:
        item = numpy_dtype(p.dtype).itemsize
        count = len(out[p.name]) // item
        args[p.name] = np.frombuffer(out[p.name], dtype=numpy_dtype(p.dtype), count=count)
    kdef.reference(args)
    return out


for _kernel in (*BASIC_KERNELS, *DEQUANT_KERNELS, *VARIANT_KERNELS, *LAYOUT_KERNELS,
                *SPARSE_KERNELS, *PAGED_GATHERS.values(), CHECK_PAGED, *PAGED_KERNELS,
                *QUANT_KERNELS):
    register(_kernel)
