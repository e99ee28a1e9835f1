"""The dequantization and unpacking kernels, gathered for the registry."""

from __future__ import annotations

from hurray_gpu.kernels.dequant_affine import AFFINE_KERNELS, affine_kernel_name
from hurray_gpu.kernels.dequant_lut import LUT_KERNELS, UNPACK_INT_KERNEL, lut_kernel_name

__all__ = ["DEQUANT_KERNELS", "affine_kernel_name", "lut_kernel_name"]

DEQUANT_KERNELS = (*AFFINE_KERNELS, *LUT_KERNELS, UNPACK_INT_KERNEL)
