"""``hurray-gpu materialize PATH NAME --device D --dtype T --out OUT``: load one tensor, move it
to a device, dequantize and convert its layout there, and write the dense result."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from hurray_gpu.cli.common import dump_json, listing, show
from hurray_gpu.dialect.kernel import FLOAT_TYPES
from hurray_gpu.errors import HurrayGPUError, UnsupportedOpError
from hurray_gpu.io import open_file, save
from hurray_gpu.io.file_writer import atomic_output
from hurray_gpu.ops import materialize
from hurray_gpu.runtime.registry import resolve_device

__all__ = ["OUT_DTYPES", "add_parser", "materialize_tensor", "write_result"]

# Quantized tensors dequantize to a float type; unquantized ones keep their own type by default,
# and an integer tensor is written as itself (sub-byte integers widened in .npy).
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "int4",
              "uint4", "int2", "uint2")
OUT_DTYPES = (*FLOAT_TYPES, *INT_DTYPES)
OUT_SUFFIXES = (".npy", ".hrry")
# NumPy has no 2- or 4-bit integers: a .npy holds them widened to 8 bits (values unchanged).
_WIDENED = {"int4": np.int8, "int2": np.int8, "uint4": np.uint8, "uint2": np.uint8}


def add_parser(sub: Any) -> None:
    """Register ``materialize``."""
    p = sub.add_parser("materialize", help="dequantize/convert one tensor on a device, write it",
                       description=__doc__ + " A bfloat16 .npy holds the uint16 bit patterns "
                       "(NumPy has no bfloat16): view it with ml_dtypes.bfloat16.")
    p.add_argument("path", help="the .hrry file")
    p.add_argument("name", help="the tensor's name in the file")
    p.add_argument("--device", default=None, help="device spec (default: the best local one)")
    p.add_argument("--dtype", default=None,
                   help=f"one of {', '.join(OUT_DTYPES)} (default: float32 for a quantized "
                        "tensor, else the tensor's own type)")
    p.add_argument("--out", required=True, help="output path ending in .npy or .hrry "
                   "(written atomically: a failed write leaves an existing file as it was)")
    p.add_argument("--force", action="store_true", help="replace --out when it exists")
    p.add_argument("--json", action="store_true", help="print what was done as JSON")
    p.set_defaults(run=run)


def _check_dtype(dtype: str | None) -> None:
    if dtype is not None and dtype not in OUT_DTYPES:
        raise UnsupportedOpError(f"unsupported --dtype {dtype!r}",
                                 fix=f"use one of {', '.join(OUT_DTYPES)}.")


def _check_out(out: str, force: bool = True) -> None:
    if Path(out).suffix not in OUT_SUFFIXES:
        raise UnsupportedOpError(f"cannot write {out!r}: unknown output format",
                                 fix="end --out with .npy or .hrry.")
    if not force and Path(out).exists():
        raise HurrayGPUError(f"{out} exists", fix="pass --force to replace it, or choose "
                             "another --out.")


def _read(path: str, name: str) -> tuple[Any, Any]:
    """The tensor and, for block-paged tensors, the ``NAME.seq_lens`` KV entry (or None)."""
    with open_file(path) as f:
        if name not in f.names:
            raise HurrayGPUError(f"no tensor named {name!r} in {path} (it has: "
                                 f"{listing(f.names)})",
                                 fix=f"run `hurray-gpu inspect {path}` to list the names.")
        seq_lens = f.metadata.get(f"{name}.seq_lens")
        t = f.read(name)
    if t.is_composite and t.layout.composition_rule == 3:
        raise UnsupportedOpError(
            f"{name!r} is a group composite: its {len(t.members)} members are independent "
            "tensors with no single dense result", fix=f"materialize the members one by one "
            f"({name}/0 ... {name}/{len(t.members) - 1}).")
    return t, (list(seq_lens) if isinstance(seq_lens, list) else None)


def _default_dtype(t: Any) -> str | None:
    """float32 for quantized tensors and 4- to 8-bit floats (no NumPy type holds them), else
    None: the tensor's own type."""
    small_float = t.dtype.kind == "float" and t.dtype.bits <= 8
    return "float32" if t.descriptor.quantization is not None or small_float else None


def materialize_tensor(path: str, name: str, device: Any, dtype: str | None = None
                       ) -> tuple[Any, dict]:
    """Load ``name`` from ``path``, move it to ``device`` and materialize it there.

    Args:
        path: the .hrry file.
        name: the tensor's name.
        device: a device spec or None for the best local device.
        dtype: one of OUT_DTYPES, or None: float32 for a quantized tensor or a 4- to 8-bit
            float, else the tensor's own type.

    Returns:
        ``(host tensor, timings)``: the dense row-major result copied back to the host, and
        seconds per step (``load``, ``to_device``, ``materialize``, ``to_host``).

    Raises:
        HurrayFormatError: the file or tensor is malformed.
        BackendUnavailableError: the device cannot be opened.
        UnsupportedOpError: the dtype, layout or quantization cannot be materialized here.
    """
    _check_dtype(dtype)
    dev = resolve_device(device)
    steps: dict[str, Any] = {"device": dev.spec}
    start = time.perf_counter()
    t, seq_lens = _read(path, name)
    if dtype is None:
        dtype = _default_dtype(t)
    steps["load_s"] = time.perf_counter() - start
    start = time.perf_counter()
    on_dev = t.to(dev)
    steps["to_device_s"] = time.perf_counter() - start
    start = time.perf_counter()
    result = materialize(on_dev, dtype, seq_lens=seq_lens)
    dev.synchronize()
    steps["materialize_s"] = time.perf_counter() - start
    start = time.perf_counter()
    host = result.to("cpu")
    steps["to_host_s"] = time.perf_counter() - start
    return host, steps


def write_result(host: Any, name: str, out: str, force: bool = True) -> str:
    """Write a host tensor to ``out`` (.npy or .hrry) atomically; returns a note about the
    encoding.

    Raises:
        UnsupportedOpError: ``out`` has another suffix.
        HurrayGPUError: ``out`` exists and ``force`` is False.
        OSError: the file cannot be written.
    """
    _check_out(out, force)
    if Path(out).suffix == ".hrry":
        save(out, {name: host})
        return f"{host.dtype.name} tensor {name!r} in a .hrry file"
    arr = host.numpy()
    name_ = host.dtype.name
    if name_ == "bfloat16":
        arr, note = arr.view(np.uint16), ("bfloat16 stored as uint16 bit patterns (view with "
                                          "ml_dtypes.bfloat16)")
    elif name_ in _WIDENED:
        arr = arr.astype(_WIDENED[name_])
        note = f"{name_} values widened to {arr.dtype} (NumPy has no {name_})"
    else:
        note = f"{arr.dtype} array"
    with atomic_output(out) as handle:
        np.save(handle, arr)
    return note


def run(args: argparse.Namespace) -> int:
    """Materialize and write; prints shape, device and timings."""
    _check_dtype(args.dtype)
    _check_out(args.out, args.force)  # before the work, and again before the write
    host, steps = materialize_tensor(args.path, args.name, args.device, args.dtype)
    note = write_result(host, args.name, args.out, args.force)
    info = {"name": args.name, "shape": list(host.shape), "dtype": host.dtype.name,
            "out": args.out, "encoding": note, **steps}
    if args.json:
        print(dump_json(info))
    else:
        timing = ", ".join(f"{k[:-2]} {v * 1e3:.1f} ms" for k, v in steps.items()
                           if k.endswith("_s"))
        show(f"{args.name}: {host.dtype.name} {list(host.shape)} materialized on "
             f"{steps['device']} -> {args.out} ({note}); {timing}")
    return 0
