"""Runs the PyPI gguf package's quantizers/dequantizers for test-quant.

Usage: gguf_reference.py JOBS
JOBS is a text file of lines "quantize|dequantize TYPE IN OUT": quantize reads float32 from IN
and writes the gguf.quants.quantize bytes to OUT; dequantize reads raw block bytes and writes
float32. TYPE is a GGMLQuantizationType name (Q4_K, F16, ...).
"""
import sys

import numpy as np
from gguf import GGMLQuantizationType
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize, quantize


def main() -> int:
    with open(sys.argv[1]) as jobs:
        for line in jobs:
            if not line.strip():
                continue
            op, name, src, dst = line.split()
            qtype = GGMLQuantizationType[name]
            block, size = GGML_QUANT_SIZES[qtype]
            if op == "quantize":
                data = np.fromfile(src, dtype=np.float32).reshape(1, -1)
                np.asarray(quantize(data, qtype)).tofile(dst)
            else:
                raw = np.fromfile(src, dtype=np.uint8)
                n = raw.size // size * block
                out = dequantize(raw.reshape(1, -1), qtype).astype(np.float32, copy=False)
                assert out.size == n, (name, out.size, n)
                out.tofile(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
