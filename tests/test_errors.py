"""The error hierarchy: Fix: hints, typed bases, and pickling."""

from __future__ import annotations

import io
import pickle

import pytest

from hurray_gpu import errors as E


@pytest.mark.parametrize(
    "exc",
    [
        E.HurrayGPUError("boom", fix="stop the boom."),
        E.HurrayFormatError("bad rank 65", field="rank", offset=4, fix="use rank <= 64."),
        E.BackendUnavailableError("no metal backend (device_tag 0x03)"),
        E.DeviceError("clEnqueueReadBuffer failed"),
        E.UnsupportedOpError("float128 has no NumPy dtype", fix="use float64."),
        E.OutOfMemoryError(1 << 30, 1 << 20, 1 << 31),
        E.CompileError("nvrtc failed", "int x", ("-arch=sm_90",), "error: x"),
        E.BoundsViolation("fill_u32", "dst", "after", 64, 64),
        E.BoundsViolation("k", "src", "before", -4, 8, fix="fix the index."),
        E.ConversionError("offset past the end", source="m.gguf", tensor="w", source_type="Q4_0",
                          offset=96, fix="export it again."),
        E.UnsupportedConversionError("a K-quant", source="m.gguf", tensor="w",
                                     source_type="Q4_K", fix="re-quantize it."),
        E.ArgumentTypeError("dequantize() takes a Tensor", fix="wrap it with hg.from_numpy."),
        E.CopyRequiredError("copy=False of packed data", fix="drop copy=False."),
        E.AmbiguousTruthError("bool() of 12 elements", fix="use np.asarray(t).any()."),
        E.TensorIndexError("index 9 is out of bounds", fix="use an index in [-3, 3)."),
        E.TensorNotFoundError("wieght", "m.hrry", ["weight", "bias"]),
        E.MissingFileError("no such file: m.hrry", fix="check the path."),
    ],
)
def test_every_error_has_a_fix_and_pickles(exc: E.HurrayGPUError) -> None:
    assert "Fix:" in str(exc)
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is type(exc)
    assert str(clone) == str(exc)


def test_format_error_names_field_offset_and_is_a_value_error() -> None:
    exc = E.HurrayFormatError("rank 65 exceeds 64", field="rank", offset=4, fix="use rank <= 64.")
    assert isinstance(exc, ValueError)
    assert "field rank" in str(exc) and "byte offset 4" in str(exc)
    assert str(exc).endswith("Fix: use rank <= 64.")
    assert (exc.field, exc.offset) == ("rank", 4)


def test_out_of_memory_keeps_numbers() -> None:
    exc = pickle.loads(pickle.dumps(E.OutOfMemoryError(10, 5, 100)))
    assert (exc.size, exc.free, exc.total) == (10, 5, 100)
    assert isinstance(exc, MemoryError)


def test_compile_error_dump_numbers_source() -> None:
    exc = E.CompileError("failed", "a;\nb;", (), "log line")
    out = io.StringIO()
    exc.dump(out)
    assert out.getvalue() == "    1 a;\n    2 b;\nlog line\n"


def test_format_error_shifted_moves_only_the_offset() -> None:
    exc = E.HurrayFormatError("bad tag 0x47", field="type_tag", offset=14, fix="use a tag.")
    moved = exc.shifted(100)
    assert (moved.field, moved.offset) == ("type_tag", 114)
    assert str(moved) == "bad tag 0x47 (field type_tag, byte offset 114) Fix: use a tag."


def test_bounds_violation_keeps_kernel_buffer_side_and_offset() -> None:
    exc = pickle.loads(pickle.dumps(E.BoundsViolation("fill_u32", "dst", "before", -4, 64)))
    assert (exc.kernel, exc.buffer, exc.side, exc.offset, exc.nbytes) == (
        "fill_u32", "dst", "before", -4, 64)
    assert isinstance(exc, E.HurrayGPUError) and isinstance(exc, RuntimeError)
    assert "kernel fill_u32" in str(exc) and "buffer dst" in str(exc)
    assert "byte offset -4" in str(exc) and "Fix:" in str(exc)


def test_new_errors_keep_their_python_bases() -> None:
    missing = E.TensorNotFoundError("wieght", "m.hrry", ["weight", "bias"])
    assert isinstance(missing, KeyError) and str(missing).startswith("no tensor named 'wieght'")
    assert str(missing).endswith("Fix: did you mean 'weight'? (2 names in all: f.keys() "
                                 "lists them).")
    assert isinstance(E.TensorIndexError("x", fix="y."), IndexError)
    assert isinstance(E.ArgumentTypeError("x", fix="y."), TypeError)
    assert isinstance(E.CopyRequiredError("x", fix="y."), ValueError)
    assert isinstance(E.AmbiguousTruthError("x", fix="y."), ValueError)
