"""Golden descriptor vectors: decode to the manifest's properties and re-encode identically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hurray_gpu.format.descriptor import (
    BufferHandle,
    Morton,
    RowMajor,
    Strided,
    TensorDescriptor,
    decode_descriptor,
    decode_descriptor_prefix,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "hurray"
MANIFEST = json.loads((GOLDEN / "manifest.json").read_text())
ENTRIES = MANIFEST["descriptors"]


def test_manifest_lists_every_vector() -> None:
    assert MANIFEST["format_version"] == "1.0"
    listed = {e["file"] for e in ENTRIES}
    on_disk = {f"descriptors/{p.name}" for p in (GOLDEN / "descriptors").glob("*.bin")}
    assert listed == on_disk
    assert len(listed) == 7


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_golden_vector(entry: dict) -> None:
    data = (GOLDEN / entry["file"]).read_bytes()
    exp = entry["expect"]
    d = decode_descriptor(data)
    assert d.version_major == exp["version_major"]
    assert d.version_minor == exp["version_minor"]
    assert d.type_tag == exp["element_type_tag"]
    assert d.dtype.name == exp["element_type"]
    assert list(d.shape) == exp["shape"]
    assert d.byte_offset == exp["byte_offset"]
    assert d.layout_tag == exp["layout_tag"]
    assert [b.byte_size for b in d.buffers] == exp["buffer_byte_sizes"]
    assert (d.quantization is not None) == exp["has_quantization"]
    assert (d.shard is not None) == exp["has_shard"]
    assert d.descriptor_length == len(data)
    # Every public vector is CPU, ProducerSynced, STANDARD, alignment 64.
    assert all(b == BufferHandle(b.byte_size, 64, 0, 0, 0) for b in d.buffers)
    assert d.encode() == data
    again, used = decode_descriptor_prefix(data + b"\xAA" * 7, 0)
    assert (again, used) == (d, len(data))


def test_golden_layout_fields() -> None:
    by_name = {Path(e["file"]).stem: e for e in ENTRIES}
    strided = decode_descriptor((GOLDEN / by_name["strided_f32_3x4"]["file"]).read_bytes())
    assert strided.layout == Strided((4, 1))
    morton = decode_descriptor((GOLDEN / by_name["morton_f32_4x4"]["file"]).read_bytes())
    assert morton.layout == Morton((2, 2))
    assert morton.required_buffer_sizes() == (64,)


@pytest.mark.parametrize(
    ("stem", "dtype", "shape"),
    [("row_major_f32_3x4", "float32", (3, 4)), ("row_major_int8_5", "int8", (5,)),
     ("row_major_f16_2x2", "float16", (2, 2)), ("bool_packed_10", "bool", (10,)),
     ("empty_f32_0x4", "float32", (0, 4))],
)
def test_dense_constructor_reproduces_golden_bytes(stem: str, dtype: str, shape: tuple) -> None:
    data = (GOLDEN / "descriptors" / f"{stem}.bin").read_bytes()
    built = TensorDescriptor.dense(dtype, shape)
    assert built.layout == RowMajor()
    assert built.encode() == data
    assert built == decode_descriptor(data)
