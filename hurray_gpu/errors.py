"""The one error hierarchy of hurray_gpu.

Every message says what went wrong and ends with a ``Fix:`` hint. Every exception pickles
(``__reduce__`` re-creates it from its constructor arguments).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any


def _with_fix(message: str, fix: str | None) -> str:
    message = message.rstrip()
    return message if "Fix:" in message or not fix else f"{message} Fix: {fix}"


class HurrayGPUError(Exception):
    """Base class of every error raised by hurray_gpu.

    A subclass sets ``default_fix`` only when one hint fits every raise of it; otherwise each
    raise passes ``fix=`` saying what the caller should change. There is deliberately no
    generic fallback: ``tests/null/test_error_fix_hints.py`` walks the sources and fails on a
    raise that would end without a ``Fix:``.
    """

    default_fix: str | None = None

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self._args: tuple[Any, ...] = (message,)
        self._kwargs: dict[str, Any] = {"fix": fix}
        super().__init__(_with_fix(message, fix or self.default_fix))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._args, self._kwargs))


def _rebuild(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Exception:
    return cls(*args, **kwargs)


class HurrayFormatError(HurrayGPUError, ValueError):
    """A malformed Hurray descriptor, raw stream or ``.hrry`` file.

    Args:
        message: what is wrong, naming the field and the bad value.
        field: the field name (e.g. ``"rank"``), or None.
        offset: the byte offset of the field in the input, or None.
        fix: the ``Fix:`` hint.
    """

    default_fix = ("the input is not valid Hurray: re-create it with a conforming writer "
                   "(hurray_gpu.save, StreamWriter or TensorDescriptor.encode) instead of "
                   "patching "
                   "its bytes.")

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        offset: int | None = None,
        fix: str | None = None,
    ) -> None:
        self.field = field
        self.offset = offset
        where = []
        if field is not None:
            where.append(f"field {field}")
        if offset is not None:
            where.append(f"byte offset {offset}")
        text = f"{message} ({', '.join(where)})" if where else message
        super().__init__(text, fix=fix)
        self._args = (message,)
        self._kwargs = {"field": field, "offset": offset, "fix": fix}

    def shifted(self, delta: int) -> HurrayFormatError:
        """The same error with its byte offset moved by ``delta``.

        Containers use it to report a descriptor's error at its position in the enclosing
        stream or file.
        """
        message, fix = self._args[0], self._kwargs.get("fix")
        offset = None if self.offset is None else self.offset + delta
        return type(self)(message, field=self.field, offset=offset, fix=fix)


class BackendUnavailableError(HurrayGPUError, RuntimeError):
    """A device tag or backend that cannot be opened here."""

    default_fix = "run `hurray-gpu devices` to see what is available."


class DeviceError(HurrayGPUError, RuntimeError):
    """A driver call failed; raised only by each backend's ``check()``."""

    default_fix = ("run `hurray-gpu devices` to check the driver, and retry on device='cpu' to "
                   "tell a driver fault from a bad argument.")


class UnsupportedOpError(HurrayGPUError, NotImplementedError):
    """An operation the chosen device or format does not support."""


class OutOfMemoryError(HurrayGPUError, MemoryError):
    """A device allocation failed after one retry with the pool emptied."""

    def __init__(self, size: int, free: int, total: int, *, fix: str | None = None) -> None:
        self.size, self.free, self.total = size, free, total
        super().__init__(
            f"out of device memory allocating {size} bytes ({free} free of {total}).",
            fix=fix or "free tensors, use a smaller batch, or pick a device with more memory.",
        )
        self._args = (size, free, total)
        self._kwargs = {"fix": fix}


class BoundsViolation(HurrayGPUError, RuntimeError):
    """A kernel wrote outside a buffer: a debug canary (``HURRAY_GPU_DEBUG_BOUNDS=1``) changed.

    Args:
        kernel: the kernel that ran last on the buffer.
        buffer: the kernel parameter (or a description) naming the buffer.
        side: ``"before"`` or ``"after"``: which canary was overwritten.
        offset: the first corrupted byte, relative to the buffer's first byte (negative
            before it; ``nbytes`` or more after it).
        nbytes: the buffer's size in bytes.
        fix: the ``Fix:`` hint.
    """

    def __init__(self, kernel: str, buffer: str, side: str, offset: int, nbytes: int, *,
                 fix: str | None = None) -> None:
        self.kernel, self.buffer, self.side = kernel, buffer, side
        self.offset, self.nbytes = offset, nbytes
        super().__init__(
            f"kernel {kernel} wrote outside buffer {buffer} ({nbytes} bytes): the canary "
            f"{side} it is corrupted, first at byte offset {offset}.",
            fix=fix or f"check the index arithmetic and extents() of {kernel} against the "
                       "buffer sizes; every index must stay in [0, count).",
        )
        self._args = (kernel, buffer, side, offset, nbytes)
        self._kwargs = {"fix": fix}


class CompileError(HurrayGPUError, RuntimeError):
    """A kernel failed to compile; ``dump(file)`` writes the numbered source."""

    def __init__(
        self, message: str, source: str = "", options: tuple[str, ...] = (), log: str = "",
        *, fix: str | None = None,
    ) -> None:
        self.source, self.options, self.log = source, tuple(options), log
        super().__init__(
            f"{message}\n{log}".rstrip(),
            fix=fix or "call err.dump(sys.stderr) to see the numbered source and report it.",
        )
        self._args = (message, source, self.options, log)
        self._kwargs = {"fix": fix}

    def dump(self, file: Any) -> None:
        """Write the source with line numbers, then the compiler log, to ``file``."""
        for number, line in enumerate(self.source.splitlines(), 1):
            file.write(f"{number:5d} {line}\n")
        if self.log:
            file.write(self.log.rstrip() + "\n")


class ProtocolError(HurrayGPUError):
    """A network interchange message that breaks the protocol (docs/interchange.md).

    Args:
        message: what is wrong, naming the message type and field.
        code: the protocol error code (``hurray_gpu.format.protocol.ErrorCode``) a peer
            answers with in its ERROR message.
        fix: the ``Fix:`` hint.
    """

    def __init__(self, message: str, *, code: int = 6, fix: str | None = None) -> None:
        self.code = int(code)
        super().__init__(message, fix=fix)
        self._kwargs = {"code": self.code, "fix": fix}


class RemoteError(ProtocolError):
    """The peer answered with an ERROR message; ``code`` and ``peer_message`` are its fields."""

    default_fix = ("act on the peer's message above (check the tensor key, the layouts, the "
                   "device and the message sizes you asked for).")

    def __init__(self, code: int, peer_message: str, *, fix: str | None = None) -> None:
        self.peer_message = peer_message
        super().__init__(f"the peer answered ERROR {code}: {peer_message}", code=code, fix=fix)
        self._args, self._kwargs = (code, peer_message), {"fix": fix}


class TransportError(HurrayGPUError, ConnectionError):
    """A network interchange connection broke: the peer closed it, a timeout passed, or the URL
    is unusable (docs/interchange.md)."""


class ConversionError(HurrayGPUError, ValueError):
    """A source checkpoint (GGUF, safetensors, PyTorch, NumPy) that cannot be converted to
    Hurray: malformed or hostile structure (lengths, offsets, sizes that do not fit the file).

    Args:
        message: what is wrong.
        source: the source file's path.
        tensor: the tensor's name, or None for file-level problems.
        source_type: the tensor's type as the source names it (``"Q4_K"``, ``"BF16"``), or None.
        offset: the byte offset in the source file, or None.
        fix: the ``Fix:`` hint.
    """

    def __init__(self, message: str, *, source: str, tensor: str | None = None,
                 source_type: str | None = None, offset: int | None = None,
                 fix: str | None = None) -> None:
        self.source, self.tensor, self.source_type, self.offset = source, tensor, source_type, offset
        where = [f"tensor {tensor!r}"] if tensor is not None else []
        where += [f"type {source_type}"] if source_type is not None else []
        where += [f"byte offset {offset}"] if offset is not None else []
        text = f"{source}: {', '.join(where) + ': ' if where else ''}{message}"
        super().__init__(text, fix=fix)
        self._args = (message,)
        self._kwargs = {"source": source, "tensor": tensor, "source_type": source_type,
                        "offset": offset, "fix": fix}


class UnsupportedConversionError(ConversionError):
    """A well-formed source tensor whose type (or shape) this converter does not map to Hurray:
    the message names the tensor, its type and why."""


class ArgumentTypeError(HurrayGPUError, TypeError):
    """An argument of the wrong kind: a NumPy array where a Tensor is needed, a torch tensor
    where an array is, a memory class where a dtype goes; ``except TypeError`` catches it."""


class CopyRequiredError(HurrayGPUError, ValueError):
    """``copy=False`` was asked for but the result needs a copy (NumPy's ``__array__``
    protocol raises ValueError then); ``except ValueError`` catches it."""


class AmbiguousTruthError(HurrayGPUError, ValueError):
    """``bool()`` of a tensor of more than one element, or of none: NumPy raises ValueError
    then, and so ``except ValueError`` catches it."""


class MissingFileError(HurrayGPUError, FileNotFoundError):
    """A file to read does not exist; a FileNotFoundError (an OSError), so ``except OSError``
    keeps working."""


class UnreadableFileError(HurrayGPUError, OSError):
    """A file to read exists but cannot be opened (permissions, a directory...); an OSError,
    so ``except OSError`` keeps working."""


def open_for_reading(path: str, fix: str) -> Any:
    """``open(path, "rb")``, with the OSErrors a user causes (no such file, no permission, a
    directory) raised as MissingFileError / UnreadableFileError ending with ``fix``."""
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        raise MissingFileError(f"no such file: {path}", fix=fix) from None
    except OSError as exc:
        raise UnreadableFileError(f"cannot open {path} for reading: {exc.strerror or exc}",
                                  fix="check the path and its permissions (a file, not a "
                                  "directory, readable by this user).") from None


class TensorIndexError(HurrayGPUError, IndexError):
    """An index outside a tensor's shape; an IndexError, so iteration protocols still stop."""


class TensorNotFoundError(HurrayGPUError, KeyError):
    """No tensor of that name in a file or mapping; a KeyError, so ``except KeyError`` and
    ``Mapping.get`` keep working.

    Args:
        name: the missing name.
        where: the file (or container) it was looked up in.
        names: the names it does have (the Fix lists the closest ones).
        fix: the ``Fix:`` hint; by default the close names and how to list them all.
    """

    def __init__(self, name: str, where: str, names: Sequence[str] = (), *,
                 fix: str | None = None) -> None:
        self.name, self.where = name, where
        super().__init__(f"no tensor named {name!r} in {where}",
                         fix=fix or close_names_fix(name, names))
        self._args, self._kwargs = (name, where, tuple(names)), {"fix": fix}

    def __str__(self) -> str:  # KeyError's own __str__ would repr() the message
        return Exception.__str__(self)


# How many names a hint lists before it says how many more there are.
SHOWN_NAMES = 8


def listed(names: Sequence[str], limit: int = SHOWN_NAMES) -> str:
    """``names`` joined with ", ", the first ``limit`` of them and "(and N more)" after."""
    shown = ", ".join(repr(n) for n in names[:limit])
    rest = len(names) - limit
    return f"{shown} (and {rest} more)" if rest > 0 else shown


def close_names_fix(name: str, names: Sequence[str]) -> str:
    """A Fix naming the entries of ``names`` closest to ``name`` (never silently cut short)."""
    if not names:
        return "the container holds no tensors; write some first."
    close = difflib.get_close_matches(name, list(names), n=SHOWN_NAMES, cutoff=0.5)
    if close:
        return f"did you mean {listed(close)}? ({len(names)} names in all: f.keys() lists them)."
    return f"use one of {listed(list(names))}."
