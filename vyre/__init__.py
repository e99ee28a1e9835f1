"""vyre: the VIR0 program IR, its wire codec and tools (byte-compatible with vyre 0.7.2).

``from_wire``/``to_wire`` convert bytes and :class:`Program`; :mod:`vyre.builder` writes IR.
"""

from __future__ import annotations

from vyre import builder, programs, reference
from vyre.errors import (
    EncodeError,
    UnknownExtensionError,
    VersionMismatchError,
    WireFormatError,
    WireValidationError,
)
from vyre.execute import run, run_bytes
from vyre.extensions import (
    DEFAULT_REGISTRY,
    ExtensionRegistry,
    register_expr_extension,
    register_node_extension,
)
from vyre.ir import *  # noqa: F403 - the IR types are the package's public surface
from vyre.ir import __all__ as _ir_all
from vyre.kernel import Kernel
from vyre.kernel import compile as compile  # noqa: PLC0414 - public, kept out of __all__
from vyre.lower import Lowered, TrapError, UnsupportedOpError, lower
from vyre.lower.ops import LoopBudgetError
from vyre.validate import Diagnostic, ValidationError, ValidationOptions, validate
from vyre.wire.decode import from_wire
from vyre.wire.encode import to_wire
from vyre.wire.fingerprint import fingerprint

# vyre.compile is public but stays out of __all__: a star import must not shadow the builtin.
__all__ = [
    *_ir_all,
    "DEFAULT_REGISTRY", "EncodeError", "Kernel", "LoopBudgetError", "Lowered", "TrapError",
    "UnsupportedOpError", "lower", "run", "run_bytes", "ExtensionRegistry", "UnknownExtensionError",
    "Diagnostic", "ValidationError", "ValidationOptions", "VersionMismatchError",
    "WireFormatError", "WireValidationError", "builder", "fingerprint", "programs", "reference",
    "validate",
    "from_wire", "register_expr_extension", "register_node_extension", "to_wire",
]
