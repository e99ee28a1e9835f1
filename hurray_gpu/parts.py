"""What the services (ops, io, kv_cache, sync) know about tensors, and how they build them.

The Tensor class lives in the layer above the services (:mod:`hurray_gpu.tensor`), so they
never import it: they read tensors through :class:`TensorLike` and build new ones with
:func:`make_tensor`, which constructs the class that :mod:`hurray_gpu.tensor` registers when it
is imported (``import hurray_gpu`` does that). A tensor's memory is always Buffers; a cpu
Buffer is host memory NumPy uses in place. :class:`Placement` puts a tensor's buffers on a
device (``Tensor.to``, and readers that load straight onto a device).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from hurray_gpu.errors import (
    ArgumentTypeError,
    HurrayFormatError,
    OutOfMemoryError,
    UnsupportedOpError,
)
from hurray_gpu.format import codec as _codec
from hurray_gpu.format.composite import validate_members
from hurray_gpu.format.descriptor.buffers import (
    DEVICE_ALIGNMENT,
    MIN_DATA_ALIGNMENT,
    BufferHandle,
    DeviceTag,
    SyncMode,
    is_valid_pair,
)
from hurray_gpu.format.descriptor.model import TensorDescriptor
from hurray_gpu.format.dtypes import DType, from_numpy_dtype
from hurray_gpu.format.packing import as_bytes, pack
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.hostmem import aligned_copy, aligned_empty, host_alignment
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.registry import resolve_device
from hurray_gpu.runtime.transfer import Progress, copy_buffer, show_progress

__all__ = ["Placement", "TensorLike", "as_tensor", "assemble", "check_room", "dense_descriptor",
           "from_numpy", "host_buffers",
           "is_tensor", "make_tensor", "not_a_tensor", "place_tensor", "register_tensor_class", "release",
           "resolve_place", "subtree_bytes", "to_device"]


class TensorLike(Protocol):
    """What a tensor offers the services: its descriptor, Buffers and members, and moving."""

    @property
    def descriptor(self) -> Any: ...  # the TensorDescriptor
    @property
    def descriptor_bytes(self) -> bytes: ...
    @property
    def buffers(self) -> tuple[Buffer, ...]: ...
    @property
    def members(self) -> tuple[TensorLike, ...]: ...
    @property
    def device(self) -> Device: ...
    @property
    def memory_class(self) -> MemoryClass: ...
    @property
    def dtype(self) -> DType: ...
    @property
    def shape(self) -> tuple[int | None, ...]: ...
    @property
    def is_host(self) -> bool: ...
    @property
    def is_composite(self) -> bool: ...
    @property
    def layout(self) -> Any: ...
    @property
    def layout_name(self) -> str: ...
    @property
    def quantization(self) -> Any: ...
    @property
    def seq_lens(self) -> np.ndarray | None: ...
    @property
    def sync_state(self) -> Any: ...
    def to(self, device: Any = ..., dtype: Any = ..., *, memory_class: Any = ...,
           progress: bool | None = ...) -> TensorLike: ...
    def numpy(self, *, copy: bool = ...) -> np.ndarray: ...


# The user's Tensor class; hurray_gpu.tensor registers it at import.
_TENSOR: list[Callable[..., Any]] = []
_TENSOR_TYPE: list[type] = []


def register_tensor_class(cls: type, build: Callable[..., Any]) -> None:
    """Make ``build(desc, buffers, members, raw, device, memory_class, seq_lens, sync)`` the one
    way services construct tensors, and ``cls`` the type :func:`is_tensor` recognises."""
    _TENSOR[:] = [build]
    _TENSOR_TYPE[:] = [cls]


def tensor_builder() -> Callable[..., Any]:
    """What :func:`make_tensor` calls: ``build(desc, buffers, members, raw, device,
    memory_class, seq_lens, sync)`` with every argument given and checked (for a caller that
    builds many results of one kind)."""
    if not _TENSOR:
        importlib.import_module("hurray_gpu.tensor")  # see make_tensor
    return _TENSOR[0]


@functools.lru_cache(maxsize=256)
def dense_descriptor(dtype: Any, shape: tuple[int, ...], tag: int
                     ) -> tuple[TensorDescriptor, bytes]:
    """The row-major descriptor of ``dtype`` and ``shape`` on device tag ``tag``, and its
    encoding: immutable values, built and encoded once per shape (results of repeated
    calls: materialize, KV gathers)."""
    desc = TensorDescriptor.dense(dtype, shape, device_tag=tag)
    return desc, desc.encode()


def make_tensor(desc: TensorDescriptor, buffers: Sequence[Buffer], *,
                members: Sequence[TensorLike] = (), raw: bytes | None = None,
                device: Device | None = None, memory_class: MemoryClass | None = None,
                seq_lens: np.ndarray | None = None, sync: Any = None) -> Any:
    """A Tensor of parts the caller has validated (sizes come from the descriptor's handles).

    Args:
        desc: the descriptor.
        buffers: one Buffer per handle, all of one device and memory class.
        members: a composite head's members.
        raw: the descriptor's bytes when already encoded (else encoded here).
        device, memory_class: where a tensor without buffers lives (default: its first
            member's place, else the cpu device).
        seq_lens: a block-paged tensor's per-sequence token counts.
        sync: the handoff state a handed-off tensor carries (see :mod:`hurray_gpu.sync`).
    """
    if not _TENSOR:
        # The Tensor class (a higher layer) registers itself when imported; a service used
        # before anything imported it loads it by name (the pattern docs/architecture.md names).
        importlib.import_module("hurray_gpu.tensor")
    if device is None:
        if buffers:
            device, memory_class = buffers[0].device, buffers[0].memory_class
        elif members:
            device, memory_class = members[0].device, members[0].memory_class
        else:
            device, memory_class = resolve_device("cpu"), MemoryClass.STANDARD
    return _TENSOR[0](desc, tuple(buffers), tuple(members),
                      raw if raw is not None else _codec.encode(desc), device,
                      memory_class if memory_class is not None else MemoryClass.STANDARD,
                      seq_lens, sync)


def assemble(descriptor: Any, buffers: Sequence[Any] = (),
             members: Sequence[TensorLike] = (), sync: Any = None) -> Any:
    """A tensor from a descriptor and its buffers, validating both (``Tensor.from_parts``).

    Args:
        descriptor: descriptor bytes (decoded strictly) or a TensorDescriptor.
        buffers: one per buffer-table entry: a Buffer, or host bytes (bytes, memoryview, a
            NumPy array), which become cpu Buffers (see :func:`host_buffers`). All must end
            up on one device and memory class that every handle declares.
        members: for a composite head, its complete member tensors in order.
        sync: the handoff state the tensor carries (see :func:`make_tensor`).

    Raises:
        HurrayFormatError: malformed descriptor, wrong buffer count or size, buffers on
            several places, or a composite whose members break the composite rules.
    """
    if isinstance(descriptor, (bytes, bytearray, memoryview)):
        raw = bytes(descriptor)
        desc = _codec.decode(raw)
    else:
        desc = descriptor
        raw = _codec.encode(desc)  # encoding validates every descriptor rule
    handles = _codec.handles(desc)
    if len(buffers) != len(handles):
        raise HurrayFormatError(
            f"{len(buffers)} buffers given but the descriptor declares {len(handles)}",
            field="buffer_count", fix="pass one buffer per buffer-table entry, in order.")
    members = list(members)
    if any(not is_tensor(m) for m in members):
        raise HurrayFormatError("composite members must be Tensor objects", field="members",
                                fix="wrap each member with Tensor.from_parts/from_numpy.")
    if _codec.is_head(desc):
        validate_members(desc, [m.descriptor for m in members])
    elif members:
        raise HurrayFormatError("only a composite head (layout 0x0B) has members",
                                field="members", fix="drop the members argument.")
    host = [i for i, b in enumerate(buffers) if not isinstance(b, Buffer)]
    wrapped = dict(zip(host, host_buffers(desc, [buffers[i] for i in host], only=host),
                       strict=True))
    bufs = [wrapped.get(i, b) for i, b in enumerate(buffers)]
    if not bufs:
        return make_tensor(desc, [], members=members, raw=raw, sync=sync)
    # Host bytes carry no place of their own: the descriptor may declare where a producer
    # kept them (a stream from a GPU); caller-given Buffers must match their handles.
    device, mclass = check_buffers(desc, bufs, tags=len(host) < len(bufs))
    return make_tensor(desc, bufs, members=members, raw=raw, device=device,
                       memory_class=mclass, sync=sync)


def is_tensor(value: Any) -> bool:
    """True for an instance of the user's Tensor class."""
    return bool(_TENSOR_TYPE) and isinstance(value, _TENSOR_TYPE[0])


def _kind(value: Any) -> str:
    """``numpy.ndarray``, ``torch.Tensor``, ``list``: the type as a user would spell it."""
    return f"{type(value).__module__}.{type(value).__name__}".removeprefix("builtins.")


def not_a_tensor(value: Any, what: str) -> ArgumentTypeError:
    """The error for passing ``value`` (not a Tensor) where ``what`` needs one."""
    kind = _kind(value)
    if isinstance(value, np.ndarray) or np.isscalar(value):
        fix = f"wrap the array first: {what}(hg.from_numpy(x))."
    elif hasattr(value, "__dlpack__"):
        fix = f"import it first (zero-copy): {what}(hg.from_dlpack(x))."
    else:
        fix = "pass a hurray_gpu Tensor (hg.from_numpy, hg.load, hg.open_file(...)[name])."
    return ArgumentTypeError(f"{what}() takes a hurray_gpu Tensor, not {kind}", fix=fix)


def as_tensor(value: Any) -> Any:
    """``value`` itself when it is a Tensor; a NumPy / ml_dtypes array becomes one.

    Raises:
        UnsupportedOpError: anything else.
    """
    if is_tensor(value):
        return value
    if isinstance(value, np.ndarray) or np.isscalar(value):
        return from_numpy(value)
    raise UnsupportedOpError(f"expected a Tensor or a NumPy array, got {type(value).__name__}",
                             fix="pass hg.from_numpy(array) or a Tensor.")


def from_numpy(array: Any, order: str = "C") -> Any:
    """Wrap a NumPy or ml_dtypes array as a dense host tensor (see ``Tensor.from_numpy``).

    Raises:
        UnsupportedOpError: the dtype has no Hurray element type.
        HurrayFormatError: a bad order, or values the type cannot hold.
    """
    if order not in ("C", "F"):
        raise HurrayFormatError(f"order must be 'C' or 'F', got {order!r}", field="order",
                                fix="use order='C' (row-major) or order='F' (col-major).")
    if is_tensor(array):
        raise ArgumentTypeError("from_numpy() got a hurray_gpu Tensor, which needs no wrapping",
                                fix="use the tensor itself (t.to(...) copies it).")
    try:
        arr = np.asarray(array)
    except (TypeError, ValueError, RuntimeError) as exc:  # e.g. torch bfloat16, CUDA tensors
        raise ArgumentTypeError(
            f"from_numpy() cannot view a {_kind(array)} as a NumPy array ({exc})",
            fix="import it with hg.from_dlpack(x) (zero-copy, bfloat16 and float8 included), "
                "or convert it to a NumPy array first.") from None
    dtype = from_numpy_dtype(arr.dtype)
    col = order == "F" and arr.ndim > 1
    data = pack(arr.T if col else arr, dtype)
    desc = TensorDescriptor.dense(dtype, arr.shape, col_major=col)
    return make_tensor(desc, host_buffers(desc, [data]))


def host_buffers(desc: TensorDescriptor, data: Sequence[Any],
                 only: Sequence[int] | None = None) -> list[Buffer]:
    """cpu Buffers over host bytes, one per handle (or per index in ``only``), each exactly
    its handle's byte_size.

    Aligned memory is used in place (read-only stays read-only); misaligned memory is copied
    to meet the handle's alignment (capped, see :func:`host_alignment`).

    Raises:
        HurrayFormatError: a count or size mismatch, or data that is not bytes-like.
    """
    handles = _codec.handles(desc)
    indices = list(range(len(handles))) if only is None else list(only)
    if len(data) != len(indices):
        raise HurrayFormatError(
            f"{len(data)} buffers given but the descriptor declares {len(handles)}",
            field="buffer_count", fix="pass one buffer per buffer-table entry, in order.")
    cpu = resolve_device("cpu")
    out = []
    for i, buf in zip(indices, data, strict=True):
        handle = handles[i]
        try:
            raw = as_bytes(buf)
        except HurrayFormatError:
            raise
        except (TypeError, ValueError) as exc:
            raise HurrayFormatError(f"buffers[{i}] is not bytes-like ({exc})",
                                    field=f"buffers[{i}]",
                                    fix="pass bytes, memoryview or NumPy arrays.") from None
        if raw.size != handle.byte_size:
            raise HurrayFormatError(
                f"buffers[{i}] holds {raw.size} bytes but the descriptor declares byte_size "
                f"{handle.byte_size}", field=f"buffers[{i}].byte_size",
                fix="pass exactly byte_size bytes for every buffer, in buffer-table order.")
        align = host_alignment(handle.alignment, raw.size)
        out.append(Buffer.wrap(aligned_copy(np.ascontiguousarray(raw), align), cpu))
    return out


def resolve_place(device: Any, memory_class: Any) -> tuple[Device, MemoryClass]:
    """Open a device spec and check it offers ``memory_class`` as a valid Hurray pair.

    Raises:
        BackendUnavailableError: the device cannot be opened.
        UnsupportedOpError: an unknown class, or one the device does not offer.
    """
    dev = resolve_device(device)
    mclass = MemoryClass.parse(memory_class)
    offered = ", ".join(m.label for m in dev.memory_classes)
    if mclass not in dev.memory_classes or not is_valid_pair(dev.tag, mclass):
        raise UnsupportedOpError(f"{dev} offers no {mclass.label} memory for tensors",
                                 fix=f"use memory_class one of: {offered}.")
    return dev, mclass


@dataclasses.dataclass
class Placement:
    """A target (device, memory class) for tensor buffers, plus the transfer's progress bar."""

    device: Device
    memory_class: MemoryClass
    bar: Progress

    def __enter__(self) -> Placement:
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.close()

    def handle(self, h: BufferHandle) -> BufferHandle:
        """``h`` re-declared for this placement (tag, class, producer-synced, alignment)."""
        if h.byte_size == 0:
            align = h.alignment  # empty buffers may declare any alignment; keep it
        elif self.device.tag == DeviceTag.CPU:
            align = MIN_DATA_ALIGNMENT
        else:
            align = max(h.alignment, DEVICE_ALIGNMENT)  # the spec's rule for GPU writers
        return BufferHandle(h.byte_size, align, self.device.tag, SyncMode.PRODUCER_SYNCED,
                            self.memory_class)

    def retag(self, desc: TensorDescriptor) -> TensorDescriptor:
        """``desc`` with every buffer handle re-declared for this placement."""
        return dataclasses.replace(desc, buffers=tuple(self.handle(h) for h in desc.buffers))

    def alloc(self, h: BufferHandle) -> Buffer:
        """Uninitialised storage for one buffer. Plain host memory is an aligned NumPy array
        (freed with its last reference, never pooled); every other place is allocated."""
        if self.device.allocator.host_memory and self.memory_class == MemoryClass.STANDARD:
            return Buffer.wrap(aligned_empty(h.byte_size, host_alignment(h.alignment,
                                                                         h.byte_size)),
                               self.device)
        return Buffer(self.device, h.byte_size, self.memory_class)

    def fill(self, desc: TensorDescriptor, sources: Sequence[Buffer]) -> list[Buffer]:
        """Allocate storage for each of ``desc``'s buffers and copy ``sources`` into it.

        Args:
            desc: the (already retagged) descriptor.
            sources: one Buffer per handle, exactly byte_size long.

        Raises:
            HurrayFormatError: a source's size differs from its handle's byte_size.
            OutOfMemoryError: the device has no room (nothing stays allocated).
        """
        check_sizes(desc.buffers, [s.nbytes for s in sources])
        out: list[Buffer] = []
        try:
            for h, src in zip(desc.buffers, sources, strict=True):
                out.append(self.alloc(h))
                copy_buffer(out[-1], src, bar=self.bar)
        except BaseException:
            release(out)
            raise
        return out


def placement(device: Any, memory_class: Any, total: int, label: str,
              progress: bool | None) -> Placement:
    """A checked target for ``total`` bytes: device opened, class offered, room checked."""
    dev, mclass = resolve_place(device, memory_class)
    check_room(dev, total)
    return Placement(dev, mclass, Progress(total, f"{label} {dev.spec}".strip(),
                                           show_progress(total, progress)))


def check_sizes(handles: Sequence[BufferHandle], sizes: Sequence[int]) -> None:
    """Require one buffer per handle, each exactly its handle's byte_size (before allocating).

    Raises:
        HurrayFormatError: a count or size mismatch.
    """
    if len(sizes) != len(handles):
        raise HurrayFormatError(f"{len(sizes)} buffers for {len(handles)} handles",
                                field="buffer_count", fix="pass one buffer per handle.")
    for i, (h, n) in enumerate(zip(handles, sizes, strict=True)):
        if n != h.byte_size:
            raise HurrayFormatError(
                f"buffers[{i}] holds {n} bytes but the descriptor declares {h.byte_size}",
                field=f"buffers[{i}].byte_size", fix="pass exactly byte_size bytes per buffer.")


def release(buffers: Sequence[Buffer]) -> None:
    """Free buffers made by :meth:`Placement.alloc` (host arrays are left to the GC)."""
    for buf in buffers:
        buf.free()


def check_room(dev: Device, total: int) -> None:
    """Refuse a transfer larger than the device's free memory before allocating any of it.

    Raises:
        OutOfMemoryError: the device reports less free memory than ``total``.
    """
    if dev.allocator.host_memory or total == 0:
        return  # host free memory excludes reclaimable cache: not a reliable bound
    free, capacity = dev.memory_info()
    if capacity and total > free:
        raise OutOfMemoryError(total, free, capacity,
                               fix=f"free memory on {dev.spec} or move fewer tensors at once.")


def subtree_bytes(t: TensorLike) -> int:
    """Bytes of a tensor's buffers plus its members' (recursively)."""
    return sum(h.byte_size for h in t.descriptor.buffers) + sum(subtree_bytes(m)
                                                                 for m in t.members)


def _is_on(t: TensorLike, dev: Device, mclass: MemoryClass) -> bool:
    if (t.device, t.memory_class) != (dev, mclass):
        return False
    if any(h.device_tag != dev.tag or h.memory_class != mclass or h.sync_mode
           for h in t.descriptor.buffers):
        return False
    return all(_is_on(m, dev, mclass) for m in t.members)


def to_device(t: TensorLike, device: Any, memory_class: Any = MemoryClass.STANDARD,
              progress: bool | None = None) -> Any:
    """Implement :meth:`Tensor.to`: copy every buffer (members too) to ``device``."""
    dev, mclass = resolve_place(device, memory_class)
    if _is_on(t, dev, mclass):
        return t
    total = subtree_bytes(t)
    check_room(dev, total)
    with Progress(total, f"to {dev.spec}", show_progress(total, progress)) as bar:
        return _move(t, Placement(dev, mclass, bar))


def _move(t: TensorLike, target: Placement) -> Any:
    members = [_move(m, target) for m in t.members]
    return place_tensor(t.descriptor, t.buffers, target, members, seq_lens=t.seq_lens)


def place_tensor(desc: TensorDescriptor, sources: Sequence[Buffer], target: Placement,
                 members: Sequence[TensorLike] = (), *,
                 seq_lens: np.ndarray | None = None) -> Any:
    """A tensor at ``target`` holding copies of ``sources`` under a retagged ``desc``.

    The retagged descriptor is encoded (and so validated) and every source size is checked
    against its handle before anything is allocated.
    """
    new = target.retag(desc)
    raw = _codec.encode(new)
    buffers = target.fill(new, sources)
    return make_tensor(new, buffers, members=members, raw=raw, device=target.device,
                       memory_class=target.memory_class, seq_lens=seq_lens)


def check_buffers(desc: TensorDescriptor, buffers: Sequence[Buffer], tags: bool = True
                  ) -> tuple[Device, MemoryClass]:
    """Validate caller-supplied Buffers for ``Tensor.from_parts``: one place, matching handles.

    Returns:
        The ``(device, memory class)`` they share.

    Raises:
        HurrayFormatError: Buffers on several places, or a descriptor whose handles do not
            declare the Buffers' device tag and memory class.
    """
    places = {(b.device, b.memory_class) for b in buffers}
    if len(places) != 1:
        raise HurrayFormatError(
            "a tensor's buffers must all be host data or all Buffers of one device and class",
            field="buffers", fix="pass host buffers and call .to(device) instead.")
    (dev, mclass), = places
    check_sizes(desc.buffers, [b.nbytes for b in buffers])
    for i, h in enumerate(desc.buffers):
        if tags and (h.device_tag != dev.tag or h.memory_class != mclass):
            raise HurrayFormatError(
                f"buffers[{i}] is a Buffer on {dev.spec} ({mclass.label}) but its handle "
                f"declares device_tag 0x{h.device_tag:02X}, memory_class {h.memory_class}",
                field=f"buffers[{i}].device_tag",
                fix="declare the Buffers' device_tag and memory_class in the descriptor.")
    return dev, mclass
