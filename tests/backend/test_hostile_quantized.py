"""The hostile-index matrix again, with quantized values: sparse values stored as int8 codes
with per-channel scales, block-paged pools as int8 with per-page-slot scales. The fused
dequant kernels walk the same index buffers, so every malicious table must be refused before
any launch (or neutralised exactly) here too. CI reruns this with HURRAY_GPU_DEBUG_BOUNDS=1.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from test_hostile_indices import CASES, REJECT, Case, build_case, check_case

from hurray_gpu.format.descriptor import BufferHandle
from hurray_gpu.format.descriptor.quant import PerBlockAffine, PerChannelAffine
from hurray_gpu.format.dtypes import by_name
from hurray_gpu.tensor import Tensor

SCALE = np.float32(0.5)
QUANTIZED = [c for c in CASES if c.name.split("/")[0] in ("coo", "csr", "csc", "csf", "paged")]


def _quantize(t: Tensor) -> Tensor:
    """``t`` (float32 values 0, 1, 2, ...) as int8 codes with scale 0.5 parameters."""
    desc = t.descriptor
    values = np.asarray(t.buffers[0]).view(np.uint8)
    codes = values[: values.size // 4 * 4].view("<f4").astype(np.int8).view(np.uint8)
    paged = desc.layout_tag == 0x0A
    count = (int(desc.layout.num_pages) * int(desc.layout.page_size) if paged
             else int(desc.shape[-1]))
    scales = np.full(count, SCALE, "<f4").view(np.uint8)
    bufs = [codes, *(np.asarray(b) for b in t.buffers[1:]), scales]
    at = len(bufs) - 1
    quant = (PerBlockAffine(0, int(desc.layout.page_size), at, None, 3) if paged
             else PerChannelAffine(len(desc.shape) - 1, at))
    handles = tuple(BufferHandle(b.size) for b in bufs)
    return Tensor.from_parts(dataclasses.replace(desc, dtype=by_name("int8"), buffers=handles,
                                                 quantization=quant), bufs)


@pytest.mark.parametrize("case", QUANTIZED, ids=[c.name for c in QUANTIZED])
def test_hostile_quantized_index_matrix(device: Any, case: Case) -> None:
    check_case(device, case, build_case(case, _quantize),
               lambda want: (want * SCALE).astype(np.float32))


def test_the_quantized_matrix_covers_sparse_and_paged() -> None:
    assert {c.name.split("/")[0] for c in QUANTIZED} == {"coo", "csr", "csc", "csf", "paged"}
    assert sum(c.expect is REJECT for c in QUANTIZED) >= 20
