"""Registry of Opaque expression/node extensions: kind -> (decoder, encoder).

Unregistered kinds raise UnknownExtensionError unless preserved verbatim as OpaqueExpr/Node.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vyre.errors import EncodeError, UnknownExtensionError, WireFormatError, WireValidationError
from vyre.ir import Expr, Node, OpaqueExpr, OpaqueNode


@dataclass(frozen=True)
class Extension:
    """One registered extension kind.

    Attributes:
        kind: the extension_kind string carried on the wire.
        surface: ``"expr"`` or ``"node"``.
        decode: payload bytes -> IR object (an Expr or Node); may raise to reject a payload.
        encode: IR object -> payload bytes (must reproduce the decoded payload exactly).
    """

    kind: str
    surface: str
    decode: Callable[[bytes], Any]
    encode: Callable[[Any], bytes]


class ExtensionRegistry:
    """Thread-safe map of extension kinds for both surfaces."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], Extension] = {}

    def register(
        self,
        surface: str,
        kind: str,
        *,
        decode: Callable[[bytes], Any],
        encode: Callable[[Any], bytes],
        replace: bool = False,
    ) -> Extension:
        """Register ``kind`` on ``surface`` (``"expr"`` or ``"node"``).

        Args:
            surface: ``"expr"`` or ``"node"``.
            kind: the non-empty extension kind string.
            decode: payload -> object.
            encode: object -> payload.
            replace: allow replacing an existing registration.

        Returns:
            The registered :class:`Extension`.

        Raises:
            ValueError: bad surface, empty kind, or a duplicate without ``replace``.
        """
        if surface not in ("expr", "node"):
            raise ValueError(f"surface must be 'expr' or 'node', got {surface!r}")
        if not kind:
            raise ValueError("extension kind must be a non-empty string")
        entry = Extension(kind, surface, decode, encode)
        with self._lock:
            if (surface, kind) in self._entries and not replace:
                raise ValueError(f"extension {surface} kind {kind!r} is already registered")
            self._entries[(surface, kind)] = entry
        return entry

    def unregister(self, surface: str, kind: str) -> None:
        """Remove a registration if present."""
        with self._lock:
            self._entries.pop((surface, kind), None)

    def lookup(self, surface: str, kind: str) -> Extension | None:
        """The registration for ``kind`` on ``surface``, or None."""
        return self._entries.get((surface, kind))

    def copy(self) -> ExtensionRegistry:
        """An independent copy (useful for tests)."""
        other = ExtensionRegistry()
        other._entries = dict(self._entries)
        return other


DEFAULT_REGISTRY = ExtensionRegistry()


def register_expr_extension(
    kind: str, *, decode: Callable[[bytes], Any], encode: Callable[[Any], bytes],
    registry: ExtensionRegistry | None = None,
) -> Extension:
    """Register an Opaque expression kind in ``registry`` (default: the global one)."""
    return (registry or DEFAULT_REGISTRY).register("expr", kind, decode=decode, encode=encode)


def register_node_extension(
    kind: str, *, decode: Callable[[bytes], Any], encode: Callable[[Any], bytes],
    registry: ExtensionRegistry | None = None,
) -> Extension:
    """Register an Opaque statement kind in ``registry`` (default: the global one)."""
    return (registry or DEFAULT_REGISTRY).register("node", kind, decode=decode, encode=encode)


def decode_opaque(
    registry: ExtensionRegistry, surface: str, kind: str, payload: bytes, preserve: bool
) -> Expr | Node:
    """Resolve an Opaque payload read from the wire.

    Raises:
        UnknownExtensionError: ``kind`` is unregistered and ``preserve`` is False.
        WireValidationError: the extension's decoder rejected the payload.
    """
    entry = registry.lookup(surface, kind)
    if entry is None:
        if not preserve:
            raise UnknownExtensionError(kind, surface)
        return OpaqueExpr(kind, payload) if surface == "expr" else OpaqueNode(kind, payload)
    try:
        value = entry.decode(payload)
    except WireFormatError:
        raise
    except Exception as exc:  # noqa: BLE001 - any extension failure is a decode error
        raise WireValidationError(
            f"Fix: extension {surface} `{kind}` rejected its payload: {exc}"
        ) from exc
    wanted = Expr if surface == "expr" else Node
    if not isinstance(value, wanted):
        raise WireValidationError(
            f"Fix: extension {surface} `{kind}` decoder returned {type(value).__name__}, not "
            f"an IR {wanted.__name__}."
        )
    return value


def encode_extension(registry: ExtensionRegistry, surface: str, obj: Any) -> tuple[str, bytes]:
    """The (kind, payload) to write for an extension object.

    Raises:
        EncodeError: no encoder is registered for the object's kind or it returned non-bytes.
    """
    if isinstance(obj, (OpaqueExpr, OpaqueNode)):
        return obj.kind, bytes(obj.payload)
    kind = getattr(obj, "kind", "")
    entry = registry.lookup(surface, kind)
    if entry is None:
        raise EncodeError(
            f"Fix: no encoder registered for extension {surface} kind `{kind}`; register it "
            "with vyre.extensions before calling to_wire()."
        )
    try:
        payload = entry.encode(obj)
    except WireFormatError:
        raise
    except Exception as exc:  # noqa: BLE001 - surface extension bugs as encode errors
        raise EncodeError(f"Fix: extension {surface} `{kind}` failed to encode: {exc}") from exc
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise EncodeError(f"Fix: extension {surface} `{kind}` encoder must return bytes.")
    return kind, bytes(payload)
