"""A short run of the live-server fuzz harness (fuzz/net_server.py): mutated sessions get
only well-formed answers, no hang, no crashed thread, bounded memory, and a good client is
served throughout."""

from __future__ import annotations

import threading

import pytest

from fuzz import net_server


def test_live_server_fuzz_smoke() -> None:
    assert net_server.run(150, seed=20) == 150


def test_the_harness_catches_a_crashing_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from hurray_gpu.net import server

    def broken(self: object, sid: int, msg: object) -> None:
        raise IndexError("injected")

    monkeypatch.setattr(server._Session, "_put", broken)
    hook = threading.excepthook
    try:
        with pytest.raises(AssertionError, match="crashed a server thread.*injected"):
            net_server.run(40, seed=20)
    finally:
        threading.excepthook = hook
