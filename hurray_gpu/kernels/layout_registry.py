"""Every layout-conversion kernel, gathered for the kernel registry (dense, fused dequant,
sparse, validation, composite and block-paged kernels)."""

from __future__ import annotations

from hurray_gpu.kernels.layout import LAYOUT_KERNELS
from hurray_gpu.kernels.layout_checks import CHECK_KERNELS
from hurray_gpu.kernels.layout_csr import CSR_ROWS
from hurray_gpu.kernels.layout_fused import FUSED_KERNELS
from hurray_gpu.kernels.layout_paged import CHECK_PAGED, PAGED_GATHERS
from hurray_gpu.kernels.layout_paged_dequant import PAGED_DEQUANT_KERNELS
from hurray_gpu.kernels.layout_put import PUT_KERNELS
from hurray_gpu.kernels.layout_sparse import SPARSE_KERNELS
from hurray_gpu.kernels.layout_sparse_dequant import SPARSE_DEQUANT_KERNELS

__all__ = ["LAYOUT_ALL"]

LAYOUT_ALL = (*LAYOUT_KERNELS, *FUSED_KERNELS, *SPARSE_KERNELS, *CHECK_KERNELS, *PUT_KERNELS,
              *PAGED_GATHERS.values(), CHECK_PAGED, *CSR_ROWS.values(), *SPARSE_DEQUANT_KERNELS,
              *PAGED_DEQUANT_KERNELS)
