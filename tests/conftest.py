"""Suite-wide test settings.

Under CI (``CI=true``, which ci/test.sh sets) Hypothesis runs derandomized: the same examples
every run, so a CI result is reproducible. Local runs keep exploring new examples.

Every test runs under a watchdog: a test (setup, call and teardown) still running after
``HURRAY_GPU_TEST_TIMEOUT`` seconds (default 300; 0 turns it off) has every thread's stack
written to stderr and its process ended. A hang then fails the run with the stuck test named
(pytest-xdist reports the worker crashed while running it) instead of running CI into its time
limit with nothing to show. faulthandler's timer is a C thread: it fires even when the stuck
thread holds the GIL, where a Python timer thread (pytest-timeout's) would wait forever.
"""

from __future__ import annotations

import faulthandler
import os
import sys
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests._support import in_ci

settings.register_profile("ci", derandomize=True, print_blob=True)
if in_ci():
    settings.load_profile("ci")

_TIMEOUT = float(os.environ.get("HURRAY_GPU_TEST_TIMEOUT", "300"))
_stderr: list[int] = []  # a copy of the process's own stderr, taken while no capture holds it


def pytest_configure(config: pytest.Config) -> None:
    """Keep a descriptor of the real stderr: during a test pytest points fd 2 at a capture
    file, which a process ended by the watchdog would take with it."""
    if _TIMEOUT > 0 and not _stderr:
        _stderr.append(os.dup(sys.__stderr__.fileno()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Arm the watchdog for one test's setup, call and teardown."""
    if _TIMEOUT <= 0:
        yield
        return
    faulthandler.dump_traceback_later(_TIMEOUT, exit=True, file=_stderr[0])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
