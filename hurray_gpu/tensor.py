"""The Tensor: a validated TensorDescriptor plus its Buffers (plus members for a composite head).

This module owns the class users hold. It sits above the services it offers as methods
(dequantization and layouts, moving between devices, handoff and DLPack), which build tensors
through :mod:`hurray_gpu.parts` without importing this module; importing it registers
:class:`Tensor` there. Every buffer is a :class:`~hurray_gpu.runtime.buffer.Buffer`: on the cpu
device a Buffer is host memory NumPy uses in place, so host and device tensors share one path.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from hurray_gpu import parts
from hurray_gpu.errors import (
    AmbiguousTruthError,
    ArgumentTypeError,
    CopyRequiredError,
    HurrayFormatError,
    UnsupportedOpError,
)
from hurray_gpu.format.descriptor.buffers import SyncMode
from hurray_gpu.format.descriptor.layouts import LAYOUT_NAMES, Strided, layout_name
from hurray_gpu.format.dtypes import DType, as_dtype, buffer_size, coerce_dtype, named_dtype
from hurray_gpu.format.indexing import view_descriptor
from hurray_gpu.format.packing import unpack
from hurray_gpu.ops import dequantize as _dequantize
from hurray_gpu.ops import materialize as _materialize
from hurray_gpu.ops import unpack as _unpack
from hurray_gpu.runtime.buffer import Buffer
from hurray_gpu.runtime.device import Device
from hurray_gpu.runtime.memory import MemoryClass
from hurray_gpu.runtime.stream import Stream
from hurray_gpu.sync.dlpack import dlpack_device, export
from hurray_gpu.sync.handoff import SyncState, accept, handoff, on_use, release, sync_mode_of

__all__ = ["LAYOUT_NAMES", "Tensor", "layout_name"]

_DEVICE_KEY = object()  # the __dlpack_device__ entry of the Tensor._dl cache


class Tensor:
    """A Hurray tensor: descriptor + Buffers (+ members for a composite head).

    Build one with :meth:`from_numpy` or :meth:`from_parts` (the constructor is the same as
    ``from_parts``), and move it with :meth:`to`. Its buffers are
    :class:`~hurray_gpu.runtime.buffer.Buffer` objects on one device and memory class; on the
    cpu device ``buf.array`` (or ``np.asarray(buf)``) is their memory, without a copy.

    A host tensor pickles as its descriptor bytes plus its buffers: with pickle protocol 5 and
    a ``buffer_callback`` the buffers travel out of band (``pickle.PickleBuffer``, no copy on
    either side; the unpickled tensor's cpu Buffers are the received memory), with lower
    protocols in band. A device tensor refuses to pickle (a hidden device-to-host copy, and a
    device that may not exist where it is unpickled): move it with ``.to("cpu")`` first.
    Handoff state and release callbacks stay in the producing process.

    Attributes:
        seq_lens: a block-paged tensor's per-sequence token counts (int64), when known
            (KV-cache exports set it); None otherwise.
    """

    # _sync: handoff state (sync/handoff.py); _dl: DLPack export templates (sync/dlpack.py).
    __slots__ = ("_descriptor", "_buffers", "_members", "_raw", "_device", "_mclass", "_sync",
                 "_dl", "seq_lens", "__weakref__")

    def __init__(self, descriptor: Any, buffers: Sequence[Any] = (),
                 members: Sequence[Tensor] = ()) -> None:
        made = parts.assemble(descriptor, buffers, members)
        self._init(made._descriptor, made._buffers, made._members, made._raw, made._device,
                   made._mclass, None, None)

    def _init(self, desc: Any, buffers: tuple[Buffer, ...], members: tuple[Tensor, ...],
              raw: bytes, device: Device, mclass: MemoryClass, seq_lens: Any,
              sync: SyncState | None) -> None:
        self._descriptor, self._buffers, self._members, self._raw = desc, buffers, members, raw
        self._device, self._mclass, self.seq_lens = device, mclass, seq_lens
        self._sync = sync  # set only on tensors Tensor.handoff() returns
        self._dl: Any = None

    @classmethod
    def _build(cls, desc: Any, buffers: tuple[Buffer, ...], members: tuple[Tensor, ...],
               raw: bytes, device: Device, mclass: MemoryClass, seq_lens: Any,
               sync: SyncState | None) -> Tensor:
        """Wrap parts the services have already validated (see :func:`parts.make_tensor`)."""
        self = object.__new__(cls)  # _init's assignments, in place: small calls build many
        self._descriptor, self._buffers, self._members, self._raw = desc, buffers, members, raw
        self._device, self._mclass, self.seq_lens, self._sync, self._dl = (
            device, mclass, seq_lens, sync, None)
        return self

    @classmethod
    def from_parts(cls, descriptor: Any, buffers: Sequence[Any] = (),
                   members: Sequence[Tensor] = ()) -> Tensor:
        """Build a tensor from a descriptor and its buffers, validating both.

        Args:
            descriptor: descriptor bytes (decoded strictly) or a TensorDescriptor.
            buffers: one bytes-like object or NumPy array per buffer-table entry (each must
                hold exactly its handle's byte_size; aligned memory is used in place,
                misaligned memory is copied to meet the handle's alignment), or Buffers, all
                on one device and memory class that every handle declares.
            members: for a composite head, its complete member tensors in order.

        Returns:
            The Tensor.

        Raises:
            HurrayFormatError: malformed descriptor, wrong buffer count or size, or a
                composite whose members break the composite rules.
        """
        return cls(descriptor, buffers, members)

    @classmethod
    def from_numpy(cls, array: Any, *, order: str = "C") -> Tensor:
        """Wrap a NumPy or ml_dtypes array as a dense CPU tensor.

        Sub-byte types (bool, int4/uint4/int2/uint2, float4_e2m1fn, float6_*) are packed
        LSB-first; whole-byte types are stored little-endian (no copy when already so and
        64-byte aligned).

        Args:
            array: anything ``np.asarray`` accepts with a dtype that maps to a Hurray type.
            order: ``"C"`` for row-major (0x01) or ``"F"`` for column-major (0x02).

        Returns:
            The Tensor.

        Raises:
            UnsupportedOpError: the dtype has no Hurray element type.
            HurrayFormatError: a bad order, or values the type cannot hold.
        """
        return parts.from_numpy(array, order)  # type: ignore[no-any-return]

    # -- properties ----------------------------------------------------------------------
    @property
    def descriptor(self) -> Any:
        """The TensorDescriptor."""
        return self._descriptor

    @property
    def descriptor_bytes(self) -> bytes:
        """The descriptor's wire bytes (the original bytes when read from a stream or file)."""
        return self._raw

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """The Buffers in buffer-table order.

        This is where every hurray_gpu op obtains a tensor's memory, so a handed-off tensor
        the consumer did not :meth:`accept` is accepted here, on the current stream.
        """
        state = self._sync
        if state is not None:
            on_use(self, state)
        return self._buffers

    @property
    def device(self) -> Device:
        """The Device holding the buffers."""
        return self._device

    @property
    def memory_class(self) -> MemoryClass:
        """The MemoryClass of the memory holding the buffers."""
        return self._mclass

    @property
    def is_host(self) -> bool:
        """True when the buffers are host memory NumPy can address (the cpu device)."""
        return self._device.allocator.host_memory and all(m.is_host for m in self._members)

    def to(self, device: Any = None, dtype: Any = None, *, memory_class: Any = None,
           progress: bool | None = None) -> Tensor:
        """Copy to ``device`` and/or convert to ``dtype``, with ``torch.Tensor.to``'s argument
        order: ``t.to("cpu", "float16")`` and ``t.to(np.float16)`` mean what they mean there.

        Moving copies every buffer (members too) bit-exactly and re-declares the descriptor:
        buffer handles carry the device's device_tag and ``memory_class``, sync_mode 0, and
        alignment >= 4096 off the CPU (64 on it). Same-device copies stay on the device; host
        memory moves by direct copyin/copyout; other pairs are staged through the host one
        bounded chunk at a time. Converting is :func:`hurray_gpu.materialize` (dequantize,
        unpack or widen/narrow floats into a dense row-major result), run on whichever side
        of the move has fewer bytes to carry.

        Args:
            device: a Device or spec (``"cpu"``, ``"opencl:0"``, ``"vulkan"``...); None keeps
                the tensor's device. A dtype here (``t.to(np.float16)``) is taken as ``dtype``.
            dtype: the element type of the result: a name, NumPy / ml_dtypes / torch dtype or
                DType (see :func:`hurray_gpu.format.dtypes.as_dtype`); None keeps the type.
            memory_class: keyword-only, so that it is never taken for a dtype:
                ``"standard"``, ``"host_pinned"``, ``"unified"``, ``"peer"`` or a MemoryClass
                the device offers. None: the tensor's own class when ``device`` is None,
                else standard.
            progress: True/False force a progress bar on/off; None shows one for large
                transfers on a terminal (``HURRAY_GPU_PROGRESS=0`` turns that off).

        Returns:
            ``self`` when nothing changes (same device, class, handles and type), else a new
            Tensor.

        Raises:
            ArgumentTypeError: a memory class passed as ``dtype`` (pass ``memory_class=``).
            HurrayFormatError: ``dtype`` names no element type.
            BackendUnavailableError: the device cannot be opened.
            UnsupportedOpError: the device does not offer ``memory_class``, or a conversion
                :func:`hurray_gpu.materialize` cannot do.
            OutOfMemoryError: the device has no room (checked before allocating).
        """
        device, target = _to_args(self, device, dtype)
        if memory_class is None:
            memory_class = self._mclass if device is None else MemoryClass.STANDARD
        if device is None:
            device = self._device
        if target is None or (target == self.dtype and self.quantization is None):
            return parts.to_device(self, device, memory_class, progress)  # type: ignore[no-any-return]
        if _out_bytes(self, target) < parts.subtree_bytes(self):  # narrowing: convert first
            return self.materialize(target.name).to(device, memory_class=memory_class,
                                                    progress=progress)
        moved = parts.to_device(self, device, memory_class, progress)
        return moved.materialize(target.name)  # type: ignore[no-any-return]

    def cpu(self) -> Tensor:
        """This tensor on the host (``self`` when it already is): ``t.to("cpu")``."""
        return self.to("cpu")

    def dequantize(self, dtype: str = "float32", device: Any = None, *,
                   seq_lens: Any = None) -> Tensor:
        """Dequantize on this tensor's device; see :func:`hurray_gpu.ops.dequantize`."""
        return _dequantize(self, dtype, device, seq_lens=seq_lens)  # type: ignore[no-any-return]

    def unpack(self, dtype: str | None = None, device: Any = None) -> Tensor:
        """Unpack sub-byte or small-float data on the device; see :func:`hurray_gpu.ops.unpack`."""
        return _unpack(self, dtype, device)  # type: ignore[no-any-return]

    def materialize(self, dtype: str | None = None, *, seq_lens: Any = None) -> Tensor:
        """Dense row-major copy on this device; see :func:`hurray_gpu.ops.materialize`."""
        return _materialize(self, dtype, seq_lens=seq_lens)  # type: ignore[no-any-return]

    @property
    def members(self) -> tuple[Tensor, ...]:
        """A composite head's members (empty for every other tensor)."""
        return self._members

    @property
    def dtype(self) -> DType:
        """The storage element type."""
        return self._descriptor.dtype  # type: ignore[no-any-return]

    @property
    def shape(self) -> tuple[int | None, ...]:
        """The shape; None marks a dynamic dimension."""
        return tuple(self._descriptor.shape)

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self._descriptor.shape)

    @property
    def layout(self) -> Any:
        """The typed layout object."""
        return self._descriptor.layout

    @property
    def layout_name(self) -> str:
        """``"row_major"``, ``"coo"``, ``"composite"``, ... (python-binding names)."""
        return layout_name(self._descriptor.layout_tag)

    @property
    def quantization(self) -> Any:
        """The quantization scheme object, or None."""
        return self._descriptor.quantization

    @property
    def is_composite(self) -> bool:
        """True for a composite head."""
        return self._descriptor.layout_tag == 0x0B  # type: ignore[no-any-return]

    @property
    def nbytes(self) -> int:
        """Total bytes of this tensor's buffers (members not included)."""
        return sum(int(h.byte_size) for h in self._descriptor.buffers)

    @property
    def sync_state(self) -> SyncState | None:
        """The handoff state a handed-off tensor carries (None for every other tensor)."""
        return self._sync

    @property
    def sync_mode(self) -> SyncMode:
        """The sync_mode its buffer handles declare (PRODUCER_SYNCED when it has none)."""
        return sync_mode_of(self)

    def handoff(self, mode: Any, stream: Stream | Sequence[Stream] | None = None, *,
                producer: Stream | Sequence[Stream] | None = None,
                on_release: Callable[[], Any] | None = None) -> Tensor:
        """Prepare this tensor for a consumer and declare ``mode`` in every buffer handle.

        producer_synced waits on the host for the producer streams; event records one event
        after them; consumer_stream makes each consumer stream wait for them on the device.

        Args:
            mode: ``"producer_synced"``/0, ``"event"``/1 or ``"consumer_stream"``/2.
            stream: consumer_stream mode only: the consumer's Stream (or Streams).
            producer: the stream(s) that wrote the buffers; default the current stream.
            on_release: the buffer-release callback, called exactly once by
                :meth:`release` (or when the handed-off tensor is collected).

        Returns:
            A new Tensor sharing the buffers, whose handles declare ``mode``.

        Raises:
            UnsupportedOpError: an unknown mode, a non-producer-synced mode for CPU buffers,
                consumer_stream without a stream, or streams of another device.
        """
        return handoff(self, mode, stream, producer=producer, on_release=on_release)

    def accept(self, stream: Stream | Sequence[Stream] | None = None, *,
               insert_wait: bool = False) -> Any:
        """Apply the consumer rule of the declared sync_mode before using the buffers.

        event: every given stream waits on the event, then the event is released (once);
        consumer_stream: only the declared streams may be used, unless ``insert_wait``
        orders another stream after them; producer_synced: nothing to do.

        Args:
            stream: the stream(s) that will touch the buffers; default the current stream.
            insert_wait: allow an undeclared stream by inserting an inter-stream wait.

        Returns:
            self.

        Raises:
            UnsupportedOpError: event mode without an event, consumer_stream mode without
                declared streams or on an undeclared stream, or handles that disagree.
        """
        return accept(self, stream, insert_wait=insert_wait)

    def release(self) -> None:
        """End the consumer's access: wait for its streams, then call the release callback once."""
        release(self)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """Export as a DLPack capsule (versioned when ``max_version >= (1, 0)``).

        Args:
            stream: the consumer's stream per the DLPack convention (None: legacy default;
                -1: no synchronization; device-specific integers otherwise).
            max_version: the highest DLPack version the consumer understands.
            dl_device: the device the consumer wants; only this tensor's own is possible
                without ``copy=True`` (then the cpu, ``(1, 0)``, is also possible).
            copy: True: always export a copy; False: never copy; None: copy only if needed.

        Raises:
            BufferError: layouts, dtypes, devices or stream values DLPack cannot carry here.
        """
        if dl_device is None and copy is None and (stream is None or (
                type(stream) is int and stream == -1)):
            # Host tensors are immutable: the capsule template of an earlier export is reused
            # (only host tensors are cached; -1 and None are the same for them).
            cache: Any = self._dl
            if cache is not None:
                try:
                    template = cache.get(max_version)
                except TypeError:  # an unhashable max_version: the slow path checks it
                    template = None
                if template is not None:
                    return template()
        return export(self, stream=stream, max_version=max_version, dl_device=dl_device,
                      copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(DLDeviceType, device_id)`` per docs/format.md, DLPack device mapping.

        Raises:
            BufferError: the (device, memory class) pair has no DLPack device type.
        """
        cache: Any = self._dl
        if cache is not None and _DEVICE_KEY in cache:
            return cache[_DEVICE_KEY]  # type: ignore[no-any-return]
        device = dlpack_device(self)
        if self.is_host:
            if cache is None:
                cache = self._dl = {}
            cache[_DEVICE_KEY] = device
        return device

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        """Pickle support (see the class docstring): host tensors only.

        Raises:
            UnsupportedOpError: the buffers are not host memory.
        """
        if not self.is_host:
            raise UnsupportedOpError(f"cannot pickle a tensor on {self.device}: pickling "
                                     "never copies device memory implicitly",
                                     fix="pickle t.to('cpu') instead.")
        # Protocol 5 hands the memory to the pickler as a PickleBuffer: out of band when the
        # caller gave a buffer_callback (no copy), else one in-band copy.
        wrap: Callable[[Any], Any] = pickle.PickleBuffer if int(protocol) >= 5 else bytes
        return (_unpickle, (self._raw, [wrap(b.array) for b in self.buffers],
                            list(self._members), self.seq_lens))

    def __repr__(self) -> str:
        sizes = [int(h.byte_size) for h in self._descriptor.buffers]
        extra = f", members={len(self._members)}" if self.is_composite else ""
        if self.quantization is not None:
            extra += f", quantization={_scheme_label(self.quantization)}"
        if not self.is_host or self._mclass != MemoryClass.STANDARD:
            extra += f", device={self._device.spec}, memory_class={self._mclass.label}"
        return (f"Tensor(dtype={self.dtype.name}, shape={self.shape}, "
                f"layout={_layout_label(self)}, buffers={sizes}{extra})")

    # -- Python and NumPy conventions ------------------------------------------------------
    def __len__(self) -> int:
        """The size of dimension 0, as for a NumPy array.

        Raises:
            ArgumentTypeError: a scalar (rank 0) has no length.
            UnsupportedOpError: dimension 0 is dynamic.
        """
        if not self._descriptor.shape:
            raise ArgumentTypeError("len() of a scalar (rank-0) tensor",
                                    fix="use t.shape, or t.numpy().item() for its value.")
        first = self._descriptor.shape[0]
        if first is None:
            raise UnsupportedOpError("len() of a tensor whose dimension 0 is dynamic",
                                     fix="resolve the shape first; t.shape shows None there.")
        return int(first)

    def __bool__(self) -> bool:
        """The truth of the one element, as for a NumPy array (rank 0, or any shape of size 1;
        a device tensor's element is copied to the host).

        Raises:
            AmbiguousTruthError: more than one element, or none (NumPy's ValueError).
            UnsupportedOpError: a dynamic dimension, or data NumPy cannot hold (quantized...).
        """
        shape = self._descriptor.shape
        if None in shape:
            raise UnsupportedOpError("bool() of a tensor with a dynamic dimension",
                                     fix="resolve the shape first; t.shape shows None there.")
        size = math.prod(int(n) for n in shape if n is not None)
        if size != 1:
            what = "an empty tensor" if size == 0 else f"a tensor of {size} elements"
            raise AmbiguousTruthError(
                f"the truth value of {what} (shape {shape}) is ambiguous",
                fix="test for elements with math.prod(t.shape) > 0." if size == 0 else
                "use np.asarray(t).any() or np.asarray(t).all().")
        return bool(np.asarray(self).reshape(-1)[0])

    def __iter__(self) -> Iterator[Tensor]:
        """The views ``t[0]``, ``t[1]``, ... along dimension 0."""
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, key: Any) -> Tensor:
        """Basic indexing (ints, slices, ``...``, ``None``) as a view sharing the buffers.

        Row-major, column-major and strided tensors can be indexed; the result is row- or
        column-major when still contiguous, else strided (docs/concepts.md, Python
        conventions). On a device, the view stays there: ``hg.materialize(view)`` makes it
        dense.

        Raises:
            TensorIndexError: an index out of range, or too many indices.
            ArgumentTypeError: advanced indexing (lists, arrays, masks), which NumPy does on
                ``t.numpy()``.
            UnsupportedOpError: quantized, composite, sparse, paged, tiled or curve layouts,
                dynamic shapes, and packed (sub-byte) views that would start inside a byte.
        """
        desc = self._descriptor
        why = _unindexable(self)
        if why:
            raise UnsupportedOpError(f"cannot index {self!r}: {why}", fix=_INDEX_FIX)
        return parts.make_tensor(view_descriptor(desc, key), self.buffers,  # type: ignore[no-any-return]
                                 device=self._device, memory_class=self._mclass)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's conversion protocol (``np.asarray(t)``, ``np.array(t, copy=...)``).

        Host tensors convert without a copy where :meth:`numpy` can (whole-byte row-major,
        column-major and strided data); ``copy=True`` always copies. A device tensor is
        copied to the host (``np.asarray`` asks for host memory), which ``copy=False``
        refuses.

        Raises:
            CopyRequiredError: ``copy=False`` when the result needs a copy (a device tensor,
                packed sub-byte data, or a ``dtype`` other than the tensor's).
            UnsupportedOpError: what :meth:`numpy` cannot convert (quantized, sparse, ...).
        """
        if not self.is_host:
            if copy is False:
                raise CopyRequiredError(
                    f"np.asarray(copy=False) of {self!r}: its buffers are on {self.device}",
                    fix="copy it to the host explicitly: np.asarray(t.cpu()).")
            host = self.cpu()
            return host.__array__(dtype, None)
        out = self.numpy(copy=bool(copy))
        if copy is False and out.size and not np.may_share_memory(out, self.buffers[0].array):
            raise CopyRequiredError(
                f"np.asarray(copy=False) of {self!r}: {self.dtype.name} data in this layout "
                "is decoded into new memory", fix="drop copy=False (or pass copy=None).")
        if dtype is None or np.dtype(dtype) == out.dtype:
            return out
        if copy is False:
            raise CopyRequiredError(f"np.asarray(copy=False) of {self!r} as {np.dtype(dtype)}",
                                    fix="drop copy=False, or ask for the tensor's own dtype.")
        return out.astype(dtype)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return (self._raw == other._raw and len(self._buffers) == len(other._buffers)
                and (self._device, self._mclass) == (other._device, other._mclass)
                and all(np.array_equal(a.numpy(), b.numpy())
                        for a, b in zip(self.buffers, other.buffers, strict=True))
                and self._members == other._members)

    __hash__ = None  # type: ignore[assignment]

    def numpy(self, *, copy: bool = False) -> np.ndarray:
        """Decode a dense, unquantized row-major, column-major or strided tensor to NumPy.

        Args:
            copy: always return a fresh writable array (otherwise the result may be a view of
                the buffer: read-only when the buffer is, and always for strided layouts,
                whose elements may overlap).

        Returns:
            An array of ``dtype.numpy`` (ml_dtypes types one element per byte) and ``shape``.

        Device tensors are not copied back implicitly (a hidden device-to-host transfer is
        a performance trap); move them with ``.to("cpu")`` first.

        Raises:
            UnsupportedOpError: the tensor is on a device, composite, quantized,
                sparse/paged/tiled/curve layouts, dynamic shapes, or types without a NumPy
                dtype (float128, private).
            HurrayFormatError: invalid data (nonzero trailing bits, forbidden e8m0 codes).
        """
        if not self.is_host:
            raise _unsupported(self, f"its buffers are on {self.device}",
                               "call .to('cpu') first.")
        out = _to_numpy(self)
        return out.copy() if copy and (out.base is not None or not out.flags.writeable) else out


def _unpickle(raw: Any, buffers: Any, members: Any, seq_lens: Any) -> Tensor:
    """Rebuild a pickled tensor; received host memory becomes its cpu Buffers in place.

    Raises:
        HurrayFormatError: a state that does not describe a tensor (not bytes, the wrong
            number or sizes of buffers, bad members).
    """
    if not isinstance(raw, bytes) or not isinstance(buffers, list) or not isinstance(
            members, list) or not (seq_lens is None or isinstance(seq_lens, np.ndarray)):
        raise HurrayFormatError("a pickled Tensor's state is not (descriptor bytes, buffer "
                                "list, member list, seq_lens)", field="pickle",
                                fix="unpickle only data that Tensor pickling produced.")
    t = Tensor(raw, buffers, members)
    t.seq_lens = seq_lens
    return t


_SCHEMES = {0x01: "per_tensor", 0x02: "per_channel", 0x03: "per_block", 0x04: "nf4",
            0x05: "mxfp"}
_INDEX_FIX = "index t.materialize() (dense row-major, dequantized) instead."


def _scheme_label(q: Any) -> str:
    """``per_block(axis=1, block_size=32)``: the scheme as hg.quantize names it."""
    name = _SCHEMES.get(q.SCHEME, f"scheme_0x{q.SCHEME:02X}")
    fields = [f"{k}={getattr(q, k)}" for k in ("axis", "block_size", "scale", "zero_point")
              if hasattr(q, k)]
    return f"{name}({', '.join(fields)})"


def _layout_label(t: Tensor) -> str:
    lay = t.layout
    if isinstance(lay, Strided):
        return f"strided{tuple(lay.strides)}"
    return t.layout_name


def _unindexable(t: Tensor) -> str | None:
    """Why ``t`` cannot be indexed as a view, or None."""
    desc = t.descriptor
    if desc.layout_tag not in (0x01, 0x02, 0x03):
        return f"layout {t.layout_name} has no view of a slice"
    if desc.quantization is not None:
        return "a quantized tensor's parameters cover the whole tensor"
    if None in desc.shape:
        return "the shape has a dynamic dimension"
    if not desc.dtype.interpretable:
        return f"{desc.dtype.name} elements cannot be interpreted"
    return None


def _to_args(t: Tensor, device: Any, dtype: Any) -> tuple[Any, DType | None]:
    """``(device, target DType)`` of a :meth:`Tensor.to` call (see its docstring)."""
    if dtype is None and device is not None and not isinstance(device, Device):
        # t.to(np.float16): torch's to(dtype). A device spec string is only looked up by
        # name: NumPy's parse of "cpu" would raise (and cost microseconds) on every move.
        named = named_dtype(device) if isinstance(device, str) else coerce_dtype(device)
        if named is not None:
            return None, named
    if isinstance(dtype, MemoryClass) or (
            isinstance(dtype, str) and dtype.strip().upper() in MemoryClass.__members__):
        label = MemoryClass.parse(dtype).label
        raise ArgumentTypeError(
            f"t.to(device, {dtype!r}): the second argument is the dtype (torch's order), and "
            f"{label} is a memory class", fix=f"pass memory_class={label!r}.")
    return device, None if dtype is None else as_dtype(dtype)


def _out_bytes(t: Tensor, target: DType) -> int:
    shape = t.shape
    if None in shape:
        return 0
    return buffer_size(target, math.prod([int(d) for d in shape if d is not None]))


def _unsupported(t: Tensor, why: str, fix: str) -> UnsupportedOpError:
    return UnsupportedOpError(f"cannot convert {t!r} to NumPy: {why}", fix=fix)


def _to_numpy(t: Tensor) -> np.ndarray:
    desc, dtype = t.descriptor, t.dtype
    if t.is_composite:
        raise _unsupported(t, "a composite head has no data of its own",
                           "convert each of t.members instead.")
    if desc.quantization is not None:
        raise _unsupported(t, "the tensor is quantized",
                           "dequantize it first (hurray_gpu dequantization kernels).")
    if desc.layout_tag not in (0x01, 0x02, 0x03):
        raise _unsupported(t, f"layout {t.layout_name} is not row-major, col-major or strided",
                           "transcode it to row-major first.")
    if None in desc.shape:
        raise _unsupported(t, "the shape has a dynamic dimension", "resolve the shape first.")
    if not dtype.interpretable or dtype.numpy is None:
        raise _unsupported(t, f"{dtype.name} has no NumPy dtype",
                           "read the raw bytes from t.buffers instead.")
    shape = tuple(int(d) for d in desc.shape)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    buf, off = t.buffers[0].array, int(desc.byte_offset)
    if desc.layout_tag == 0x01:
        return unpack(buf[off:], dtype, count).reshape(shape)
    if desc.layout_tag == 0x02:
        return unpack(buf[off:], dtype, count).reshape(shape, order="F")
    return _strided(buf, dtype, shape, tuple(desc.layout.strides), off, count)


def _strided(buf: np.ndarray, dtype: DType, shape: tuple[int, ...], strides: tuple[int, ...],
             byte_offset: int, count: int) -> np.ndarray:
    """A strided view (packed types: a gather); offsets are in elements from byte_offset."""
    if count == 0:
        return np.empty(shape, dtype=dtype.numpy)
    lo = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True))
    hi = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True))
    if dtype.sub_byte:
        offsets = np.zeros(shape, dtype=np.int64)
        for axis, (d, s) in enumerate(zip(shape, strides, strict=True)):
            idx = np.arange(d, dtype=np.int64) * s
            offsets += idx.reshape((d,) + (1,) * (len(shape) - axis - 1))
        per, group = dtype.packing_group
        base = byte_offset // group * per  # byte_offset is byte- (6-bit: group-) aligned
        if base + lo < 0:
            raise HurrayFormatError("strided element lies before the start of buffer 0",
                                    field="strides", fix="fix the strides or byte_offset.")
        flat = unpack(buf, dtype, base + hi + 1, strict=False)
        return flat[offsets + base]
    size = dtype.bits // 8
    start = byte_offset + lo * size
    if start < 0:
        raise HurrayFormatError("strided element lies before the start of buffer 0",
                                field="strides", fix="fix the strides or byte_offset.")
    flat = unpack(buf[start:], dtype, hi - lo + 1)
    # A read-only strided view of the buffer (no gather): writes through overlapping or
    # zero strides would alias, so the view is never writable (numpy(copy=True) copies).
    return np.lib.stride_tricks.as_strided(flat[-lo:], shape, [s * size for s in strides],
                                           writeable=False)


parts.register_tensor_class(Tensor, Tensor._build)
