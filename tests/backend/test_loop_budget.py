"""Loop budgets: no work item runs more loop passes than its device allows.

lavapipe (Mesa's llvmpipe) ends every loop of a shader invocation once the invocation has made
65535 loop passes in all its loops together, without any error, so a work item that loops over
a whole row, page or fiber computes a wrong result there. ``Device.loop_budget`` records the
limit; the built-in kernels split their work to stay inside it and lowered vyre programs are
checked against it. Every test runs on every compiling device (cpu, opencl, vulkan here) at
the geometries that used to come out wrong on lavapipe, against NumPy oracles.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from test_kv_cache import host, same_bits
from test_kv_cache_quant import _model, _same

import vyre
from hurray_gpu.dialect.kernel import KernelDef, buf, scalar
from hurray_gpu.errors import HurrayFormatError
from hurray_gpu.kernels import run_reference
from hurray_gpu.kernels.layout_sparse import CHECK_TREE
from hurray_gpu.kv_cache import PagedKVCache
from hurray_gpu.ops.host import sparsify
from hurray_gpu.ops.materialize import materialize
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.tensor import Tensor
from tests._support import trusted_tensor
from vyre import builder as b
from vyre.ir import Scalar
from vyre.lower import lower
from vyre.lower.ops import LoopBudgetError

# One work item counting the passes of one loop of n steps (an LCG keeps the loop from being
# folded into a closed form).
_COUNT = KernelDef(
    name="test_loop_passes", params=(buf("res", "u32", "w"), scalar("n")),
    body="""
        u32 c = 0u;
        u32 k = 0u;
        for (u32 i = 0u; i < n; i++) { c = c * 1664525u + 1013904223u; k = k + 1u; }
        STORE(res, 0u, k);
        STORE(res, 1u, c);
    """, grid=lambda s: (1,), extents=lambda s: {"res": 2}, reference=lambda a: None)


def _passes(device: Device, n: int) -> int:
    res = Buffer(device, 8)
    device.run(_COUNT, res, n=n, wait=True)
    return int(res.numpy(np.uint32)[0])


def test_loop_budget_is_what_the_device_runs(kernel_device: Device) -> None:
    budget = kernel_device.loop_budget
    if budget is None:
        assert _passes(kernel_device, 1 << 20) == 1 << 20
    else:
        assert _passes(kernel_device, budget) == budget
        assert _passes(kernel_device, budget + 1) == budget  # cut short, silently
    expected = 65535 if "llvmpipe" in kernel_device.name else None
    assert budget == expected


# -- paged KV cache -------------------------------------------------------------------------

# (name, heads, head_dim, page_size, pages): pages of 64 and 128 rows of 1024 elements (a
# float16 page of 64 rows is 32768 words: its K and V loops together pass 65535), and rows of
# 32768 and 65536 elements. Each used to exceed lavapipe's budget in one work item.
GEOMETRIES = [("pages64", 8, 128, 64, 5), ("pages128", 8, 128, 128, 5),
              ("rows16k", 2, 16384, 2, 6), ("rows32k", 2, 32768, 2, 6)]
CACHES = [("float16", None), ("bfloat16", None), ("float32", None), ("float16", "int8"),
          ("bfloat16", "float8_e4m3")]


def _rows(rng: np.random.Generator, n: int, heads: int, dim: int, dtype: str,
          kv: str | None) -> np.ndarray:
    npdt = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    if kv is None:  # random bits, NaN payloads included: moves are bit-exact
        raw = rng.integers(0, 256, n * heads * dim * npdt.itemsize, dtype=np.uint8)
        return raw.view(npdt).reshape(n, heads, dim)
    x = rng.standard_normal((n, heads, dim)) * np.exp2(rng.integers(-8, 8, (n, heads, 1)))
    return x.astype(npdt)


def _pools(cache: PagedKVCache, page: int) -> list[bytes]:
    """The bytes of ``page`` in every pool (data, and int8 scales) of layer 0."""
    out = []
    for plane in cache.storage.planes:
        size = plane.slot_bytes * cache.page_size
        for pool in plane.buffers[:2]:
            out.append(bytes(pool.copyout())[page * size:(page + 1) * size])
    return out


@pytest.mark.parametrize(("dtype", "kv"), CACHES, ids=[f"{d}-{k}" for d, k in CACHES])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=[g[0] for g in GEOMETRIES])
def test_kv_cache_wide_rows_and_large_pages(kernel_device: Device, dtype: str, kv: str | None,
                                            geometry: tuple[Any, ...]) -> None:
    _, heads, dim, page, pages = geometry
    rng = np.random.default_rng(7)
    cache = PagedKVCache(kernel_device, 1, heads, dim, num_pages=pages, page_size=page,
                         dtype=dtype, kv_dtype=kv)
    want = (lambda x: x) if kv is None else (lambda x: _model(kv, x, x.dtype))
    same = same_bits if kv is None else _same
    a = cache.add_sequence()
    first = _rows(rng, page + page // 2, heads, dim, dtype, kv)
    cache.append(a, 0, first, first[::-1].copy())
    child = cache.fork(a)  # the child's next row copies the shared half page (copy-on-write)
    extra = _rows(rng, 1, heads, dim, dtype, kv)
    cache.append(child, 0, extra, extra)
    cache.swap_out(a)  # whole pages out to the host and back in
    cache.swap_in(a)
    k, v, _ = cache.gather(a, 0)
    assert same(host(k), want(first)) and same(host(v), want(first[::-1].copy()))
    k, _, _ = cache.gather(child, 0)
    assert same(host(k), want(np.concatenate([first, extra])))
    k, _, lens = cache.gather_padded([child, a], 0, max_len=2 * page)
    got = host(k)
    assert same(got[0, :lens[0]], want(np.concatenate([first, extra])))
    assert not got[1, lens[1]:].astype(np.float32).any()  # padding is zeros
    src = cache.block_table(a)[0]
    dst = next(p for p in range(pages) if p not in cache.block_table(a) + cache.block_table(
        child))
    before = _pools(cache, src)
    cache.copy_blocks({src: [dst]})
    assert _pools(cache, dst) == before
    cache.close()


# -- sparse tensors with one long row, column or fiber ---------------------------------------

LONG = 70_000  # entries in one fiber: past 65535


def _long_sparse(fmt: str) -> tuple[np.ndarray, Tensor]:
    """A dense array whose first row (column for CSC, fiber for CSF) holds LONG entries, and
    its sparse form."""
    rng = np.random.default_rng(11)
    shape = {"csc": (LONG, 3), "csf": (2, 2, LONG)}.get(fmt, (3, LONG))
    dense = np.zeros(shape, np.float32)
    lead = (slice(None), 0) if fmt == "csc" else (0, 1) if fmt == "csf" else (0,)
    dense[lead] = rng.integers(1, 1000, LONG)
    dense.reshape(-1)[rng.integers(0, dense.size, 50)] = 5.0  # a few other entries
    return dense, sparsify(Tensor.from_numpy(dense), fmt[:3])


def _duplicated(t: Tensor, fmt: str) -> Tensor:
    """``t`` with entry 65540 of the long fiber repeating the index before it."""
    bufs = [np.array(x, copy=True) for x in t.buffers]
    if fmt == "coo":  # sorted: the long row's entries come first
        idx = bufs[1].view("<u8").reshape(-1, 2)
        idx[65540] = idx[65539]
    else:  # CSR/CSC indices + pointers, or CSF's last crd + pos level
        crd, pos = (bufs[1], bufs[2]) if fmt != "csf" else (bufs[-1], bufs[-2])
        starts = pos.view("<u8").astype(np.int64)
        at = int(starts[np.argmax(np.diff(starts))]) + 65540
        crd.view("<u8")[at] = crd.view("<u8")[at - 1]
    return trusted_tensor(t.descriptor, bufs)


@pytest.mark.parametrize("bad", [None, 3, 5])
def test_tree_check_in_chunks(kernel_device: Device, bad: int | None) -> None:
    """The pos/crd check in chunks of 3 coordinates (what a small loop budget gives) finds a
    repeated coordinate at a chunk boundary (entry 3 after 2) or inside one, on every device."""
    crd = np.arange(10, dtype=np.uint64) * 2  # one node of 10 entries, then an empty one
    if bad is not None:
        crd[bad] = crd[bad - 1]
    ix = np.concatenate([np.array([0, 10, 10], np.uint64), crd]).view(np.uint32)
    scalars = {"nodes": 2, "pos_off": 0, "crd_off": 6, "ncrd": 10, "extent": 20,
               "nix": ix.size, "span": 3}
    err = Buffer.from_bytes(kernel_device, bytes(4))
    kernel_device.run(CHECK_TREE, err=err, ix=Buffer.from_bytes(kernel_device, ix.tobytes()),
                      wait=True, **scalars)
    want = run_reference(CHECK_TREE, {"err": bytes(4), "ix": ix.tobytes()}, scalars)["err"]
    assert bytes(err.copyout()) == bytes(want) == bytes([bad is not None, 0, 0, 0])


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "csf"])
def test_sparse_long_fibers(kernel_device: Device, fmt: str) -> None:
    dense, t = _long_sparse(fmt)
    got = materialize(t.to(kernel_device)).to("cpu").numpy()
    assert np.array_equal(got, dense)
    bad = _duplicated(t, fmt)
    with pytest.raises(HurrayFormatError):
        materialize(bad.to(kernel_device))


# -- vyre loops -----------------------------------------------------------------------------

N = b.load("n", 0)


def _program(*stops: Any) -> Any:
    """out[0] = sum of (i ^ (i >> 3)) over sequential loops of the given stops (u32 wrap)."""
    body = [b.let("acc", 0)]
    for k, stop in enumerate(stops):
        body.append(b.loop(f"i{k}", 0, stop, [
            b.assign("acc", b.wrapping_add(b.var("acc"), b.bit_xor(b.var(f"i{k}"),
                                                       b.shr(b.var(f"i{k}"), 3))))]))
    body.append(b.store("out", 0, b.var("acc")))
    return b.program([b.read("n", 0, Scalar.U32), b.output("out", 1, Scalar.U32, 1)], body,
                     workgroup_size=(1, 1, 1))


def _oracle(*counts: int) -> int:
    total = np.uint64(0)
    for count in counts:
        i = np.arange(count, dtype=np.uint64)
        total += np.sum(i ^ (i >> np.uint64(3)), dtype=np.uint64)
    return int(total) & 0xFFFFFFFF


# (stops, n): dynamic loops of 2**16 and 2**20 steps, two of 2**15, and two that fit.
VYRE = [((N,), 1 << 16), ((N,), 1 << 20), ((N, N), 1 << 15), ((N, N), 30_000), ((N,), 1000)]


@pytest.mark.parametrize(("stops", "n"), VYRE, ids=["2^16", "2^20", "2x2^15", "2x30000", "1000"])
def test_vyre_loops_are_exact_or_refused(kernel_device: Device, stops: tuple[Any, ...],
                                         n: int) -> None:
    program = _program(*stops)
    inputs = {"n": np.array([n], np.uint32).tobytes()}
    budget = kernel_device.loop_budget
    if budget is not None and len(stops) * (n + 1) > budget:
        with pytest.raises(LoopBudgetError, match="Fix:"):
            vyre.run(program, inputs, grid=(1, 1, 1), device=kernel_device)
        kernel = vyre.compile(program, kernel_device)
        out = Buffer(kernel_device, 4)
        with pytest.raises(LoopBudgetError):
            kernel([Buffer.from_bytes(kernel_device, inputs["n"]), out], (1, 1, 1))
        return
    got = vyre.run(program, inputs, grid=(1, 1, 1), device=kernel_device)["out"]
    assert int(got[0]) == _oracle(*[n] * len(stops))


@pytest.mark.parametrize("steps", [1000, 1 << 16])
def test_vyre_static_loops(kernel_device: Device, steps: int) -> None:
    """Literal bounds: loops are always checked (against the driver's budget where the device
    has one, else against the kernel's own pass bound), and refused past the budget."""
    program = _program(steps)
    budget = kernel_device.loop_budget
    checked = lower(program, loop_budget=budget).kernels[0].body
    assert "STORE(trapflag, 1u, 1u)" in checked
    assert ("passmax" in checked) == (budget is None)
    if budget is not None and steps >= budget:
        with pytest.raises(LoopBudgetError):
            vyre.run(program, [np.zeros(1, np.uint32).tobytes()], grid=(1, 1, 1),
                     device=kernel_device)
        return
    got = vyre.run(program, [np.zeros(1, np.uint32).tobytes()], grid=(1, 1, 1),
                   device=kernel_device)["out"]
    assert int(got[0]) == _oracle(steps)


def test_vyre_loop_checks_run_clean_on_every_device(kernel_device: Device) -> None:
    """The checked lowering (forced by a budget of 1) compiles in every dialect and flags
    nothing where the device runs every loop to its end."""
    lowered = lower(_program(N, 5), loop_budget=1)
    kernel = lowered.kernels[0]
    assert "STORE(trapflag, 1u, 1u)" in kernel.body
    n, out = (np.array([300], np.uint32), np.zeros(1, np.uint32))
    bufs = [Buffer.from_bytes(kernel_device, x.tobytes()) for x in (n, out)]
    args = {s.param: bufs[i] for i, s in enumerate(lowered.slots)}
    args.update({s.length: 1 for s in lowered.slots})
    flags = Buffer.from_bytes(kernel_device, bytes(8))
    kernel_device.run(kernel, global_size=(1, 1, 1), wait=True, trapflag=flags, **args)
    assert bytes(flags.copyout()) == bytes(8)
    assert int(bufs[1].numpy(np.uint32)[0]) == _oracle(300, 5)
