"""Real vyre programs of vyre-libs / vyre-primitives 0.7.2, rebuilt with the builder API:
examples and test oracles.

Each builder returns a :class:`vyre.Program`; buffer names, workgroup sizes and bodies follow
the vyre-libs/vyre-primitives originals. Known answers live in ``tests/vyre/program_cases.py``.
"""

from __future__ import annotations

from vyre.programs.blake3 import (
    blake3_chunks_program,
    blake3_compress_program,
    blake3_hash,
    blake3_parents_program,
)
from vyre.programs.hashes import (
    adler32_program,
    crc32_program,
    fnv1a32_program,
    fnv1a64_program,
)
from vyre.programs.linalg import (
    dot_program,
    matmul_program,
    matmul_tiled_program,
    softmax_program,
    square_program,
)
from vyre.programs.reduce import (
    ELEMENTWISE,
    atomic_compare_exchange_program,
    atomic_serial_program,
    elementwise_program,
    histogram_atomic_program,
    histogram_program,
    subgroup_add_program,
    subgroup_reduce_add_program,
)
from vyre.programs.scan import multi_block_scan_program, prefix_scan_program
from vyre.programs.text import Dfa, aho_corasick_program, dfa_compile, substring_program

__all__ = [
    "ELEMENTWISE", "Dfa", "adler32_program", "aho_corasick_program",
    "atomic_compare_exchange_program", "atomic_serial_program", "blake3_chunks_program",
    "blake3_compress_program", "blake3_hash", "blake3_parents_program", "crc32_program",
    "dfa_compile", "dot_program", "elementwise_program", "fnv1a32_program", "fnv1a64_program",
    "histogram_atomic_program", "histogram_program", "matmul_program", "matmul_tiled_program",
    "multi_block_scan_program", "prefix_scan_program", "softmax_program", "square_program",
    "subgroup_add_program", "subgroup_reduce_add_program", "substring_program",
]
