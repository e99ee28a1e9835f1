"""Setuptools hook: everything else is in pyproject.toml.

bench/ ships inside the package as ``hurray_gpu.bench_suites`` (package-dir), so that
``hurray-gpu bench`` runs from a wheel as from a checkout. pyproject.toml's
``[tool.setuptools]`` cannot both find packages and add one mapped from another directory.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["hurray_gpu*", "vyre*"]), "hurray_gpu.bench_suites"],
      package_dir={"hurray_gpu.bench_suites": "bench"})
