"""A failed read or write on the command line gets a hint that fits its errno."""

from __future__ import annotations

import errno
import os

import pytest

from hurray_gpu.cli import _fix_for_os_error, main


@pytest.mark.parametrize(("code", "expected"), [
    (errno.ENOENT, "its directory exists"),
    (errno.EACCES, "an output's directory writable"),
    (errno.ENOSPC, "free disk space"),
    (errno.EROFS, "writable file system"),
    (errno.EISDIR, "is a directory"),
])
def test_hint_follows_errno(code: int, expected: str) -> None:
    line = _fix_for_os_error(OSError(code, os.strerror(code), "out/w.npy"))
    assert line.startswith("error: ")
    assert line.count("Fix:") == 1
    assert expected in line.split("Fix:", 1)[1]
    assert "out/w.npy" in line


def test_write_into_a_missing_directory(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    import hurray_gpu as hg

    src = tmp_path / "w.hrry"
    hg.save(src, {"w": np.arange(4, dtype=np.float32)})
    out = tmp_path / "missing" / "w.npy"
    code = main(["materialize", str(src), "w", "--device", "reference", "--dtype", "float32",
                 "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 1, err
    assert err.count("Fix:") == 1
    assert "for an output, that its directory exists" in err
    assert "readable" not in err.split("Fix:", 1)[1]
