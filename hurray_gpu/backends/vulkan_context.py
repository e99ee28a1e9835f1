"""Vulkan instance, logical device, compute queue, device memory and one-shot submission.

The layer under ``vulkan_sync`` (streams, events) and ``vulkan`` (the Device); it imports
neither, and imports the optional ``vulkan`` package only when a device is first opened.
Submissions go to the current stream when streams exist (the ``current`` hook they install).

Memory: host-visible memory is mapped once and copied with NumPy; device-only memory goes
through a bounded host-visible staging buffer and ``vkCmdCopyBuffer``, as do device-to-device
copies.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from hurray_gpu.errors import BackendUnavailableError, DeviceError, UnsupportedOpError
from hurray_gpu.runtime.memory import MemoryClass

VK_SUCCESS = 0
# Lavapipe needs seconds for a kernel over hundreds of MiB; a hung GPU must still surface.
FENCE_TIMEOUT_NS = 300 * 10**9
API_VERSION = (1, 2, 0)  # timeline semaphores (streams and events) are Vulkan 1.2 core
VK_API_1_2 = (1 << 22) | (2 << 12)
# Hurray PEER memory on Vulkan is exportable device memory (an opaque POSIX fd).
EXTERNAL_FD_EXTENSION = "VK_KHR_external_memory_fd"
HANDLE_OPAQUE_FD = 0x1  # VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT
EXPORTABLE = 0x2  # VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT
IMPORTABLE = 0x4  # VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT
BUFFER_USAGE = 0x20 | 0x1 | 0x2  # STORAGE_BUFFER | TRANSFER_SRC | TRANSFER_DST
_FIX_INSTALL = "pip install 'hurray_gpu[vulkan]' (and apt-get install libvulkan1 mesa-vulkan-drivers)."

_vk: Any = None


def load_vulkan() -> Any:
    """Import the ``vulkan`` cffi package once.

    Returns:
        The ``vulkan`` module.

    Raises:
        BackendUnavailableError: the package or the Vulkan loader is missing.
    """
    global _vk
    if _vk is None:
        try:
            import vulkan
        except ImportError as exc:
            raise BackendUnavailableError(
                f"the Vulkan backend needs the `vulkan` package ({exc}).", fix=_FIX_INSTALL
            ) from exc
        except OSError as exc:  # the cffi module dlopens libvulkan at import time
            raise BackendUnavailableError(
                f"the Vulkan loader libvulkan could not be loaded ({exc}).", fix=_FIX_INSTALL
            ) from exc
        _vk = vulkan
    return _vk


def count_devices() -> int:
    """How many Vulkan physical devices the loader reports (0 when no driver initialises).

    Raises:
        BackendUnavailableError: the ``vulkan`` package or the loader library is missing.
    """
    vk = load_vulkan()
    app = vk.VkApplicationInfo(
        sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, apiVersion=vk.VK_MAKE_VERSION(*API_VERSION))
    info = vk.VkInstanceCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app)
    try:
        instance = vk.vkCreateInstance(info, None)
    except (vk.VkError, vk.VkException):
        return 0  # no ICD could be initialised: zero devices, not an error
    try:
        return len(vk.vkEnumeratePhysicalDevices(instance))
    except (vk.VkError, vk.VkException):
        return 0
    finally:
        vk.vkDestroyInstance(instance, None)


def check(status: int, what: str = "Vulkan call") -> None:
    """Raise DeviceError unless ``status`` is VK_SUCCESS.

    Args:
        status: a VkResult.
        what: the call that returned it.

    Raises:
        DeviceError: for any status other than VK_SUCCESS.
    """
    if status == VK_SUCCESS:
        return
    name = _status_name(status)
    raise DeviceError(
        f"{what} failed with {name} ({status}).",
        fix="check the Vulkan driver (vulkaninfo), update it, or pick another device.")


def _status_name(status: int) -> str:
    if _vk is None:
        return "VkResult"
    cls = _vk.exception_codes.get(status)
    return cls.__name__ if cls is not None else "VkResult"


_CODE_OF: dict[type, int] = {}


def raise_for(exc: BaseException, what: str) -> NoReturn:
    """Re-raise a ``vulkan`` package exception as ``check()``'s DeviceError."""
    if not _CODE_OF:
        _CODE_OF.update({cls: code for code, cls in _vk.exception_codes.items()})
    try:
        check(_CODE_OF.get(type(exc), -13), what)  # -13 is VK_ERROR_UNKNOWN
    except DeviceError as err:
        raise err from exc
    raise DeviceError(f"{what} failed: {exc!r}",
                      fix="check the Vulkan driver with vulkaninfo, and retry on device='cpu' "
                          "to tell a driver fault from a bad argument.") from exc  # a VK_SUCCESS-mapped exception


def call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a ``vulkan`` wrapper, turning its exceptions into ``check()`` errors."""
    try:
        return fn(*args)
    except (_vk.VkError, _vk.VkException) as exc:
        raise_for(exc, getattr(fn, "__name__", "Vulkan call"))


# -- timeline-semaphore submission, shared with the stream threads of vulkan_sync -----------


# Reentrant: a collection can still start inside no_collection's own bookkeeping (3.12+ run it
# at a call), and the section it finalises may nest another; the count keeps both balanced.
_HOLD_LOCK = threading.RLock()
_holds = [0, False]  # sections inside no_collection; whether it turned the collector off


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """Hold off Python's automatic cyclic collection from taking a stream's next timeline value
    until its submission is queued. A collection there runs ``__del__`` methods (a canary
    allocator's free records an event on the same stream), whose nested submission would take
    the next value and be submitted first: the timeline is then signalled backwards (lavapipe
    lowers the counter) and the stream never reads as done. Explicit ``gc.collect()`` still
    runs; other threads' collections wait until the section ends."""
    with _HOLD_LOCK:
        if _holds[0] == 0:
            _holds[1] = gc.isenabled()
            gc.disable()
        _holds[0] += 1
    try:
        yield
    finally:
        with _HOLD_LOCK:
            _holds[0] -= 1
            if _holds[0] == 0 and _holds[1]:
                gc.enable()


def submit_info(ctx: Any, cmd: Any, waits: list[tuple[Any, int]],
                signal: tuple[Any, int] | None) -> Any:
    """A VkSubmitInfo for ``cmd`` waiting on timeline ``waits``, signalling ``signal``.

    The returned struct keeps every array it points to referenced (cffi lifetimes).
    """
    vk = ctx.vk
    fields: dict[str, Any] = {"commandBufferCount": 1, "pCommandBuffers": [cmd]}
    if waits or signal is not None:
        signals = [signal] if signal is not None else []
        chain = ctx._info(
            "TIMELINE_SEMAPHORE_SUBMIT_INFO", waitSemaphoreValueCount=len(waits),
            pWaitSemaphoreValues=[v for _, v in waits] or None,
            signalSemaphoreValueCount=len(signals),
            pSignalSemaphoreValues=[v for _, v in signals] or None)
        fields.update(
            pNext=chain, waitSemaphoreCount=len(waits),
            pWaitSemaphores=[s for s, _ in waits] or None,
            pWaitDstStageMask=[vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT] * len(waits) or None,
            signalSemaphoreCount=len(signals), pSignalSemaphores=[s for s, _ in signals] or None)
    return ctx._info("SUBMIT_INFO", **fields)


def host_signal(ctx: Any, semaphore: Any, value: int) -> None:
    """Signal a timeline semaphore to ``value`` from the host (vkSignalSemaphore)."""
    info = ctx._info("SEMAPHORE_SIGNAL_INFO", semaphore=semaphore, value=value)
    call(ctx.vk.vkSignalSemaphore, ctx.device, info)


class VulkanContext:
    """One logical device with one compute queue, a command pool and a fence.

    Args:
        index: which physical device to open (in enumeration order).

    Raises:
        BackendUnavailableError: no Vulkan device, or no compute queue, at ``index``.
        DeviceError: a driver call failed.
    """

    def __init__(self, index: int = 0) -> None:
        self.vk = vk = load_vulkan()
        self.lock = threading.RLock()  # the command pool, staging and the fault word
        # vkQueueSubmit needs the queue externally synced; stream workers take only this lock
        # (briefly), never ``lock``, so a thread holding ``lock`` may wait on a stream.
        self.queue_lock = threading.Lock()
        self.current: Callable[[], Any] | None = None  # set by the first VkStream
        self.streams: weakref.WeakSet[Any] = weakref.WeakSet()
        self.lanes: weakref.WeakSet[Any] = weakref.WeakSet()  # the streams' timelines
        self.timeline = False
        self.instance = self._create_instance()
        devices = call(vk.vkEnumeratePhysicalDevices, self.instance)
        if not 0 <= index < len(devices):
            self._destroy_instance()
            raise BackendUnavailableError(
                f"Vulkan device index {index} does not exist ({len(devices)} found).",
                fix="apt-get install mesa-vulkan-drivers for lavapipe, or pick index 0.")
        self.physical = devices[index]
        self.props = vk.vkGetPhysicalDeviceProperties(self.physical)
        self.limits = self.props.limits
        self.memory_props = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.queue_family = self._find_compute_family()
        self.exportable = self.importable = False
        self.device = self._create_device()
        self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family, 0)
        self.command_pool = self._create_command_pool()
        self.fence = call(vk.vkCreateFence, self.device, self._info("FENCE_CREATE_INFO"), None)
        self.name = str(self.props.deviceName)

    def _info(self, kind: str, **fields: Any) -> Any:
        vk = self.vk
        words = [p.upper() if p == "khr" else p.title() for p in kind.lower().split("_")]
        ctor = getattr(vk, "Vk" + "".join(words))
        return ctor(sType=getattr(vk, "VK_STRUCTURE_TYPE_" + kind), **fields)

    def _create_instance(self) -> Any:
        vk = self.vk
        app = vk.VkApplicationInfo(
            sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO, pApplicationName="hurray_gpu",
            applicationVersion=1, pEngineName="hurray_gpu", engineVersion=1,
            apiVersion=vk.VK_MAKE_VERSION(*API_VERSION))
        info = vk.VkInstanceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app)
        try:
            return call(vk.vkCreateInstance, info, None)
        except DeviceError as exc:
            raise BackendUnavailableError(
                f"no Vulkan driver could be initialised ({exc}).",
                fix="apt-get install mesa-vulkan-drivers (lavapipe) or your GPU's Vulkan driver.",
            ) from exc

    def _find_compute_family(self) -> int:
        vk = self.vk
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        # A compute-only family avoids graphics scheduling; any compute family will do.
        compute = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        dedicated = [i for i in compute if not families[i].queueFlags & vk.VK_QUEUE_GRAPHICS_BIT]
        if not compute:
            self._destroy_instance()
            raise BackendUnavailableError(
                f"Vulkan device {self.props.deviceName} has no compute queue.",
                fix="pick another Vulkan device.")
        return (dedicated or compute)[0]

    def _create_device(self) -> Any:
        vk = self.vk
        priorities = [1.0]
        queue_info = self._info(
            "DEVICE_QUEUE_CREATE_INFO", queueFamilyIndex=self.queue_family, queueCount=1,
            pQueuePriorities=priorities)
        queue_infos = [queue_info]
        # Kernels index windows of big buffers; robust access keeps a stray index inside the
        # binding (the launch then reports it) instead of touching other memory.
        supported = vk.vkGetPhysicalDeviceFeatures(self.physical)
        self.robust = bool(supported.robustBufferAccess)
        # f64 arithmetic (the correctly rounded CR_* functions) where the device has it.
        self.fp64 = bool(supported.shaderFloat64)
        features = vk.VkPhysicalDeviceFeatures(robustBufferAccess=vk.VK_TRUE if self.robust else 0,
                                               shaderFloat64=vk.VK_TRUE if self.fp64 else 0)
        self.exportable = self._can_export()
        extensions = [EXTERNAL_FD_EXTENSION] if self.exportable else []
        self.timeline = self._has_timeline()
        chain = self._info("PHYSICAL_DEVICE_VULKAN_1_2_FEATURES",
                           timelineSemaphore=vk.VK_TRUE) if self.timeline else None
        info = self._info(
            "DEVICE_CREATE_INFO", queueCreateInfoCount=1, pQueueCreateInfos=queue_infos,
            pEnabledFeatures=features, enabledExtensionCount=len(extensions),
            ppEnabledExtensionNames=extensions or None, pNext=chain)
        return call(vk.vkCreateDevice, self.physical, info, None)

    def _has_timeline(self) -> bool:
        """Vulkan 1.2 timeline semaphores: what streams and events are built on."""
        vk = self.vk
        if int(self.props.apiVersion) < VK_API_1_2:
            return False
        f12 = self._info("PHYSICAL_DEVICE_VULKAN_1_2_FEATURES")
        vk.vkGetPhysicalDeviceFeatures2(
            self.physical, self._info("PHYSICAL_DEVICE_FEATURES_2", pNext=f12))
        return bool(f12.timelineSemaphore)

    def _can_export(self) -> bool:
        vk = self.vk
        names = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(self.physical,
                                                                                   None)}
        if EXTERNAL_FD_EXTENSION not in names:
            return False
        query = self._info("PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO", usage=BUFFER_USAGE,
                           handleType=HANDLE_OPAQUE_FD)
        props = vk.vkGetPhysicalDeviceExternalBufferProperties(self.physical, query)
        self.importable = bool(props.externalMemoryProperties.externalMemoryFeatures & IMPORTABLE)
        return bool(props.externalMemoryProperties.externalMemoryFeatures & EXPORTABLE)

    def _create_command_pool(self) -> Any:
        info = self._info(
            "COMMAND_POOL_CREATE_INFO", queueFamilyIndex=self.queue_family,
            flags=self.vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT)
        return call(self.vk.vkCreateCommandPool, self.device, info, None)

    # -- identity ---------------------------------------------------------------------------

    def identity(self) -> str:
        """Vendor, device id, driver version and name: what changes the pipeline binary."""
        p = self.props
        return f"{p.vendorID:#x}:{p.deviceID:#x}:{p.driverVersion:#x}:{p.apiVersion:#x}:{p.deviceName}"

    # -- memory -----------------------------------------------------------------------------

    def memory_type_flags(self) -> list[int]:
        """The property flags of every memory type, by index."""
        mp = self.memory_props
        return [mp.memoryTypes[i].propertyFlags for i in range(mp.memoryTypeCount)]

    def heap_size(self, type_index: int) -> int:
        """The size in bytes of the heap behind memory type ``type_index``."""
        heap = self.memory_props.memoryTypes[type_index].heapIndex
        return int(self.memory_props.memoryHeaps[heap].size)

    def create_buffer(self, nbytes: int, external: bool = False) -> tuple[Any, Any]:
        """Create an unbound storage/transfer buffer; returns (buffer, memory requirements).

        ``external`` makes it bindable to exportable (opaque fd) memory.
        """
        vk = self.vk
        chain = self._info("EXTERNAL_MEMORY_BUFFER_CREATE_INFO", handleTypes=HANDLE_OPAQUE_FD)
        info = self._info(
            "BUFFER_CREATE_INFO", size=nbytes, usage=BUFFER_USAGE,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE, pNext=chain if external else None)
        buffer = call(vk.vkCreateBuffer, self.device, info, None)
        return buffer, vk.vkGetBufferMemoryRequirements(self.device, buffer)

    def allocate_memory(self, size: int, type_index: int, export_for: Any = None) -> Any:
        """Allocate ``size`` bytes of memory type ``type_index``.

        With ``export_for`` (a buffer made with ``external=True``) the memory is a dedicated,
        fd-exportable allocation for that buffer.

        Raises:
            MemoryError: the driver is out of device or host memory (the allocator retries).
            DeviceError: any other failure.
        """
        vk = self.vk
        chain = None
        if export_for is not None:  # every struct of the chain stays referenced (cffi)
            dedicated = self._info("MEMORY_DEDICATED_ALLOCATE_INFO", buffer=export_for)
            chain = self._info("EXPORT_MEMORY_ALLOCATE_INFO", handleTypes=HANDLE_OPAQUE_FD,
                               pNext=dedicated)
        info = self._info("MEMORY_ALLOCATE_INFO", allocationSize=size, memoryTypeIndex=type_index,
                          pNext=chain)
        try:
            return vk.vkAllocateMemory(self.device, info, None)
        except (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory) as exc:
            raise MemoryError(f"vkAllocateMemory of {size} bytes: {type(exc).__name__}") from exc
        except (vk.VkError, vk.VkException) as exc:
            raise_for(exc, "vkAllocateMemory")

    def export_fd(self, memory: Any) -> int:
        """A new POSIX fd for exportable ``memory``; the caller owns (and closes) it."""
        vk = self.vk
        get_fd = vk.vkGetDeviceProcAddr(self.device, "vkGetMemoryFdKHR")
        info = self._info("MEMORY_GET_FD_INFO_KHR", memory=memory, handleType=HANDLE_OPAQUE_FD)
        return int(call(get_fd, self.device, info))

    def uuids(self) -> bytes:
        """deviceUUID + driverUUID (32 bytes): an opaque fd imports only where both match."""
        vk = self.vk
        ids = vk.VkPhysicalDeviceIDProperties(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES)
        vk.vkGetPhysicalDeviceProperties2(
            self.physical, self._info("PHYSICAL_DEVICE_PROPERTIES_2", pNext=ids))
        return bytes(vk.ffi.buffer(ids.deviceUUID)) + bytes(vk.ffi.buffer(ids.driverUUID))

    def import_fd(self, fd: int, size: int, type_index: int, buffer: Any) -> Any:
        """Import an opaque fd as ``size`` bytes of memory type ``type_index``, dedicated to
        ``buffer`` (made with ``external=True``), as the exporter allocated it.

        The driver owns ``fd`` once this returns; on an error the caller still does.

        Raises:
            DeviceError: the driver rejected the fd (VK_ERROR_INVALID_EXTERNAL_HANDLE...).
        """
        dedicated = self._info("MEMORY_DEDICATED_ALLOCATE_INFO", buffer=buffer)
        chain = self.vk.VkImportMemoryFdInfoKHR(
            sType=self.vk.VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
            handleType=HANDLE_OPAQUE_FD, fd=fd, pNext=dedicated)
        info = self._info("MEMORY_ALLOCATE_INFO", allocationSize=size, memoryTypeIndex=type_index,
                          pNext=chain)
        try:
            return call(self.vk.vkAllocateMemory, self.device, info, None)
        except KeyError as exc:  # a VkResult the vulkan package has no exception class for
            check(int(exc.args[0]), "vkAllocateMemory")

    # -- submission -------------------------------------------------------------------------

    def submit(self, record: Callable[[Any], None], *, cleanup: Callable[[], None] | None = None,
               wait: bool = True) -> None:
        """Record one command buffer with ``record(cmd)`` and submit it on the current stream.

        On the default stream (or without streams) the host waits for it. A non-default
        stream queues it in stream order and returns at once unless ``wait``.

        Args:
            record: records the commands into ``cmd``.
            cleanup: called once the work has completed (frees what ``record`` used).
            wait: for a non-default stream, block until the work has completed.
        """
        stream = self.current() if self.current is not None else None
        if stream is not None and not stream.is_default:
            stream.enqueue(record, cleanup=cleanup, wait=wait)
        else:
            self.submit_on(record, stream, cleanup)

    def submit_on(self, record: Callable[[Any], None], stream: Any,
                  cleanup: Callable[[], None] | None = None) -> int:
        """Submit on the calling thread and wait: the default stream's (or no stream's) way.

        Returns:
            The timeline value the submission signalled on ``stream`` (0 without a stream).
        """
        vk = self.vk
        try:
            waits = stream.take_waits() if stream is not None else []
            stream.host_wait(waits) if waits else None  # a FIFO queue must not block on them
            with self.lock:
                alloc = self._info(
                    "COMMAND_BUFFER_ALLOCATE_INFO", commandPool=self.command_pool,
                    level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1)
                cmd = call(vk.vkAllocateCommandBuffers, self.device, alloc)[0]
                signal = None
                try:
                    self.record_into(cmd, record)
                    with no_collection():  # no nested submission between value and submit
                        signal = stream.next_signal() if stream is not None else None
                        value = signal[1] if signal is not None else 0
                        info = submit_info(self, cmd, waits, signal)
                        call(vk.vkResetFences, self.device, 1, [self.fence])
                        with self.queue_lock:
                            call(vk.vkQueueSubmit, self.queue, 1, [info], self.fence)
                    signal = None
                    call(vk.vkWaitForFences, self.device, 1, [self.fence], vk.VK_TRUE,
                         FENCE_TIMEOUT_NS)
                finally:
                    if signal is not None:  # never submitted: waiters must not hang on it
                        host_signal(self, *signal)
                    vk.vkFreeCommandBuffers(self.device, self.command_pool, 1, [cmd])
        finally:
            if cleanup is not None:
                cleanup()
        return value

    def settle(self) -> None:
        """Order host access to mapped memory after the current stream's work and waits."""
        stream = self.current() if self.current is not None else None
        if stream is None:
            return
        stream.host_wait(stream.take_waits())
        if not stream.is_default:
            stream.synchronize()

    def record_into(self, cmd: Any, record: Callable[[Any], None]) -> None:
        """Begin ``cmd``, record the work between full memory barriers, end it."""
        vk = self.vk
        begin = self._info("COMMAND_BUFFER_BEGIN_INFO",
                           flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        call(vk.vkBeginCommandBuffer, cmd, begin)
        # Work of earlier submissions (copies, kernels) must be visible to this one,
        # and this one's writes to the host once the fence signals.
        self._barrier(cmd)
        record(cmd)
        self._barrier(cmd)
        call(vk.vkEndCommandBuffer, cmd)

    def _barrier(self, cmd: Any) -> None:
        vk = self.vk
        barrier = [self._info(
            "MEMORY_BARRIER", srcAccessMask=vk.VK_ACCESS_MEMORY_WRITE_BIT,
            dstAccessMask=vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT
            | vk.VK_ACCESS_HOST_READ_BIT)]
        vk.vkCmdPipelineBarrier(
            cmd, vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
            vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | vk.VK_PIPELINE_STAGE_HOST_BIT,
            0, 1, barrier, 0, None, 0, None)

    def wait_idle(self) -> None:
        """Block until every stream's queued work and the queue have finished."""
        for stream in list(self.streams):
            stream.drain()
        with no_collection(), self.queue_lock:  # a finaliser's copy would submit too
            call(self.vk.vkQueueWaitIdle, self.queue)

    def close(self) -> None:
        """Destroy the streams' semaphores, the fence, command pool, device and instance
        (idempotent)."""
        vk = self.vk
        if getattr(self, "device", None) is None:
            return
        lanes = list(self.lanes)
        for lane in lanes:  # every queued submission has run: no semaphore is waited on
            lane.close()
        for lane in lanes:
            lane.release()
        with self.lock:
            vk.vkDeviceWaitIdle(self.device)
            vk.vkDestroyFence(self.device, self.fence, None)
            vk.vkDestroyCommandPool(self.device, self.command_pool, None)
            vk.vkDestroyDevice(self.device, None)
            self.device = None
            self._destroy_instance()

    def _destroy_instance(self) -> None:
        if getattr(self, "instance", None) is not None:
            self.vk.vkDestroyInstance(self.instance, None)
            self.instance = None


# -- device memory ---------------------------------------------------------------------------

# Staging buffer size: big enough to amortise a submit, small enough to keep around per device.
STAGING_BYTES = 32 * 1024 * 1024
_STAGING: weakref.WeakKeyDictionary[VulkanContext, VulkanMemory] = weakref.WeakKeyDictionary()

DEVICE_LOCAL = 0x1
HOST_VISIBLE = 0x2
HOST_COHERENT = 0x4
HOST_CACHED = 0x8

# (required flags, preferred flags, avoided flags) per memory class.
CLASS_FLAGS: dict[MemoryClass, tuple[int, int, int]] = {
    MemoryClass.STANDARD: (DEVICE_LOCAL, 0, HOST_VISIBLE),
    MemoryClass.HOST_PINNED: (HOST_VISIBLE, HOST_COHERENT | HOST_CACHED, DEVICE_LOCAL),
    MemoryClass.UNIFIED: (DEVICE_LOCAL | HOST_VISIBLE, HOST_COHERENT, 0),
    # Exportable device memory for peers (opaque fd); never mapped: not CPU-accessible.
    MemoryClass.PEER: (DEVICE_LOCAL, 0, HOST_VISIBLE)}


def pick_memory_type(
    flags_by_type: list[int], type_bits: int, required: int, prefer: int = 0, avoid: int = 0
) -> int | None:
    """The best memory type index allowed by ``type_bits`` that has every ``required`` flag.

    Ranks by preferred flags present minus avoided flags present; ties go to the lower index
    (drivers list faster types first). Returns None when no type qualifies.
    """
    best, best_score = None, None
    for index, flags in enumerate(flags_by_type):
        if not type_bits >> index & 1 or flags & required != required:
            continue
        score = bin(flags & prefer).count("1") - bin(flags & avoid).count("1")
        if best_score is None or score > best_score:
            best, best_score = index, score
    return best


def offered_classes(ctx: VulkanContext) -> tuple[MemoryClass, ...]:
    """The memory classes for which this device has a suitable memory type."""
    flags = ctx.memory_type_flags()
    every = (1 << len(flags)) - 1
    return tuple(
        mclass for mclass, (required, _, _) in CLASS_FLAGS.items()
        if pick_memory_type(flags, every, required) is not None
        and (mclass != MemoryClass.PEER or ctx.exportable))


@dataclass(eq=False)
class VulkanMemory:
    """One VkBuffer bound to its own VkDeviceMemory; ``offset`` > 0 marks a view into it."""

    buffer: Any
    memory: Any
    size: int  # bytes of the VkBuffer (the request rounded up to whole 32-bit words)
    flags: int  # property flags of the memory type
    mapped: np.ndarray | None  # uint8 view of the whole mapping when host-visible
    offset: int = 0

    @property
    def coherent(self) -> bool:
        """True when host writes need no flush and device writes no invalidate."""
        return bool(self.flags & HOST_COHERENT)


def create_memory(ctx: VulkanContext, nbytes: int, mclass: MemoryClass) -> VulkanMemory:
    """Create a buffer of ``nbytes`` (rounded up to 4) of class ``mclass``, mapped if visible.

    Raises:
        UnsupportedOpError: no memory type fits the class.
        MemoryError: the driver is out of memory (the allocator empties its pool and retries).
        DeviceError: any other driver failure.
    """
    vk = ctx.vk
    size = -(-nbytes // 4) * 4  # GLSL sees every buffer as uint words
    peer = mclass == MemoryClass.PEER
    buffer, req = ctx.create_buffer(size, external=peer)
    try:
        required, prefer, avoid = CLASS_FLAGS[mclass]
        flags_by_type = ctx.memory_type_flags()
        index = pick_memory_type(flags_by_type, req.memoryTypeBits, required, prefer, avoid)
        if index is None:
            raise UnsupportedOpError(
                f"Vulkan device {ctx.name} has no memory type for {mclass.label} buffers",
                fix="use standard memory on this device.")
        memory = ctx.allocate_memory(req.size, index, export_for=buffer if peer else None)
    except BaseException:
        vk.vkDestroyBuffer(ctx.device, buffer, None)
        raise
    try:
        call(vk.vkBindBufferMemory, ctx.device, buffer, memory, 0)
        flags = flags_by_type[index]
        mapped = None
        if flags & HOST_VISIBLE and not peer:
            raw = call(vk.vkMapMemory, ctx.device, memory, 0, req.size, 0)
            mapped = np.frombuffer(raw, dtype=np.uint8)
    except BaseException:
        vk.vkDestroyBuffer(ctx.device, buffer, None)
        vk.vkFreeMemory(ctx.device, memory, None)
        raise
    return VulkanMemory(buffer, memory, size, flags, mapped)


def destroy_memory(ctx: VulkanContext, mem: VulkanMemory) -> None:
    """Unmap and free the memory and destroy its buffer."""
    vk = ctx.vk
    if mem.mapped is not None:
        mem.mapped = None
        vk.vkUnmapMemory(ctx.device, mem.memory)
    vk.vkDestroyBuffer(ctx.device, mem.buffer, None)
    vk.vkFreeMemory(ctx.device, mem.memory, None)


def window(mem: VulkanMemory, offset: int) -> VulkanMemory:
    """A view starting ``offset`` bytes into ``mem`` (sharing its buffer and mapping)."""
    return VulkanMemory(mem.buffer, mem.memory, mem.size, mem.flags, mem.mapped,
                        mem.offset + offset)


def _atom_range(ctx: VulkanContext, mem: VulkanMemory, nbytes: int) -> list[Any]:
    # Non-coherent flush/invalidate ranges must be multiples of nonCoherentAtomSize (or reach
    # the end of the allocation as VK_WHOLE_SIZE).
    atom = max(1, int(ctx.limits.nonCoherentAtomSize))
    start = mem.offset // atom * atom
    end = -(-(mem.offset + nbytes) // atom) * atom
    size = end - start if end < len(mem.mapped) else ctx.vk.VK_WHOLE_SIZE  # type: ignore[arg-type]
    return [ctx._info("MAPPED_MEMORY_RANGE", memory=mem.memory, offset=start, size=size)]


def write_memory(ctx: VulkanContext, mem: VulkanMemory, src: memoryview) -> None:
    """Copy all of ``src`` into the buffer starting at ``mem.offset``."""
    data = np.frombuffer(src, dtype=np.uint8)
    if mem.mapped is None:
        _staged(ctx, mem, data, upload=True)
    else:
        ctx.settle()  # the host writes after the current stream's work, like a copy on it
        _put(ctx, mem, data)


def read_memory(ctx: VulkanContext, dest: memoryview, mem: VulkanMemory) -> None:
    """Fill all of ``dest`` from the buffer starting at ``mem.offset``."""
    out = np.frombuffer(dest, dtype=np.uint8)
    if mem.mapped is None:
        _staged(ctx, mem, out, upload=False)
    else:
        ctx.settle()
        _get(ctx, out, mem)


def _put(ctx: VulkanContext, mem: VulkanMemory, data: np.ndarray) -> None:
    mem.mapped[mem.offset:mem.offset + data.size] = data  # type: ignore[index]
    if not mem.coherent:
        ranges = _atom_range(ctx, mem, data.size)
        call(ctx.vk.vkFlushMappedMemoryRanges, ctx.device, 1, ranges)


def _get(ctx: VulkanContext, out: np.ndarray, mem: VulkanMemory) -> None:
    if not mem.coherent:
        ranges = _atom_range(ctx, mem, out.size)
        call(ctx.vk.vkInvalidateMappedMemoryRanges, ctx.device, 1, ranges)
    out[:] = mem.mapped[mem.offset:mem.offset + out.size]  # type: ignore[index]


def _staging(ctx: VulkanContext) -> VulkanMemory:
    staging = _STAGING.get(ctx)
    if staging is None:
        staging = _STAGING[ctx] = create_memory(ctx, STAGING_BYTES, MemoryClass.HOST_PINNED)
    return staging


def release_staging(ctx: VulkanContext) -> None:
    """Free the device's staging buffer (it is made again on the next staged copy)."""
    with ctx.lock:
        staging = _STAGING.pop(ctx, None)
        if staging is not None:
            destroy_memory(ctx, staging)


def _staged(ctx: VulkanContext, mem: VulkanMemory, host: np.ndarray, upload: bool) -> None:
    # One staging buffer per device, reused under the device lock: fresh host-visible memory
    # costs a page fault per page, which would dominate the copy.
    # vkCmdCopyBuffer has no maxStorageBufferRange limit.
    with ctx.lock:
        staging = _staging(ctx)
        for start in range(0, host.size, STAGING_BYTES):
            part = host[start:start + STAGING_BYTES]
            if upload:
                _put(ctx, staging, part)
            _copy_buffer(ctx, staging, mem, mem.offset + start, part.size, upload)
            if not upload:
                _get(ctx, part, staging)


def _copy_buffer(ctx: VulkanContext, staging: VulkanMemory, mem: VulkanMemory, offset: int,
                 size: int, upload: bool) -> None:
    vk = ctx.vk
    region = [vk.VkBufferCopy(srcOffset=0 if upload else offset,
                              dstOffset=offset if upload else 0, size=size)]
    src, dst = (staging.buffer, mem.buffer) if upload else (mem.buffer, staging.buffer)
    ctx.submit(lambda cmd: vk.vkCmdCopyBuffer(cmd, src, dst, 1, region))


def copy_memory(ctx: VulkanContext, dest: VulkanMemory, src: VulkanMemory, nbytes: int) -> None:
    """Copy ``nbytes`` from ``src`` to ``dest`` on the device with one ``vkCmdCopyBuffer``.

    The ranges must not overlap when both lie in one VkBuffer (the Allocator stages those
    through the host). On the default stream the copy has finished when this returns; on
    another stream it is queued in the stream's order, as a kernel is (as CUDA queues one).
    """
    vk = ctx.vk
    region = [vk.VkBufferCopy(srcOffset=src.offset, dstOffset=dest.offset, size=nbytes)]
    with ctx.lock:  # on the default stream submit() waits for the copy under the lock
        ctx.submit(lambda cmd: vk.vkCmdCopyBuffer(cmd, src.buffer, dest.buffer, 1, region),
                   wait=False)
