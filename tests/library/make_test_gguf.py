#!/usr/bin/env python3
"""Writes a small GGUF model with the PyPI gguf package, for the library tests, and prints what
gguf's own reader sees in it (the reference the catalog is checked against) as JSON.

usage: make_test_gguf.py OUT.gguf [--arch llama] [--name NAME] [--ctx 4096] [--file-type 7]
                         [--split-tensors N]   (N tensors per part: OUT-0000k-of-0000n.gguf)
"""
import argparse
import glob
import json
import os

import numpy as np
import gguf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--arch", default="llama")
    ap.add_argument("--name", default="")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--file-type", type=int, default=7)
    ap.add_argument("--split-tensors", type=int, default=0)
    ap.add_argument("--no-tensors", action="store_true")
    a = ap.parse_args()

    w = gguf.GGUFWriter(a.out, a.arch, split_max_tensors=a.split_tensors)
    if a.name:
        w.add_name(a.name)
    w.add_context_length(a.ctx)
    w.add_embedding_length(64)
    w.add_block_count(2)
    w.add_file_type(a.file_type)
    rng = np.random.default_rng(1)
    if not a.no_tensors:
        w.add_tensor("token_embd.weight", rng.standard_normal((100, 64), dtype=np.float32))
        for i in range(2):
            w.add_tensor("blk.%d.attn_norm.weight" % i, np.ones(64, dtype=np.float32))
            q = gguf.quants.quantize(rng.standard_normal((64, 64), dtype=np.float32),
                                     gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor("blk.%d.attn_q.weight" % i, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor("blk.%d.ffn_up.weight" % i,
                         rng.standard_normal((128, 64)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    stem = a.out[:-5] if a.out.endswith(".gguf") else a.out
    parts = sorted(glob.glob(stem + "-*-of-*.gguf")) if a.split_tensors else [a.out]
    params, mix, sizes = 0, {}, []
    for p in parts:
        r = gguf.GGUFReader(p)
        for t in r.tensors:
            params += int(t.n_elements)
            name = t.tensor_type.name.lower()
            mix[name] = mix.get(name, 0) + int(t.n_bytes)
        sizes.append(os.path.getsize(p))
    print(json.dumps({"parts": [os.path.abspath(p) for p in parts], "parameters": params,
                      "quant_mix": mix, "sizes": sizes}))


if __name__ == "__main__":
    main()
