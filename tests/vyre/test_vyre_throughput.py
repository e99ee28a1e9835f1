"""Decode/encode throughput on the largest golden blob (reported, never asserted)."""

from __future__ import annotations

import pathlib
import time

from vyre import from_wire, to_wire

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / "vyre"


def measure(blob: bytes, seconds: float = 0.3) -> tuple[float, float]:
    """(decode MB/s, encode MB/s) for ``blob``."""
    program = from_wire(blob)
    rates = []
    for action in (lambda: from_wire(blob), lambda: to_wire(program)):
        count, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            action()
            count += 1
        rates.append(count * len(blob) / elapsed / 1e6)
    return rates[0], rates[1]


def test_report_throughput_on_largest_golden_blob(capsys) -> None:
    path = max(GOLDEN.glob("[kv]*.vir"), key=lambda p: p.stat().st_size)
    blob = path.read_bytes()
    decode, encode = measure(blob)
    with capsys.disabled():
        print(f"\nvyre wire throughput on {path.name} ({len(blob)} B): "
              f"decode {decode:.2f} MB/s, encode {encode:.2f} MB/s")
    assert to_wire(from_wire(blob)) == blob
