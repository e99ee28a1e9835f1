"""Extension registry: registered kinds round-trip as typed objects; unknown kinds are errors."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar

import pytest

from vyre import (
    EncodeError,
    ExtensionRegistry,
    UnknownExtensionError,
    WireValidationError,
    from_wire,
    ir,
    to_wire,
)
from vyre import builder as b


@dataclass(frozen=True)
class Clamp(ir.ExtensionExpr):
    kind: ClassVar[str] = "acme.clamp"
    low: int
    high: int


@dataclass(frozen=True)
class Fence(ir.ExtensionNode):
    kind: ClassVar[str] = "acme.fence"
    level: int


def _decode_clamp(payload: bytes) -> Clamp:
    if payload[:2] == b"\xde\xad":
        raise ValueError("payload starts DE AD")
    low, high = struct.unpack("<II", payload)
    return Clamp(low, high)


@pytest.fixture()
def registry() -> ExtensionRegistry:
    reg = ExtensionRegistry()
    reg.register("expr", "acme.clamp", decode=_decode_clamp,
                 encode=lambda c: struct.pack("<II", c.low, c.high))
    reg.register("node", "acme.fence", decode=lambda p: Fence(p[0]),
                 encode=lambda f: bytes([f.level]))
    return reg


def test_registered_extensions_round_trip(registry: ExtensionRegistry) -> None:
    program = b.program([], [b.let("c", Clamp(1, 9)), Fence(3)], wrapped=False)
    blob = to_wire(program, registry=registry)
    assert b"\x0aacme.fence" in blob  # top-level opaque op id is the kind
    decoded = from_wire(blob, registry=registry)
    assert decoded == program
    assert to_wire(decoded, registry=registry) == blob
    with pytest.raises(UnknownExtensionError) as info:
        from_wire(blob)
    assert info.value.extension_kind == "acme.clamp"
    preserved = from_wire(blob, preserve_unknown=True)
    assert preserved.entry[0].value == ir.OpaqueExpr("acme.clamp", struct.pack("<II", 1, 9))
    assert preserved.entry[1] == ir.OpaqueNode("acme.fence", b"\x03")
    assert to_wire(preserved) == blob


def test_unknown_node_kind_message() -> None:
    blob = to_wire(b.program([], [ir.OpaqueNode("acme.x", b"")]))
    with pytest.raises(UnknownExtensionError) as info:
        from_wire(blob)
    assert info.value.surface == "node"
    assert info.value.detail == (
        "Fix: no OpaqueNodeResolver registered for extension kind `acme.x`. Link the crate that "
        "owns this extension and ensure it submits `inventory::submit! { OpaqueNodeResolver "
        "{ kind, deserialize } }`."
    )


def test_decoder_errors_become_wire_errors(registry: ExtensionRegistry) -> None:
    blob = to_wire(b.program([], [b.let("c", ir.OpaqueExpr("acme.clamp", b"\xde\xad\0\0"))]))
    with pytest.raises(WireValidationError, match="payload starts DE AD"):
        from_wire(blob, registry=registry)
    short = to_wire(b.program([], [b.let("c", ir.OpaqueExpr("acme.clamp", b"\x01"))]))
    with pytest.raises(WireValidationError, match="rejected its payload"):
        from_wire(short, registry=registry)


def test_encoder_needs_registration() -> None:
    with pytest.raises(EncodeError, match="no encoder registered"):
        to_wire(b.program([], [b.let("c", Clamp(0, 1))]), registry=ExtensionRegistry())


def test_registry_rules(registry: ExtensionRegistry) -> None:
    with pytest.raises(ValueError, match="already registered"):
        registry.register("expr", "acme.clamp", decode=bytes, encode=bytes)
    with pytest.raises(ValueError):
        registry.register("type", "x", decode=bytes, encode=bytes)
    registry.unregister("expr", "acme.clamp")
    assert registry.lookup("expr", "acme.clamp") is None


def test_empty_payload_and_payload_cap() -> None:
    empty = b.program([], [b.let("e", ir.OpaqueExpr("k", b""))])
    assert from_wire(to_wire(empty), preserve_unknown=True) == empty
    at_cap = b.program([], [ir.OpaqueNode("k", bytes(4 * 1024 * 1024 - 64))], wrapped=False)
    assert from_wire(to_wire(at_cap), preserve_unknown=True) == at_cap
