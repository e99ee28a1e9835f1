"""Compiler and Program base classes: cached compilation and checked kernel launches.

Backends subclass them (``_launch`` and ``compile`` are their hooks).
"""

from __future__ import annotations

import logging
import math
import operator
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hurray_gpu.dialect.kernel import KernelDef
from hurray_gpu.dialect.render import RENDER_VERSION
from hurray_gpu.errors import UnsupportedOpError
from hurray_gpu.runtime.cache import KernelCacheBackend, default_cache, make_cache_key

if TYPE_CHECKING:
    from hurray_gpu.runtime.device import Device
    from hurray_gpu.runtime.memory import Allocation

__all__ = ["Compiler", "Launch", "Program", "compile_stats"]

# One work-grid dimension: OpenCL/CUDA/Vulkan sizes are at most 32-bit per axis here.
MAX_GRID_DIM = 2**32 - 1
# Total work items per launch; keeps the host loop's int64 index arithmetic exact.
MAX_WORK_ITEMS = 2**48
_SCALAR_RANGE = {"u32": (0, 2**32 - 1), "i32": (-(2**31), 2**31 - 1)}
_SCALAR_TYPES: dict[str, Callable[[int], np.generic]] = {"u32": np.uint32, "i32": np.int32}
_STATS = {"compiles": 0, "disk_hits": 0, "disk_misses": 0}
_STATS_LOCK = threading.Lock()
log = logging.getLogger(__name__)


def compile_stats() -> dict[str, int]:
    """Process-wide counts of kernel compiles and of disk kernel cache hits and misses.

    Returns:
        ``{"compiles": n, "disk_hits": n, "disk_misses": n}`` since the process started (a
        kernel loaded again from the in-memory cache counts nowhere).
    """
    with _STATS_LOCK:
        return dict(_STATS)


def _count(name: str) -> None:
    with _STATS_LOCK:
        _STATS[name] += 1


class Compiler:
    """Turns rendered source into a binary; ``compile_cached`` adds the disk cache.

    Args:
        identity: the target identity (name, vendor, driver version, architecture).
        cache: where binaries persist; default: ``HURRAY_GPU_CACHE_DIR/<backend>``.
    """

    backend: ClassVar[str] = "base"

    def __init__(self, identity: str, cache: KernelCacheBackend | None = None) -> None:
        self.identity = identity
        self.cache = cache if cache is not None else default_cache(self.backend)
        self.compile_count = 0

    @property
    def domain(self) -> str:
        """The domain string hashed first into every key (bumped with the renderer)."""
        return f"hurray_gpu.{self.backend}.kernel.v{RENDER_VERSION}"

    def version(self) -> str:
        """The compiler's version string (part of the cache key)."""
        return ""

    def compile(self, source: str, options: Sequence[str] = ()) -> bytes:
        """Compile ``source`` to a binary.

        Raises:
            CompileError: the compiler rejected the source.
        """
        raise NotImplementedError

    def cache_key(self, source: str, options: Sequence[str] = ()) -> str:
        """The blake3 key of ``source`` compiled with ``options`` for this target."""
        return make_cache_key(self.domain, source, options, self.version(), self.identity)

    def load(self, key: str) -> bytes | None:
        """The binary the disk cache holds under ``key`` (a hit is counted), or None."""
        binary = self.cache.load(key)
        if binary is not None:
            _count("disk_hits")
            log.debug("%s kernel %s: disk cache hit", self.backend, key[:16])
        return binary

    def compile_cached(self, source: str, options: Sequence[str] = ()) -> bytes:
        """Return the binary from the disk cache, compiling (and storing) it on a miss.

        Raises:
            CompileError: the compiler rejected the source.
        """
        key = self.cache_key(source, options)
        binary = self.load(key)
        if binary is not None:
            return binary
        _count("disk_misses")
        start = time.perf_counter()
        binary = self.compile(source, options)
        self.compile_count += 1
        _count("compiles")
        log.debug("%s kernel %s: compiled in %.3f s (%d bytes)", self.backend, key[:16],
                  time.perf_counter() - start, len(binary))
        self.cache.save(key, binary, source)
        return binary


def _check_scalar(param_name: str, dtype: str, value: Any) -> np.generic:
    if type(value) is int:  # the common case, first: no isinstance chain, no float test
        bounds = _SCALAR_RANGE.get(dtype)
        if bounds is not None and bounds[0] <= value <= bounds[1]:
            return _SCALAR_TYPES[dtype](value)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise UnsupportedOpError(f"scalar {param_name} must be a number, got {value!r}",
                                 fix=f"pass {param_name} as an int or float.")
    if dtype == "f32":
        return np.float32(value)
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        raise UnsupportedOpError(f"scalar {param_name} ({dtype}) must be an integer, got {value}",
                                 fix=f"pass {param_name} as a whole number.")
    low, high = _SCALAR_RANGE[dtype]
    if not low <= int(value) <= high:
        raise UnsupportedOpError(f"scalar {param_name} = {value} is outside {dtype}",
                                 fix=f"pass a {param_name} that fits {dtype}.")
    return _SCALAR_TYPES[dtype](int(value))


def _check_grid(size: Sequence[int], local: tuple[int, int, int]) -> tuple[int, int, int]:
    dims = tuple(int(d) for d in size)
    if not 1 <= len(dims) <= 3 or any(d < 0 or d > MAX_GRID_DIM for d in dims):
        raise UnsupportedOpError(f"global size {tuple(size)} must be 1-3 dims in [0, 2**32)",
                                 fix="pass 1 to 3 sizes, each in [0, 2**32).")
    if math.prod(dims) > MAX_WORK_ITEMS:
        raise UnsupportedOpError(f"global size {dims} exceeds {MAX_WORK_ITEMS} work items",
                                 fix="split the work into several launches.")
    grid: tuple[int, int, int] = (dims + (1, 1))[:3]  # type: ignore[assignment]
    # Backends launch whole work-groups: the padded size must still fit a 32-bit index (the
    # kernels' global id, and HIP's limit on grid x block per axis).
    if any(-(-d // loc) * loc > MAX_GRID_DIM for d, loc in zip(grid, local, strict=True)):
        raise UnsupportedOpError(
            f"global size {grid} rounds up to whole work-groups of {local} past 2**32 - 1 "
            "work items on an axis", fix="split the work into several launches.")
    return grid


class Launch:
    """A Program with one set of scalars checked: the typed scalars, the bytes each buffer
    argument needs and the default grid, computed once (:meth:`Program.bind`). Calling it
    checks only the buffers (same device, large enough, live, writable where written,
    aligned), then launches: callers that launch the same scalars over and over (a decode
    step per layer, a small dequantization) pay for no more than that.
    """

    __slots__ = ("program", "typed", "needs", "grid")

    def __init__(self, program: Program, typed: tuple[np.generic, ...], needs: list[int],
                 grid: tuple[int, int, int] | None) -> None:
        self.program, self.typed, self.needs, self.grid = program, typed, needs, grid

    def __call__(self, buffers: Sequence[Any], wait: bool = False,
                 global_size: Sequence[int] | None = None) -> float | None:
        """Launch over ``buffers`` (one per buffer parameter, in signature order).

        Raises:
            UnsupportedOpError: a buffer is not usable (see :meth:`Program.__call__`), or the
                grid is invalid.
        """
        prog = self.program
        dev, allocations = prog.device, []
        if len(buffers) != len(self.needs):
            raise UnsupportedOpError(f"{prog.kernel.name}: {len(buffers)} buffers for "
                                     f"{len(self.needs)} buffer parameters",
                                     fix=f"pass one Buffer per {list(prog._buffer_names)}.")
        for value, need, (name, itemsize, write) in zip(buffers, self.needs, prog._checks,
                                                        strict=True):
            try:  # one test of the common case; the full check names what is wrong
                a = value.allocation
                ok = (value.device is dev and a.nbytes >= need and not a.freed
                      and (a.base is None or not a.base.freed) and not (write and a.readonly)
                      and not a.offset % itemsize)
            except AttributeError:
                ok = False
            allocations.append(a if ok else prog._check_buffer(name, value, need, write,
                                                               itemsize))
        local = prog.kernel.local_size
        grid = self.grid if global_size is None else _check_grid(global_size, local)
        if grid is None:  # the kernel's own grid is invalid for these scalars: raise why
            grid = _check_grid(prog.kernel.grid({p.name: v.item() for p, v in zip(
                prog._scalar_params, self.typed, strict=True)}), local)
        if not grid[0] * grid[1] * grid[2]:
            return 0.0 if wait else None
        return prog._launch(allocations, self.typed, grid, local, wait)


class Program:
    """A loaded kernel. Calling it checks every argument, then launches.

    Args:
        device: the device it was loaded on.
        kernel: the kernel definition (signature, grid and extents).
        binary: what the device's compiler produced.
    """

    def __init__(self, device: Device, kernel: KernelDef, binary: bytes) -> None:
        self.device = device
        self.kernel = kernel
        self.binary = binary
        # Signature facts every launch needs, computed once (per-launch Python is the cost of a
        # small launch).
        self._names = tuple(p.name for p in kernel.params)
        self._scalar_params = kernel.scalars
        self._buffer_params = tuple((p.name, p.itemsize) for p in kernel.buffers)
        self._buffer_names = tuple(p.name for p in kernel.buffers)
        self._checks = tuple((p.name, p.itemsize, p.access != "r") for p in kernel.buffers)
        self._scalar_names = tuple(p.name for p in kernel.scalars)
        self._scalar_set = frozenset(names := self._scalar_names)
        self._scalar_values = operator.itemgetter(*names) if len(names) > 1 else \
            lambda d: tuple(d[n] for n in names)
        # Scalar values (with their types) -> typed scalars, bytes each buffer needs, grid:
        # callers launch the same kernel with the same scalars over and over, and the extents
        # and grid are pure functions of them. (Not the Launch itself: it refers back here, and
        # a cycle would leave a Program with a finaliser to the cyclic collector.)
        self._launches: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    def __call__(self, *args: Any, global_size: Sequence[int] | None = None,
                 wait: bool = False, **kwargs: Any) -> float | None:
        """Launch with arguments in signature order or by name.

        Args:
            args, kwargs: Buffers (same device) for buffer params, numbers for scalars.
            global_size: work items per axis; default: the kernel's ``grid``.
            wait: block until done and return the elapsed seconds.

        Returns:
            Seconds taken when ``wait`` is true, else None.

        Raises:
            UnsupportedOpError: missing/extra/mistyped arguments, or a buffer too small for
                the extents the scalars imply.
            BoundsViolation: with ``HURRAY_GPU_DEBUG_BOUNDS=1``, the kernel wrote outside a
                buffer argument (checked once the launch has run; see
                :mod:`hurray_gpu.runtime.canary`).
        """
        if len(args) == len(self._buffer_names) and kwargs.keys() == self._scalar_set:
            return self.bind(kwargs)(args, wait, global_size)  # the usual form, bound directly
        bound = self._bind(args, kwargs)
        launch = self.bind({name: bound[name] for name in self._scalar_names})
        return launch([bound[name] for name in self._buffer_names], wait, global_size)

    def bind(self, scalars: Mapping[str, Any]) -> Launch:
        """The launch of this kernel with ``scalars`` (every scalar parameter by name), checked
        once and kept per scalar set.

        Raises:
            UnsupportedOpError: a scalar is missing, not a number or outside its type.
        """
        try:
            values = self._scalar_values(scalars)
        except KeyError as exc:
            raise UnsupportedOpError(f"{self.kernel.name}: missing scalar {exc}",
                                     fix=f"pass all of {list(self._scalar_names)}.") from None
        key = (values, tuple(map(type, values)))  # True == 1, but a bool is refused
        try:
            plan = self._launches.get(key)
        except TypeError:  # an unhashable "scalar": _plan raises the typed error
            plan = None
        if plan is None:
            plan = self._plan(scalars)
            if len(self._launches) >= 64:
                self._launches.clear()
            self._launches[key] = plan
        return Launch(self, *plan)

    def _plan(self, bound: Mapping[str, Any]) -> tuple[Any, ...]:
        """Typed scalars, the bytes each buffer needs and the default grid (None when it is
        invalid: it raises only if a launch relies on it), for ``bound``'s scalars."""
        typed = tuple(_check_scalar(p.name, p.dtype, bound[p.name]) for p in self._scalar_params)
        plain = {p.name: v.item() for p, v in zip(self._scalar_params, typed, strict=True)}
        extents = self.kernel.extents(plain)
        needs = [int(extents.get(name, 0)) * itemsize for name, itemsize in self._buffer_params]
        try:
            grid: tuple[int, int, int] | None = _check_grid(self.kernel.grid(plain),
                                                            self.kernel.local_size)
        except UnsupportedOpError:
            grid = None
        return typed, needs, grid

    def host_call(self, launch: Launch, fixed: Mapping[int, Allocation] | None = None
                  ) -> Callable[[Sequence[Allocation]], None] | None:
        """Where kernels run on the launching thread in host memory (the cpu backend): a call
        of ``launch`` taking its allocations in parameter order, which the caller has checked
        as :meth:`Launch.__call__` does (it checks nothing, for callers that checked once);
        None elsewhere, and where launches are guarded (debug canaries). ``fixed``: allocations
        by parameter index that the caller holds and checks live before every call (their
        addresses are taken once); the call then takes only the other parameters'."""
        return None

    def launch_prechecked(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                          global_size: tuple[int, int, int]) -> None:
        """Launch with arguments the caller has already validated, skipping the generic binding.

        For callers that check once and launch many times (``vyre.Kernel``): ``buffers`` are
        live allocations on this device at least as large as the kernel's extents, and
        ``scalars`` are typed in signature order. Debug canaries still apply.
        """
        self._launch(buffers, scalars, global_size, self.kernel.local_size, False)

    def _bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        names = self._names
        if not kwargs and len(args) == len(names):
            return dict(zip(names, args, strict=True))
        if len(args) > len(names):
            raise UnsupportedOpError(f"{self.kernel.name} takes {len(names)} arguments",
                                     fix=f"pass exactly {', '.join(names)}.")
        bound = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in names or key in bound:
                raise UnsupportedOpError(f"{self.kernel.name}: unexpected/duplicate arg {key!r}",
                                         fix=f"pass each of {', '.join(names)} once.")
            bound[key] = value
        missing = [n for n in names if n not in bound]
        if missing:
            raise UnsupportedOpError(f"{self.kernel.name}: missing arguments {missing}",
                                     fix=f"pass all of {list(names)}.")
        return bound

    def _check_buffer(self, name: str, value: Any, need: int, write: bool,
                      itemsize: int) -> Allocation:
        """The allocation behind ``value``, checked: same device, ``need`` bytes, not freed,
        writable when the kernel writes it, a view starting on a whole ``itemsize`` element."""
        allocation = getattr(value, "allocation", None)
        if allocation is None or getattr(value, "device", None) is not self.device:
            raise UnsupportedOpError(
                f"{self.kernel.name}: argument {name} must be a Buffer on {self.device}",
                fix="allocate it with Buffer(device, nbytes) on the same device.",
            )
        if allocation.nbytes < need:
            raise UnsupportedOpError(
                f"{self.kernel.name}: buffer {name} has {allocation.nbytes} bytes, needs {need}",
                fix="allocate a larger buffer or pass a smaller count.",
            )
        if allocation.freed or allocation.root.freed:
            raise UnsupportedOpError(f"{self.kernel.name}: buffer {name} was freed",
                                     fix="keep the buffer (or its tensor) alive until the launch.")
        if write and allocation.readonly:
            raise UnsupportedOpError(
                f"{self.kernel.name}: buffer {name} is read-only memory but the kernel writes it",
                fix="pass a writable Buffer (copy read-only data into a new one first).")
        if allocation.offset % itemsize:
            # A misaligned typed access faults on GPUs (it kills a CUDA context) and Vulkan
            # windows count in whole elements: refused everywhere, as on x86 it would pass.
            raise UnsupportedOpError(
                f"{self.kernel.name}: buffer {name} is a view at byte offset "
                f"{allocation.offset}, not a multiple of its {itemsize}-byte elements",
                fix=f"make views at offsets that are multiples of {itemsize}.")
        return allocation

    def _launch(self, buffers: list[Allocation], scalars: Sequence[np.generic],
                global_size: tuple[int, int, int], local_size: tuple[int, int, int],
                wait: bool) -> float | None:
        """Backend hook: run the kernel over ``global_size`` work items (not groups)."""
        raise NotImplementedError
