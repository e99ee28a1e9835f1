"""The Tensor: a validated TensorDescriptor plus its buffers (host uint8 arrays or Buffers).

Composite heads hold no buffers; their members ride along in ``Tensor.members``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .buffer import Buffer
from .errors import HurrayFormatError, UnsupportedOpError
from .format.dtypes import DType, from_numpy_dtype
from .format.packing import as_bytes, pack, unpack
from .sync.tensor_api import TensorSyncMixin

LAYOUT_NAMES = {0x01: "row_major", 0x02: "col_major", 0x03: "strided", 0x04: "tiled",
                0x05: "morton", 0x06: "coo", 0x07: "csr", 0x08: "csc", 0x09: "csf",
                0x0A: "block_paged", 0x0B: "composite", 0x40: "hilbert"}
_MAX_HOST_ALIGN = 1 << 21


def layout_name(tag: int) -> str:
    """The python-binding name of a layout tag (``"extension"`` for 0xF0-0xFE)."""
    if tag in LAYOUT_NAMES:
        return LAYOUT_NAMES[tag]
    return "extension" if 0xF0 <= tag <= 0xFE else f"unknown_0x{tag:02X}"


def _to_host(buf: Any, index: int, handle: Any) -> np.ndarray:
    from .io._memory import aligned_copy

    try:
        data = as_bytes(buf)
    except HurrayFormatError:
        raise
    except (TypeError, ValueError) as exc:
        raise HurrayFormatError(f"buffers[{index}] is not bytes-like ({exc})",
                                field=f"buffers[{index}]",
                                fix="pass bytes, memoryview or NumPy arrays.") from None
    if data.size != handle.byte_size:
        raise HurrayFormatError(
            f"buffers[{index}] holds {data.size} bytes but the descriptor declares byte_size "
            f"{handle.byte_size}", field=f"buffers[{index}].byte_size",
            fix="pass exactly byte_size bytes for every buffer, in buffer-table order.")
    # Keep the declared alignment true for host memory (copying only when it is not).
    return aligned_copy(data, min(max(handle.alignment, 64), _MAX_HOST_ALIGN))


class Tensor(TensorSyncMixin):
    """A Hurray tensor: descriptor + buffers (+ members for a composite head).

    Build one with :meth:`from_numpy` or :meth:`from_parts` (the constructor is the same as
    ``from_parts``), and move it with :meth:`to`. On the host (the cpu device) buffers are 1-D
    uint8 NumPy arrays, possibly read-only views of a memory-mapped file; on any other device
    they are :class:`~hurray_gpu.buffer.Buffer` objects.
    """

    # _sync: handoff state (sync/handoff.py); _dl: DLPack export templates (sync/dlpack.py).
    __slots__ = ("_descriptor", "_buffers", "_members", "_raw", "_place", "_sync", "_dl")

    def __init__(self, descriptor: Any, buffers: Sequence[Any] = (),
                 members: Sequence[Tensor] = ()) -> None:
        from .io import _codec
        from .io.composite import validate_members

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
        place = None
        if any(isinstance(b, Buffer) for b in buffers):
            from .tensor_device import tensor_on

            place, host = tensor_on(desc, buffers)
        else:
            host = [_to_host(b, i, h) for i, (b, h) in enumerate(zip(buffers, handles,
                                                                     strict=True))]
        members = list(members)
        if any(not isinstance(m, Tensor) for m in members):
            raise HurrayFormatError("composite members must be Tensor objects", field="members",
                                    fix="wrap each member with Tensor.from_parts/from_numpy.")
        if _codec.is_head(desc):
            validate_members(desc, [m.descriptor for m in members])
        elif members:
            raise HurrayFormatError("only a composite head (layout 0x0B) has members",
                                    field="members", fix="drop the members argument.")
        self._descriptor, self._buffers = desc, tuple(host)
        self._members, self._raw, self._place = tuple(members), raw, place
        self._sync: Any = None  # handoff state: set only on tensors Tensor.handoff() returns

    @classmethod
    def from_parts(cls, descriptor: Any, buffers: Sequence[Any] = (),
                   members: Sequence[Tensor] = ()) -> Tensor:
        """Build a tensor from a descriptor and its buffers, validating both.

        Args:
            descriptor: descriptor bytes (decoded strictly) or a TensorDescriptor.
            buffers: one bytes-like object or NumPy array per buffer-table entry; each must
                hold exactly its handle's byte_size. Misaligned host memory is copied to
                meet the handle's alignment; aligned memory is used without a copy. Or
                Buffers, all on one device and memory class that every handle declares.
            members: for a composite head, its complete member tensors in order.

        Returns:
            The Tensor.

        Raises:
            HurrayFormatError: malformed descriptor, wrong buffer count or size, or a
                composite whose members break the composite rules.
        """
        return cls(descriptor, buffers, members)

    @classmethod
    def _trusted(cls, desc: Any, buffers: Sequence[Any], *, members: Sequence[Tensor] = (),
                 raw: bytes | None = None, place: tuple[Any, Any] | None = None) -> Tensor:
        """Wrap parts the io readers have already validated (sizes came from the handles)."""
        from .io import _codec

        self = object.__new__(cls)
        self._descriptor, self._buffers = desc, tuple(buffers)
        self._members, self._place = tuple(members), place
        self._raw = raw if raw is not None else _codec.encode(desc)
        self._sync = None
        return self

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
        from .format.descriptor.model import TensorDescriptor

        if order not in ("C", "F"):
            raise HurrayFormatError(f"order must be 'C' or 'F', got {order!r}", field="order",
                                    fix="use order='C' (row-major) or order='F' (col-major).")
        arr = np.asarray(array)
        dtype = from_numpy_dtype(arr.dtype)
        col = order == "F" and arr.ndim > 1
        data = pack(arr.T if col else arr, dtype)
        desc = TensorDescriptor.dense(dtype, arr.shape, col_major=col)
        return cls(desc, [data])

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
    def buffers(self) -> tuple[Any, ...]:
        """The buffers in buffer-table order: 1-D uint8 arrays on the host, else Buffers.

        This is where every hurray_gpu op obtains a tensor's memory, so a handed-off tensor
        the consumer did not :meth:`accept` is accepted here, on the current stream.
        """
        try:
            state = self._sync
        except AttributeError:  # made without __init__/_trusted (e.g. unpickled)
            state = None
        if state is not None:
            from .sync.handoff import on_use

            on_use(self, state)
        return self._buffers

    @property
    def device(self) -> Any:
        """The Device holding the buffers (the cpu device for host tensors)."""
        from .tensor_device import place_of

        return place_of(self)[0]

    @property
    def memory_class(self) -> Any:
        """The MemoryClass of the memory holding the buffers (standard for host arrays)."""
        from .tensor_device import place_of

        return place_of(self)[1]

    @property
    def is_host(self) -> bool:
        """True when the buffers are host arrays (the cpu device, any memory class)."""
        return not any(isinstance(b, Buffer) for b in self._buffers) and all(
            m.is_host for m in self._members)

    def to(self, device: Any, memory_class: Any = "standard", *,
           progress: bool | None = None) -> Tensor:
        """Copy every buffer (members too) to ``device``; bit-exact, descriptor re-declared.

        The result's buffer handles carry the device's device_tag and ``memory_class``,
        sync_mode 0, and alignment >= 4096 off the CPU (64 on it). Same-device copies stay on
        the device; host memory moves by direct copyin/copyout; other pairs are staged through
        the host one bounded chunk at a time.

        Args:
            device: a Device or spec (``"cpu"``, ``"opencl:0"``, ``"vulkan"``...).
            memory_class: ``"standard"``, ``"host_pinned"``, ``"unified"``, ``"peer"`` or a
                MemoryClass the device offers.
            progress: True/False force a progress bar on/off; None shows one for large
                transfers on a terminal (``HURRAY_GPU_PROGRESS=0`` turns that off).

        Returns:
            ``self`` when already there (same device, class and handles), else a new Tensor.

        Raises:
            BackendUnavailableError: the device cannot be opened.
            UnsupportedOpError: the device does not offer ``memory_class``.
            OutOfMemoryError: the device has no room (checked before allocating).
        """
        from .tensor_device import to_device

        return to_device(self, device, memory_class, progress)

    def dequantize(self, dtype: str = "float32", device: Any = None, *,
                   seq_lens: Any = None) -> Tensor:
        """Dequantize on this tensor's device; see :func:`hurray_gpu.ops.dequantize`."""
        from .ops import dequantize

        return dequantize(self, dtype, device, seq_lens=seq_lens)

    def unpack(self, dtype: str | None = None, device: Any = None) -> Tensor:
        """Unpack sub-byte or small-float data on the device; see :func:`hurray_gpu.ops.unpack`."""
        from .ops import unpack as unpack_op

        return unpack_op(self, dtype, device)

    def materialize(self, dtype: str | None = None, *, seq_lens: Any = None) -> Any:
        """Dense row-major copy on this device; see :func:`hurray_gpu.ops.materialize`."""
        from .ops import materialize

        return materialize(self, dtype, seq_lens=seq_lens)

    @property
    def members(self) -> tuple[Tensor, ...]:
        """A composite head's members (empty for every other tensor)."""
        return self._members

    @property
    def dtype(self) -> DType:
        """The storage element type."""
        return self._descriptor.dtype

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
        return self._descriptor.layout_tag == 0x0B

    @property
    def nbytes(self) -> int:
        """Total bytes of this tensor's buffers (members not included)."""
        return sum(int(h.byte_size) for h in self._descriptor.buffers)

    def __repr__(self) -> str:
        sizes = [int(h.byte_size) for h in self._descriptor.buffers]
        extra = f", members={len(self._members)}" if self.is_composite else ""
        if self._place is not None:
            extra += f", device={self._place[0].spec}, memory_class={self._place[1].label}"
        return (f"Tensor(dtype={self.dtype.name}, shape={self.shape}, "
                f"layout={self.layout_name}, buffers={sizes}{extra})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return (self._raw == other._raw and len(self._buffers) == len(other._buffers)
                and self._place == other._place
                and all(np.array_equal(_host_bytes(a), _host_bytes(b))
                        for a, b in zip(self.buffers, other.buffers, strict=True))
                and self._members == other._members)

    __hash__ = None  # type: ignore[assignment]

    def numpy(self, *, copy: bool = False) -> np.ndarray:
        """Decode a dense, unquantized row-major, column-major or strided tensor to NumPy.

        Args:
            copy: always return a fresh writable array (otherwise the result may be a view of
                the buffer, read-only when the buffer is).

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


def _host_bytes(buf: Any) -> np.ndarray:
    """Buffer contents as host bytes (a device Buffer is copied out; only __eq__ needs it)."""
    return buf.numpy() if isinstance(buf, Buffer) else np.asarray(buf)


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
    buf, off = t.buffers[0], int(desc.byte_offset)
    if desc.layout_tag == 0x01:
        return unpack(buf[off:], dtype, count).reshape(shape)
    if desc.layout_tag == 0x02:
        return unpack(buf[off:], dtype, count).reshape(shape, order="F")
    return _strided(buf, dtype, shape, tuple(desc.layout.strides), off, count)


def _strided(buf: np.ndarray, dtype: DType, shape: tuple[int, ...], strides: tuple[int, ...],
             byte_offset: int, count: int) -> np.ndarray:
    """Gather a strided view: element offsets are in logical elements from byte_offset."""
    if count == 0:
        return np.empty(shape, dtype=dtype.numpy)
    lo = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True))
    hi = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides, strict=True))
    offsets = np.zeros(shape, dtype=np.int64)
    for axis, (d, s) in enumerate(zip(shape, strides, strict=True)):
        idx = np.arange(d, dtype=np.int64) * s
        offsets += idx.reshape((d,) + (1,) * (len(shape) - axis - 1))
    if dtype.sub_byte:
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
    return flat[offsets - lo]
