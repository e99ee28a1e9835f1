"""A work-group kernel of the dialect layer (barriers, a workgroup array, values live across
the barrier) on every compiling device, host C's region splitting included, against NumPy."""

from __future__ import annotations

import numpy as np

from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from tests._support import stable_rng
from tests.null.test_host_groups import MIRROR, UNIFORM, group_kernel


def test_group_mirror_matches_numpy(kernel_device: Device) -> None:
    n = 64 * 5 - 7  # a partial last group: its padded items only read and write the tile
    src = stable_rng("group mirror").integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    dst = Buffer.from_bytes(kernel_device, bytes(4 * n))
    kernel_device.run(group_kernel(MIRROR), Buffer.from_bytes(kernel_device, src.tobytes()),
                      dst, n, global_size=(n,), wait=True)
    got = np.frombuffer(bytes(dst.copyout()), np.uint32)
    padded = np.zeros(64 * 5, np.uint32)
    padded[:n] = src
    mirrored = padded.reshape(5, 64)[:, ::-1].ravel()[:n]
    assert got.tolist() == (src + mirrored).tolist()


def test_group_uniform_loops_match_numpy(kernel_device: Device) -> None:
    n = 64 * 3 - 5
    src = stable_rng("group uniform").integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    dst = Buffer.from_bytes(kernel_device, bytes(4 * n))
    kernel_device.run(group_kernel(UNIFORM), Buffer.from_bytes(kernel_device, src.tobytes()),
                      dst, n, global_size=(n,), wait=True)
    got = np.frombuffer(bytes(dst.copyout()), np.uint32)
    tiles = np.zeros(64 * 3, np.uint64)
    tiles[:n] = src
    i = np.arange(n)
    s = sum(tiles[i - i % 64 + (i + k) % 64] * (k + 1) for k in range(8))
    s += np.where(i % 2 == 0, 0 + 1 + 2 + 3 + 4, 0 + 1 + 2).astype(np.uint64)
    assert got.tolist() == (s % 2**32).astype(np.uint32).tolist()
