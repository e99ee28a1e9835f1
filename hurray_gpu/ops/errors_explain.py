"""Turning a kernel's invalid-parameter flag into a precise HurrayFormatError.

Runs only after a kernel flagged a problem: it downloads the (small) parameter buffers and
names the first offending entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hurray_gpu.errors import DeviceError, HurrayFormatError
from hurray_gpu.kernels.dequant import ERR_INVALID, MODE_MX, MODE_NF4, SCALE_WIDTH, ref_u32_at

__all__ = ["bad_affine_params", "check_flag", "explain_invalid"]


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _host(buf: Any) -> np.ndarray:
    return np.frombuffer(bytes(buf.copyout()), np.uint8)


def _bad_scales(stype: int, raw: np.ndarray, count: int) -> np.ndarray:
    words = ref_u32_at(raw, 0, count, SCALE_WIDTH[stype])
    if stype == 3:
        return ((words & 0x7F800000) == 0x7F800000) | ((words & 0x7FFFFFFF) == 0)
    if stype == 1:
        return ((words & 0x7C00) == 0x7C00) | ((words & 0x7FFF) == 0)
    return ((words & 0x7F80) == 0x7F80) | ((words & 0x7FFF) == 0)


def bad_affine_params(plan: Any, bufs: dict[str, Any]) -> np.ndarray:
    """Per affine parameter entry: invalid scale or zero point, as the kernels test them.

    Args:
        plan: the launched DequantPlan (affine, with parameter buffers).
        bufs: the Buffers bound to its ``scales`` and ``zps`` parameters.
    """
    s = plan.scalars
    count = int(s["nparam"])
    bad = _bad_scales(int(s["stype"]), _host(bufs["scales"]), count)
    if int(s["zmode"]):
        zps = ref_u32_at(_host(bufs["zps"]), int(s["zoff"]), count, 4).view(np.int32)
        bad |= (zps < int(s["zlo"])) | (zps > int(s["zhi"]))
    return bad


def _affine(plan: Any, bufs: dict[str, Any]) -> HurrayFormatError:
    s = plan.scalars
    count, stype = int(s["nparam"]), int(s["stype"])
    index = _first(_bad_scales(stype, _host(bufs["scales"]), count))
    if index is not None:
        return HurrayFormatError(
            f"scale entry {index} is zero, infinite or NaN", field="scales",
            offset=index * SCALE_WIDTH[stype],
            fix="every per-channel/per-block scale must be finite and non-zero.")
    zps = ref_u32_at(_host(bufs["zps"]), int(s["zoff"]), count, 4).view(np.int32)
    index = _first((zps < int(s["zlo"])) | (zps > int(s["zhi"])))
    value = None if index is None else int(zps[index])
    return HurrayFormatError(
        f"zero point entry {index} = {value} is outside the storage range "
        f"[{s['zlo']}, {s['zhi']}]", field="zero_points",
        offset=None if index is None else int(s["zoff"]) + 4 * index,
        fix="zero points must be representable in the storage type.")


def _lut(plan: Any, bufs: dict[str, Any]) -> HurrayFormatError:
    s = plan.scalars
    mode, count = int(s["mode"]), int(s["nparam"])
    if mode == MODE_NF4:
        words = ref_u32_at(_host(bufs["scales"]), 0, count, 4)
        index = _first(((words & 0x7F800000) == 0x7F800000) | (words > 0x80000000))
        return HurrayFormatError(
            f"NF4 absmax entry {index} is negative, infinite or NaN", field="scales",
            offset=None if index is None else 4 * index,
            fix="NF4 absmax values must be finite and >= 0.")
    if mode == MODE_MX:
        scales = _host(bufs["scales"])[:count]
        index = _first((scales == 0x00) | (scales == 0xFF))
        code = None if index is None else f"0x{int(scales[index]):02X}"
        return HurrayFormatError(
            f"MX scale byte {index} is {code}, a reserved float8_e8m0 code", field="scales",
            offset=index, fix="float8_e8m0 scales 0x00 and 0xFF are invalid (Hurray spec, "
                              "MXFP); rewrite the scale buffer.")
    return HurrayFormatError(
        "a float8_e8m0 element is 0x00 or 0xFF, which Hurray forbids", field="buffer",
        fix="float8_e8m0 data must avoid the reserved codes 0x00 and 0xFF.")


def explain_invalid(plan: Any, bufs: dict[str, Any]) -> HurrayFormatError:
    """The error describing the first invalid parameter of a flagged launch.

    Args:
        plan: the DequantPlan that was launched.
        bufs: the Buffers bound to each buffer parameter.

    Returns:
        A HurrayFormatError naming the buffer, entry and byte offset.
    """
    if plan.kernel.startswith("dequant_affine"):
        return _affine(plan, bufs)
    return _lut(plan, bufs)


def check_flag(err: Any, kernel: str, invalid: Callable[[], HurrayFormatError]) -> None:
    """Raise what a dequant kernel's ``err[0]`` flag reports (nothing when it is clear).

    Args:
        err: the flag Buffer the kernel wrote.
        kernel: the kernel's name, for the message.
        invalid: builds the error naming the invalid parameter (runs only when flagged).

    Raises:
        HurrayFormatError: an invalid scale, zero point or e8m0 code.
        DeviceError: a parameter index out of range (inconsistent launch scalars).
    """
    code = int(err.numpy(np.uint32)[0])
    if code == ERR_INVALID:
        raise invalid()
    if code:
        raise DeviceError(f"{kernel} computed a parameter index out of range",
                          fix="report this: the planner produced inconsistent scalars.")
