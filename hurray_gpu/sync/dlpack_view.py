"""Explicit DLPack exporters for consumers with their own rules: a same-width unsigned view
(NumPy, torch: no bf16/fp8) or DLPack 1.1 dtype codes in a legacy capsule (JAX), zero-copy.
"""

from __future__ import annotations

from typing import Any

from hurray_gpu.sync.dlpack import _consumer_version, check_stream
from hurray_gpu.sync.dlpack_capsule import Template
from hurray_gpu.sync.dlpack_host import host_view
from hurray_gpu.sync.dlpack_types import DLPACK_VERSION, DLPackError

__all__ = ["DLPackView", "dlpack_view"]

_UINT_CODE = 1


class DLPackView:
    """Exports a host tensor's bytes with a re-tagged dtype or newer dtype codes.

    Build one with :func:`dlpack_view`; pass it to ``np/torch/jax.from_dlpack``.
    """

    __slots__ = ("tensor", "as_uint", "codes", "_templates")

    def __init__(self, tensor: Any, as_uint: bool, codes: tuple[int, int] | None) -> None:
        self.tensor, self.as_uint, self.codes = tensor, as_uint, codes
        self._templates: dict[Any, Template] = {}

    def __dlpack_device__(self) -> tuple[int, int]:
        """The tensor's own DLPack device."""
        return self.tensor.__dlpack_device__()  # type: ignore[no-any-return]

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        """A zero-copy capsule per the view's rules (see :func:`dlpack_view`).

        Raises:
            BufferError: a copy or another device was asked for, or the tensor cannot be
                exported (see ``Tensor.__dlpack__``).
        """
        if copy or (dl_device is not None and tuple(dl_device) != self.__dlpack_device__()):
            raise DLPackError("a DLPack view is zero-copy on the tensor's own device",
                              fix="call Tensor.__dlpack__ for copies.")
        check_stream(self.__dlpack_device__()[0], stream)
        try:
            template = self._templates.get(max_version)
        except TypeError:  # an unhashable max_version: not cached
            return self._template(max_version)()
        if template is None:
            template = self._templates[max_version] = self._template(max_version)
        return template()

    def _template(self, max_version: Any) -> Template:
        version = _consumer_version(max_version)
        codes = self.codes or version or (0, 0)
        if version is not None and codes > version:
            codes = version  # a versioned consumer gets exactly the codes it understands
        t = self.tensor
        if self.as_uint:
            dtype = t.dtype
            if dtype.sub_byte or dtype.bits not in (8, 16, 32, 64) or dtype.name == "bool":
                raise DLPackError(f"{dtype.name} has no same-width unsigned view",
                                  fix="call .unpack('float32') first.")
            view = host_view(t, DLPACK_VERSION, False)
            view["code"], view["bits"] = _UINT_CODE, dtype.bits
        else:
            view = host_view(t, codes, False)
        return Template(view, version, False)


def dlpack_view(tensor: Any, *, as_uint: bool = False,
                codes: tuple[int, int] | None = None) -> DLPackView:
    """An exporter of ``tensor`` for consumers with their own DLPack rules (zero-copy).

    Args:
        tensor: a host Tensor (row-major, col-major or strided).
        as_uint: tag the data as the same-width unsigned integer (bf16 -> uint16, fp8 ->
            uint8): for NumPy and torch, which re-tag it with ``.view(dtype)``.
        codes: the DLPack version whose dtype codes to use even in a legacy capsule:
            ``(1, 1)`` gives JAX (which asks for the legacy capsule) the fp8 codes it reads.

    Returns:
        An object with ``__dlpack__`` and ``__dlpack_device__``.

    Raises:
        DLPackError: a device tensor, or ``codes`` that is not a (major, minor) pair.
    """
    if not tensor.is_host:
        raise DLPackError("DLPack views are for host tensors",
                          fix="call .to('cpu') first, or export the tensor itself.")
    if codes is not None:
        if (not isinstance(codes, tuple) or len(codes) != 2
                or not all(isinstance(v, int) for v in codes)):
            raise DLPackError(f"codes must be a (major, minor) pair, got {codes!r}",
                              fix="pass codes=(1, 1).")
        codes = min(codes, DLPACK_VERSION)
    return DLPackView(tensor, as_uint, codes)
