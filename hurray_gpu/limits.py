"""Every resource limit of hurray_gpu and vyre, in one registry (docs/reliability.md).

The constants stay in the modules that enforce them; this registry reads them from there, so
the table can never drift from the code. ``python -m hurray_gpu.limits`` prints the table.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["LIMITS", "Limit", "limits_table", "value_of"]


@dataclass(frozen=True)
class Limit:
    """One named resource limit.

    Attributes:
        module: the module that defines and enforces it.
        constant: the constant's name in that module.
        area: what it protects (``decoder``, ``reader``, ``memory``, ``kernel``, ...).
        description: one line: what is bounded and what happens past it.
    """

    module: str
    constant: str
    area: str
    description: str

    @property
    def value(self) -> Any:
        """The constant's current value, read from its module."""
        return getattr(importlib.import_module(self.module), self.constant)

    @property
    def name(self) -> str:
        """``module.CONSTANT``."""
        return f"{self.module}.{self.constant}"


def _l(module: str, constant: str, area: str, description: str) -> Limit:
    return Limit(module, constant, area, description)


_F, _IO, _KV = "hurray_gpu.format", "hurray_gpu.io", "hurray_gpu.kv_cache"

LIMITS: tuple[Limit, ...] = (
    # -- Hurray descriptors and addressing ------------------------------------------------
    _l(f"{_F}.descriptor.validate", "MAX_RANK", "decoder",
       "tensor rank a descriptor may declare; higher is HurrayFormatError"),
    _l(f"{_F}.descriptor.layouts", "MAX_TILED_DEPTH", "decoder",
       "nesting levels of a tiled layout"),
    _l(f"{_F}.addressing_checks", "MAX_DENSE_ELEMENTS", "memory",
       "elements a host reference (to_dense, block_paged_to_dense, ...) may allocate; "
       "checked before allocating"),
    _l(f"{_F}.addressing_curves", "MAX_CODE_BITS", "decoder",
       "bits of a Morton/Hilbert code (must fit a signed 64-bit offset)"),
    _l(f"{_F}.protocol", "DEFAULT_MAX_MESSAGE", "decoder",
       "interchange payload a receiver accepts by default; checked from the 12-byte header "
       "before anything is read (MESSAGE_TOO_LARGE)"),
    # -- streams and .hrry files ------------------------------------------------------------
    _l(f"{_IO}.framing", "DEFAULT_MAX_DESCRIPTOR_SIZE", "reader",
       "largest descriptor a stream or file reader accepts (StreamReader max_descriptor_size)"),
    _l(f"{_IO}.framing", "DEFAULT_MAX_COMPOSITE_DEPTH", "reader",
       "composite nesting depth (spec MUST >= 8; max_composite_depth)"),
    _l(f"{_IO}.stream", "_PIECE", "memory",
       "read-ahead from a source of unknown length before a declared size is proven"),
    _l("hurray_gpu.runtime.hostmem", "CHUNK", "memory",
       "large buffers are read chunk by chunk, so a short stream fails after one chunk"),
    _l("hurray_gpu.runtime.hostmem", "MAX_HOST_ALIGNMENT", "memory",
       "largest alignment a host copy is padded to (padding <= 1/16 of the buffer)"),
    _l(f"{_IO}.file_format", "MAX_ALIGNMENT", "reader",
       "largest data_buffer_alignment of a .hrry file (smallest: MIN_ALIGNMENT)"),
    _l(f"{_IO}.kv", "MAX_KEY_BYTES", "reader", "length of one metadata key (u16 on the wire)"),
    _l(f"{_IO}.convert.source", "MAX_HEADER_BYTES", "converter",
       "header of a source checkpoint (GGUF key/values and tensor infos, safetensors JSON) "
       "parsed in memory; larger is ConversionError"),
    _l(f"{_IO}.convert.source", "MAX_TENSORS", "converter",
       "tensors one source checkpoint may declare"),
    _l(f"{_IO}.convert.gguf_file", "MAX_DIMS", "converter", "n_dims of one GGUF tensor"),
    _l(f"{_IO}.convert.gguf_file", "MAX_ARRAY_DEPTH", "converter",
       "nesting of GGUF metadata arrays"),
    _l(f"{_IO}.convert.bnb", "_MAX_STATE", "converter",
       "bitsandbytes quant_state JSON blob of one weight"),
    _l(f"{_IO}.convert.compressed", "_MAX_CONFIG", "converter",
       "config.json read beside a compressed-tensors checkpoint"),
    _l("hurray_gpu.format.composite", "MAX_COVER_CORNERS", "reader",
       "average box corners per member the partition cover check enumerates (time and memory "
       "grow with the members, never with the head); more is HurrayFormatError"),
    # -- paged KV cache -----------------------------------------------------------------------
    _l(f"{_KV}.options", "MAX_LAYERS", "kv_cache", "layers of a PagedKVCache"),
    _l(f"{_KV}.options", "MAX_HEADS", "kv_cache", "KV heads per token"),
    _l(f"{_KV}.options", "MAX_HEAD_DIM", "kv_cache", "elements per head"),
    _l(f"{_KV}.options", "MAX_PAGE_SIZE", "kv_cache", "tokens per page"),
    _l(f"{_KV}.options", "MAX_PAGES", "kv_cache",
       "pages per pool (host bookkeeping is a few words per page)"),
    _l(f"{_KV}.state", "MAX_SEQ_TOKENS", "kv_cache",
       "tokens one sequence may hold (slot indices stay u32)"),
    _l(f"{_KV}.storage", "MAX_WORDS", "kernel", "largest word index a KV kernel computes (u32)"),
    _l(f"{_KV}.cache", "MAX_OUTPUT_BYTES", "kernel",
       "largest gather output (kernels index u32 words)"),
    _l(f"{_KV}.cache", "MAX_GATHER_PLANS", "kv_cache",
       "gather plans (slots, cu_seqlens) a cache keeps for repeated batches; older ones are dropped"),
    _l("hurray_gpu.kernels.paged", "MAX_LANES", "kernel",
       "lanes of a paged kernel; guards make larger values no-ops"),
    _l("hurray_gpu.kernels.paged", "MAX_WIDTH", "kernel", "row width of a paged kernel"),
    # -- kernels, launches, compile cache ---------------------------------------------------
    _l("hurray_gpu.ops.dequantize", "MAX_EXPANSION", "api",
       "default materialize/dequantize output: this many times the bytes the tensor stores"),
    _l("hurray_gpu.ops.dequantize", "MIN_OUTPUT_LIMIT", "api",
       "default output limit is never below this (max_output_bytes= raises it)"),
    _l("hurray_gpu.ops.plan", "MAX_EPT", "kernel", "elements one work item of an unpack takes"),
    _l("hurray_gpu.ops.plan", "U32_LIMIT", "kernel",
       "element counts and byte extents of dequantize/unpack launches (u32 indices)"),
    _l("hurray_gpu.ops.layout_plan", "U32_LIMIT", "kernel",
       "element counts, word offsets and bit positions of materialize launches"),
    _l("hurray_gpu.ops.layout_plan", "_TABLE_CACHE_ENTRIES", "cache",
       "layout axis tables cached per device"),
    _l("hurray_gpu.ops.layout_plan", "_TABLE_CACHE_WORDS", "cache",
       "largest axis table (u32 words) that is cached"),
    _l("hurray_gpu.runtime.program", "MAX_GRID_DIM", "kernel", "one work-grid dimension"),
    _l("hurray_gpu.runtime.program", "MAX_WORK_ITEMS", "kernel",
       "work items per launch (host loop index arithmetic stays exact)"),
    _l("hurray_gpu.backends.cuda", "MAX_GRID", "kernel", "CUDA grid (x, y, z)"),
    _l("hurray_gpu.runtime.cache", "MAX_BINARY_BYTES", "cache",
       "compiled kernel read back from the disk cache; larger entries are refused"),
    _l("hurray_gpu.runtime.cache", "MAX_SOURCE_BYTES", "cache", "kernel source stored in a cache entry"),
    _l("hurray_gpu.runtime.memory", "DEFAULT_POOL_LIMIT", "memory",
       "freed device buffers kept for reuse per allocator; beyond it they are really freed "
       "(the cpu device: an eighth of physical memory, at least this)"),
    _l("hurray_gpu.runtime.memory", "DEFAULT_POOL_IDLE_BYTES", "memory", "pooled bytes kept "
       "however long idle; more is freed once unused for DEFAULT_POOL_IDLE_SECONDS"),
    _l("hurray_gpu.runtime.device", "PROGRAM_CACHE_CAPACITY", "cache", "loaded programs per device"),
    _l("hurray_gpu.runtime.memory", "CHUNK", "memory",
       "host staging per copy step (a staged copy never doubles host memory)"),
    _l("hurray_gpu.runtime.registry", "MAX_SPEC_LEN", "api", "length of a device spec string"),
    _l("hurray_gpu.sync.dlpack_import", "MAX_NDIM", "decoder", "rank of an imported DLPack"),
    _l("hurray_gpu.sync.dlpack_import", "MAX_DECLARED_ALIGN", "decoder",
       "largest alignment credited to an imported device pointer"),
    _l("hurray_gpu.backends.null", "MAX_RECORDS", "memory",
       "launches and copies the null backend records per device"),
    # -- the network interchange protocol ------------------------------------------------------
    _l("hurray_gpu.net.server", "DEFAULT_MAX_PUT", "memory",
       "bytes one TENSOR_PUT may allocate on a server (max_put_bytes=)"),
    _l("hurray_gpu.net.server", "DEFAULT_TRANSCODE_LIMIT", "memory",
       "bytes of a tensor the server transcodes (transcode_limit=)"),
    _l("hurray_gpu.net.server", "MAX_SHARDS", "api", "shards of a PARALLEL_STREAMS request"),
    _l("hurray_gpu.net.sources", "_MAX_KEY", "api", "characters of a tensor key"),
    _l("hurray_gpu.net.sources", "MAX_OPEN_FILES", "memory", "files of a served directory "
       "kept open (mapped) at once; the least recently used is let go (max_open_files=)"),
    _l("hurray_gpu.net.client", "DEFAULT_MAX_TENSOR", "memory",
       "bytes one get allocates for the server's tensor (max_tensor_bytes=)"),
    _l("hurray_gpu.net.client", "MAX_DEPTH", "decoder", "composite nesting a client accepts"),
    _l("hurray_gpu.net.client", "MAX_MEMBERS", "decoder",
       "members of one received composite, nested ones included"),
    _l("hurray_gpu.net.ipc", "MAX_MESSAGE", "decoder",
       "bytes of one shared-memory handoff message (descriptors), checked before reading"),
    # -- vyre -------------------------------------------------------------------------------
    _l("vyre.wire", "MAX_PROGRAM_BYTES", "decoder", "whole VIR0 blob, checked before reading"),
    _l("vyre.wire", "MAX_DECODE_DEPTH", "decoder",
       "recursion depth of node/expr/type decoding (no RecursionError)"),
    _l("vyre.wire", "MAX_NODES", "decoder", "records, nested node-list and operand counts"),
    _l("vyre.wire", "MAX_BUFFERS", "decoder", "buffers, memory regions and output sets"),
    _l("vyre.wire", "MAX_ARGS", "decoder", "call arguments"),
    _l("vyre.wire", "MAX_STRING_LEN", "decoder", "every string"),
    _l("vyre.wire", "MAX_OPAQUE_PAYLOAD_LEN", "decoder", "opaque payloads and node records"),
    _l("vyre.wire", "MAX_TENSOR_RANK", "decoder", "rank of a tensor type"),
    _l("vyre.wire", "MAX_MESH_AXES", "decoder", "axes of a mesh"),
    _l("vyre.wire", "MAX_SHAPE_PREDICATE_DEPTH", "decoder", "shape predicate nesting"),
    _l("vyre.wire", "MAX_REGION_PAYLOAD_LEN", "decoder", "memory-region shape/hints payloads"),
    _l("vyre.validate_nodes", "MAX_NESTING_DEPTH", "validator", "statement nesting (V018)"),
    _l("vyre.validate_nodes", "MAX_NODE_COUNT", "validator", "nodes per program (V019)"),
    _l("vyre.validate_exprs", "MAX_EXPR_DEPTH", "validator", "expression nesting (V033)"),
    _l("vyre.validate_nodes", "_MAX_EXIT_NESTING", "validator",
       "nesting the barrier-uniformity check walks"),
    _l("vyre.lower", "MAX_SHARED_BYTES", "kernel",
       "work-group memory of a lowered kernel (per dialect: glsl 16 KiB, opencl 32 KiB, cuda "
       "48 KiB, hip 64 KiB, host C this)"),
    _l("hurray_gpu.dialect.host_groups", "MAX_GROUP_BYTES", "kernel",
       "per-item values and work-group arrays of one group in host C (on its thread's stack)"),
    _l("vyre.reference", "DEFAULT_MAX_STEPS", "interpreter",
       "statements and expression nodes the reference interpreter runs before giving up"),
    _l("vyre.reference", "DEFAULT_MAX_SECONDS", "interpreter",
       "wall-clock seconds of one reference run (max_seconds=)"),
    _l("vyre.ir", "MAX_PROGRAM_DEPTH", "api",
       "statement and expression nesting of a Program (==, repr, hash recurse per level)"),
    _l("vyre.reference", "DEFAULT_MAX_BUFFER_BYTES", "interpreter",
       "bytes of buffers the reference interpreter allocates"),
    _l("vyre.reference.vector", "CHUNK_LANES", "memory", "lanes per vectorised reference step"),
    _l("vyre.execute", "_LOWERED_MAX", "cache", "lowered programs memoized in memory"),
    _l("vyre.programs.scan", "MAX_SCAN", "kernel", "elements of a single-block prefix scan"),
    _l("vyre.programs.text", "MAX_DFA_STATES", "memory",
       "states of a compiled pattern DFA (256 u32 per state)"),
    _l("vyre.kernel", "KERNEL_CACHE_CAPACITY", "cache", "compiled vyre kernels kept per device"),
    _l("vyre.lower.ops", "DEFAULT_MAX_LOOP_PASSES", "kernel",
       "loop passes per invocation of a device run without a driver loop budget "
       "(max_loop_passes=); past it LoopBudgetError"),
)


def value_of(name: str) -> Any:
    """The value of the limit called ``module.CONSTANT``.

    Raises:
        KeyError: no such limit in the registry.
    """
    for limit in LIMITS:
        if limit.name == name:
            return limit.value
    raise KeyError(name)


def _fmt(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_fmt(v) for v in value) + ")"
    if isinstance(value, int) and value >= 1 << 16:
        text = f"{value:,}"
        for near, suffix in ((value, ""), (value + 1, " - 1")):
            if near & (near - 1) == 0:
                return f"{text} (2^{near.bit_length() - 1}{suffix})"
        return text
    return str(value)


def limits_table() -> str:
    """The registry as a Markdown table (what docs/reliability.md embeds).

    Returns:
        The table, one row per limit, ending with a newline.
    """
    rows = ["| limit | value | enforced in | what it bounds |", "|---|---|---|---|"]
    for limit in LIMITS:
        rows.append(f"| `{limit.constant}` | {_fmt(limit.value)} | `{limit.module}` | "
                    f"{limit.description} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(limits_table(), end="")
