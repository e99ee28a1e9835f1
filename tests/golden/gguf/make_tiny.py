"""Writes tiny.gguf with gguf-py (0.19): a few small tensors of the types `hurray-gpu convert`
maps, quantized by gguf-py's own quantizers. Run it from this directory to regenerate."""

from __future__ import annotations

import gguf
import numpy as np
from gguf.quants import quantize

TENSORS = (("token_embd.weight", "Q4_0", (8, 64)), ("blk.0.attn_q.weight", "Q8_0", (4, 64)),
           ("blk.0.ffn_up.weight", "Q4_1", (4, 32)), ("output_norm.weight", "F32", (64,)))


def main() -> None:
    rng = np.random.default_rng(22)
    writer = gguf.GGUFWriter("tiny.gguf", "llama")
    writer.add_name("tiny")
    writer.add_context_length(128)
    for name, kind, shape in TENSORS:
        qtype = getattr(gguf.GGMLQuantizationType, kind)
        writer.add_tensor(name, quantize(rng.normal(size=shape).astype(np.float32), qtype),
                          raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
