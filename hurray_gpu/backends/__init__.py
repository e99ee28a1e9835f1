"""One module per backend, named for its Hurray device tag (cpu, cuda, rocm, vulkan, opencl),
plus ``reference`` (the NumPy oracle) and ``null`` (a no-op device for tests).

Each module defines ``DEVICE``, its Device subclass, whose ``count()`` probes the driver and
whose constructor opens one; :mod:`hurray_gpu.runtime.registry` imports a module only when
its device is first opened. A new backend is one module here and one row in the registry.
"""
