"""DLPack export: ``Tensor.__dlpack__`` builds a (versioned or legacy) capsule over the buffers.

Zero-copy: the DLTensor points at buffer 0 with the descriptor's byte_offset applied; the
capsule keeps the tensor alive until the consumer calls the deleter (or drops the capsule).
"""

from __future__ import annotations

import contextlib
from typing import Any

from hurray_gpu.format.descriptor.buffers import DeviceTag
from hurray_gpu.sync.dlpack_capsule import NAME_LEGACY, NAME_VERSIONED, Template, live_exports
from hurray_gpu.sync.dlpack_types import DLPACK_VERSION, KDL_CPU, DLPackError, dlpack_device

__all__ = ["NAME_LEGACY", "NAME_VERSIONED", "export", "live_exports"]


def _consumer_version(max_version: Any) -> tuple[int, int] | None:
    """The version to produce (None: the legacy unversioned capsule)."""
    if max_version is None:
        return None
    try:
        major, minor = (int(v) for v in max_version)
    except (TypeError, ValueError):
        raise DLPackError(f"max_version must be a (major, minor) pair, got {max_version!r}",
                          fix="pass max_version=(1, 1) or None.") from None
    if major < 1:
        return None
    return DLPACK_VERSION if (major, minor) >= DLPACK_VERSION else (1, 0)


def check_stream(device_type: int, stream: Any) -> None:
    """Reject stream values the DLPack convention does not allow for ``device_type``.

    Raises:
        DLPackError: a stream for the CPU other than None/-1, or a non-integer stream.
    """
    if stream is None:
        return
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise DLPackError(f"stream must be None or an int, got {stream!r}",
                          fix="pass the consumer stream's integer handle, -1 or None.")
    if device_type == KDL_CPU and stream != -1:
        raise DLPackError(f"stream={stream} is not valid for a CPU tensor",
                          fix="pass stream=None (or -1) for CPU tensors.")


def export(t: Any, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
           copy: bool | None = None) -> Any:
    """Implement ``Tensor.__dlpack__``; see :meth:`hurray_gpu.Tensor.__dlpack__`."""
    if copy not in (None, True, False):
        raise DLPackError(f"copy must be None, True or False, got {copy!r}",
                          fix="pass copy=None.")
    version = _consumer_version(max_version)
    own = dlpack_device(t)
    check_stream(own[0], stream)
    copied = False
    if dl_device is not None and tuple(dl_device) != own:
        if tuple(dl_device) != (KDL_CPU, 0) or copy is False:
            raise DLPackError(f"cannot export a tensor on DLPack device {own} to {dl_device}",
                              fix="export on its own device, or pass dl_device=(1, 0) with "
                                  "copy=True or None for a host copy.")
        t, copied = t.to("cpu"), True
    if not t.is_host:
        tag = t.descriptor.buffers[0].device_tag
        if tag in (DeviceTag.CUDA, DeviceTag.ROCM):
            from hurray_gpu.sync.dlpack_cuda import device_view

            # Stream ordering happens per export, so device templates are not cached.
            return Template(device_view(t, stream, version, copy), version, copied)()
        raise DLPackError(
            f"{t.device} buffers are opaque handles, not pointers DLPack consumers can use",
            fix="call .to('cpu') first, or __dlpack__(dl_device=(1, 0), copy=True).")
    from hurray_gpu.sync.dlpack_host import host_view

    view = host_view(t, version, copy)
    template = Template(view, version, copied)
    if not (copied or view["copied"]) and copy is None and dl_device is None:
        _remember(t, max_version, template)
    return template()


def _remember(t: Any, max_version: Any, template: Template) -> None:
    """Cache the template on the (immutable) tensor for the next export with these args."""
    cache = getattr(t, "_dl", None)
    if cache is None:
        cache = {}
        object.__setattr__(t, "_dl", cache)
    with contextlib.suppress(TypeError):  # an unhashable max_version (a list): not cached
        cache[max_version] = template
