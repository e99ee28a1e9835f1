"""The demo's layout tensors: a tiled float16 embedding and an SpQR-style overlay composite
(int4 per-block base plus a float16 COO outlier correction), with their NumPy expectations."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from hurray_gpu.cli.demo_model import QuantizedWeight

__all__ = ["OUTLIER_FRACTION", "layout_tensors"]

# Share of the base's largest errors that the sparse correction stores exactly (SpQR keeps
# well under 1% of weights as outliers).
OUTLIER_FRACTION = 0.005
TILE = (16, 16)
_BASE, _CORRECTION = 1, 0


def _member(t: Any, parent: tuple[int, ...], role: int) -> Any:
    from hurray_gpu.format.descriptor.sections import CompositeMember, Shard
    from hurray_gpu.tensor import Tensor

    desc = dataclasses.replace(t.descriptor, shard=Shard(parent, (0,) * len(parent)),
                               composite_member=CompositeMember(role))
    return Tensor.from_parts(desc, list(t.buffers))


def tiled_embedding(d_model: int, seed: int) -> QuantizedWeight:
    """A float16 [8*d_model, d_model] embedding stored in 16x16 tiles."""
    from hurray_gpu.format.descriptor.layouts import Tiled
    from hurray_gpu.ops.layout_host import relayout
    from hurray_gpu.tensor import Tensor

    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((8 * d_model, d_model)).astype(np.float16)
    t = relayout(Tensor.from_numpy(emb), Tiled(TILE))
    return QuantizedWeight("embed.weight", f"float16, tiled {TILE[0]}x{TILE[1]}", t, emb,
                           emb.astype(np.float32))


def spqr_overlay(base: QuantizedWeight) -> QuantizedWeight:
    """``base`` (int4 per-block) plus the float16 residual at its largest errors, as an
    overlay composite with combine op ``add``; the head type is float16."""
    from hurray_gpu.format.descriptor import TensorDescriptor
    from hurray_gpu.format.descriptor.layouts import Composite
    from hurray_gpu.format.dtypes import by_name
    from hurray_gpu.ops.layout_host import sparsify
    from hurray_gpu.tensor import Tensor

    shape = tuple(int(d) for d in base.original.shape)
    residual = base.original - base.expected
    keep = max(1, int(residual.size * OUTLIER_FRACTION))
    flat = np.argsort(np.abs(residual), axis=None)[-keep:]
    correction = np.zeros(shape, np.float16)
    correction.flat[flat] = residual.flat[flat].astype(np.float16)
    base_f16 = base.expected.astype(np.float16)
    expected = (base_f16.astype(np.float32) + correction.astype(np.float32)).astype(np.float16)
    members = [_member(base.tensor, shape, _BASE),
               _member(sparsify(Tensor.from_numpy(correction), "coo"), shape, _CORRECTION)]
    head = TensorDescriptor(by_name("float16"), shape, Composite(2, 2, 2), ())
    t = Tensor.from_parts(head, [], members)
    label = f"SpQR overlay: int4 base + f16 COO, {keep} outliers"
    return QuantizedWeight(base.name.replace(".weight", ".spqr"), label, t, expected,
                           base.original)


def layout_tensors(weights: list[QuantizedWeight], d_model: int) -> list[QuantizedWeight]:
    """The tiled embedding and the SpQR overlay of the first (int4 per-block) weight."""
    return [tiled_embedding(d_model, seed=2), spqr_overlay(weights[0])]


def materialize_layouts(rec: Any, items: list[QuantizedWeight], on_dev: dict[str, Any],
                        dev: Any) -> dict[str, Any]:
    """Materialize each layout tensor on ``dev`` (gather tiles; dequantize the base, scatter-add
    the COO correction) and compare with NumPy bit for bit."""
    from hurray_gpu.ops.materialize import materialize

    results = {}
    for item in items:
        t = on_dev[item.name]
        materialize(t)  # warm-up: compiles (or loads) the gather/scatter kernels
        dev.synchronize()
        with rec.timed(f"materialize {item.name} [{item.label}]", dev.spec,
                       t.nbytes + item.expected.nbytes) as row:
            result = materialize(t)
            dev.synchronize()
        results[item.name] = result
        got = result.to("cpu").numpy()
        exact = got.shape == item.expected.shape and got.tobytes() == item.expected.tobytes()
        err = got.astype(np.float32) - item.original
        rel = float(np.sqrt((err ** 2).mean() / (item.original ** 2).mean()))
        row.ok = exact
        row.check = (f"{'bit-exact' if exact else 'MISMATCH'} vs NumPy; "
                     f"rel. RMS error vs fp32 {rel:.2%}")
    return results
