"""Tensor operations that run on a device: dequantization, unpacking and layout conversion."""

from __future__ import annotations

from hurray_gpu.ops.dequantize import dequantize, unpack
from hurray_gpu.ops.host import element, relayout, sparsify
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.ops.plan import DequantPlan, plan_dequantize, plan_unpack

__all__ = ["DequantPlan", "dequantize", "element", "materialize", "plan_dequantize", "plan_unpack",
           "relayout", "sparsify", "unpack"]
