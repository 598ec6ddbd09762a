#!/usr/bin/env python3
"""Writes safetensors test files with the PyPI safetensors package (the independent writer for
tandem's safetensors reader tests) and prints the expected float32 values as JSON.

usage: safetensors_make.py OUT_DIR
Writes OUT_DIR/single.safetensors and OUT_DIR/sharded/ (two shards + model.safetensors.index.json).
Prints {"single": {name: {"dtype", "shape", "values"}}, "sharded": {...}}.
"""
import json
import os
import sys

import numpy as np
from safetensors import TensorSpec, serialize

rng = np.random.default_rng(1234)


def make(dtype, shape):
    n = int(np.prod(shape)) if shape else 1
    v = (rng.standard_normal(n) * 3).astype(np.float32)
    if dtype == "F32":
        raw, exact = v, v
    elif dtype == "F16":
        raw = v.astype(np.float16)
        exact = raw.astype(np.float32)
    else:  # BF16: truncate to the top 16 bits; the exact value is those bits widened
        raw = (v.view(np.uint32) >> 16).astype(np.uint16)
        exact = (raw.astype(np.uint32) << 16).view(np.float32)
    return raw, exact


def write(path, tensors):
    keep = {}
    specs = {}
    for name, (dtype, shape) in tensors.items():
        raw, exact = make(dtype, shape)
        keep[name] = raw
        specs[name] = TensorSpec(dtype={"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
                                 shape=list(shape), data_ptr=raw.ctypes.data, data_len=raw.nbytes)
        tensors[name] = {"dtype": dtype, "shape": list(shape), "values": [float(x) for x in exact]}
    with open(path, "wb") as f:
        f.write(serialize(specs, metadata={"format": "pt"}))
    return tensors


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "sharded"), exist_ok=True)
    single = write(os.path.join(out, "single.safetensors"), {
        "model.embed_tokens.weight": ("BF16", (6, 4)), "w.f16": ("F16", (3, 5)),
        "w.f32": ("F32", (2, 2, 3)), "scalar": ("F32", ()), "norm": ("BF16", (4,)),
    })
    shard1 = write(os.path.join(out, "sharded", "model-00001-of-00002.safetensors"),
                   {"a.weight": ("BF16", (4, 8)), "b.weight": ("F16", (8,))})
    shard2 = write(os.path.join(out, "sharded", "model-00002-of-00002.safetensors"),
                   {"c.weight": ("F32", (3, 3))})
    index = {"metadata": {"total_size": 0}, "weight_map": {}}
    for n in shard1:
        index["weight_map"][n] = "model-00001-of-00002.safetensors"
    for n in shard2:
        index["weight_map"][n] = "model-00002-of-00002.safetensors"
    with open(os.path.join(out, "sharded", "model.safetensors.index.json"), "w") as f:
        json.dump(index, f)
    json.dump({"single": single, "sharded": {**shard1, **shard2}}, sys.stdout)


if __name__ == "__main__":
    main()
