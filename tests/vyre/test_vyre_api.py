"""Error classes, pickling, builder coercions and the inspector CLI."""

from __future__ import annotations

import pathlib
import pickle
import subprocess
import sys

import pytest

import vyre
from hurray_gpu.errors import HurrayGPUError
from tests.null.test_layers import cycles, graph
from vyre import (
    EncodeError,
    UnknownExtensionError,
    VersionMismatchError,
    WireFormatError,
    WireValidationError,
    ir,
)
from vyre import builder as b
from vyre.__main__ import main
from vyre.inspect import inspect_blob

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / "vyre"


@pytest.mark.parametrize("err", [
    WireValidationError("TruncatedPayload: x. Fix: y."),
    VersionMismatchError(6, 9),
    EncodeError("Fix: workgroup_size[0] is 0."),
    UnknownExtensionError("acme.k", "node"),
])
def test_errors_pickle_and_subclass(err: WireFormatError) -> None:
    assert isinstance(err, HurrayGPUError) and isinstance(err, ValueError)
    assert isinstance(err, WireFormatError)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is type(err)
    assert str(again) == str(err)
    assert again.kind == err.kind and again.detail == err.detail
    assert "Fix:" in str(err)


def test_error_kinds() -> None:
    assert WireValidationError("TruncatedPayload: a").kind == "TruncatedPayload"
    assert WireValidationError("IntegrityMismatch: a").kind == "IntegrityMismatch"
    assert WireValidationError("invalid IR wire-format header. Fix: x").kind == "MagicMismatch"
    assert WireValidationError("truncated IR wire format. Fix: x").kind == "TruncatedPayload"
    assert VersionMismatchError(6, 3).kind == "UnknownSchemaVersion"
    assert issubclass(UnknownExtensionError, WireValidationError)
    assert UnknownExtensionError("k").kind == "UnknownExtension"


def test_package_exports() -> None:
    for name in ("from_wire", "to_wire", "Program", "BufferDecl", "Binary", "Let", "Scalar",
                 "WireFormatError", "builder", "OpaqueExpr", "OpaqueNode"):
        assert hasattr(vyre, name), name


def test_the_ir_does_not_depend_on_the_codec_and_vyre_has_no_import_cycles() -> None:
    """tests/null/test_layers.py checks the whole tree; this keeps vyre's part of it visible.

    The codec (vyre.wire) builds and reads the IR, so the IR modules must not import it, not
    even lazily inside a method or for type checking.
    """
    every = graph()
    for module in ("vyre.ir", "vyre.ir_types"):
        assert [t for t in every[module] if t.startswith("vyre.")] in ([], ["vyre.ir_types"])
    found = [c for c in cycles(graph(runtime_only=True)) if any(m.startswith("vyre") for m in c)]
    assert found == []


def test_builder_coercions() -> None:
    assert b.expr(3) == ir.LitU32(3)
    assert b.expr(-3) == ir.LitI32(-3)
    assert b.expr(True) == ir.LitBool(True)
    assert b.expr(1.5) == ir.LitF32(0x3FC00000)
    with pytest.raises(ValueError):
        b.expr(1 << 40)
    with pytest.raises(TypeError):
        b.expr("x")  # type: ignore[arg-type]
    assert b.add(b.var("i"), 1) == ir.Binary(ir.BinOp.ADD, ir.Var("i"), ir.LitU32(1))
    assert b.lit_f32(-2.25).value == -2.25
    raw = b.program([], [b.return_()], wrapped=False)
    assert raw.entry == (ir.Return(),)
    regions = b.program([], [b.region("g", [])])
    assert regions.entry == (ir.Region("g", None, ()),)
    assert b.program([], []).entry == (ir.Region("vyre.program.root", None, ()),)
    assert b.output("o", 0, b.U32, 2).is_output and b.output("o", 0, b.U32, 2).pipeline_live_out
    assert b.read("r", 0, b.U32).kind == ir.MemoryKind.READONLY
    assert b.workgroup("w", 4, b.F32).kind == ir.MemoryKind.SHARED
    assert ir.forever((b.return_(),)).to == ir.LitU32(0xFFFFFFFF)


def test_inspect_report() -> None:
    text, ok = inspect_blob((GOLDEN / "k03_loop_sum.vir").read_bytes())
    assert ok
    assert "body blake3: 963206c65def5152985f5b7c18d3b5447c10d7b6277720777d8328ba7e50aa02 (ok)" in text
    assert "Region generator='vyre.program.root' source_region=none" in text
    assert "        Loop 'j' in u32(0)..load('a', var('i'))\n" in text
    assert "          Assign 'acc' = binop.ADD(var('acc'), var('j'))" in text
    bad, ok = inspect_blob((GOLDEN / "x09_bad_digest.vir").read_bytes())
    assert not ok and "MISMATCH" in bad and "IntegrityMismatch" in bad


def test_cli(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(GOLDEN / "v19_regions.vir")]) == 0
    out = capsys.readouterr().out
    assert "source_region='vyre-nn::flash_attention'" in out
    assert main(["inspect", str(GOLDEN / "x18_unknown_node_tag.vir")]) == 1
    assert main(["inspect", str(tmp_path / "missing.vir")]) == 2
    proc = subprocess.run(
        [sys.executable, "-m", "vyre", "inspect", str(GOLDEN / "v02_empty_wrapped.vir")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0 and "entry (1 top-level nodes):" in proc.stdout


def test_ir_is_immutable_and_list_fields_become_tuples() -> None:
    node = ir.If(b.lit_bool(True), [b.return_()], [])
    assert node == ir.If(b.lit_bool(True), (b.return_(),), ())
    assert hash(node) == hash(ir.If(b.lit_bool(True), (b.return_(),), ()))
    assert ir.Call("f", [b.lit_u32(1)]).args == (b.lit_u32(1),)
    program = ir.Program([b.read("a", 0, b.U32)], [node], [2, 1, 1])
    assert program.workgroup_size == (2, 1, 1) and isinstance(program.buffers, tuple)
    with pytest.raises(AttributeError):
        program.entry = ()  # type: ignore[misc]


def test_from_wire_accepts_buffer_types() -> None:
    blob = (GOLDEN / "k02_add_mul.vir").read_bytes()
    assert vyre.from_wire(bytearray(blob)) == vyre.from_wire(memoryview(blob))
