#!/usr/bin/env python3
"""Writes the seed corpora of the fuzzers with the PyPI gguf and safetensors packages:
small valid files covering every GGUF value type, nested arrays, several tensor types and
alignments, and safetensors files of each dtype. usage: make_seeds.py OUT_DIR (tests/fuzz/corpus)
"""
import os
import sys

import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType, GGUFValueType
from safetensors import TensorSpec, serialize


def st_bytes(tensors):
    """{name: (dtype, shape, numpy array of the raw data)} -> safetensors file bytes."""
    specs = {n: TensorSpec(dtype=d, shape=list(sh), data_ptr=a.ctypes.data, data_len=a.nbytes)
             for n, (d, sh, a) in tensors.items()}
    return serialize(specs, metadata={"format": "pt"})


def gguf_seed(path, alignment=None, tensors=True, arrays=True):
    w = GGUFWriter(path, "llama")
    if alignment:
        w.add_uint32("general.alignment", alignment)
        w.data_alignment = alignment
    w.add_uint8("t.u8", 7)
    w.add_int8("t.i8", -7)
    w.add_uint16("t.u16", 700)
    w.add_int16("t.i16", -700)
    w.add_uint32("t.u32", 70000)
    w.add_int32("t.i32", -70000)
    w.add_float32("t.f32", 0.5)
    w.add_uint64("t.u64", 1 << 40)
    w.add_int64("t.i64", -(1 << 40))
    w.add_float64("t.f64", 0.25)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "hello")
    if arrays:
        w.add_array("t.arr_i32", [1, 2, 3])
        w.add_array("t.arr_str", ["a", "bc", ""])
        w.add_array("t.arr_nested", [[1, 2], [3]])
    if tensors:
        w.add_tensor("f32", np.arange(8, dtype=np.float32))
        w.add_tensor("f16", np.arange(16, dtype=np.float16).reshape(2, 8))
        w.add_tensor("q8", np.zeros((2, 34), dtype=np.uint8), raw_dtype=GGMLQuantizationType.Q8_0)
        w.add_tensor("i32", np.arange(4, dtype=np.int32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1]
    g = os.path.join(out, "gguf")
    s = os.path.join(out, "safetensors")
    os.makedirs(g, exist_ok=True)
    os.makedirs(s, exist_ok=True)
    gguf_seed(os.path.join(g, "all_types.gguf"))
    gguf_seed(os.path.join(g, "align64.gguf"), alignment=64)
    gguf_seed(os.path.join(g, "no_tensors.gguf"), tensors=False)
    gguf_seed(os.path.join(g, "scalars_only.gguf"), tensors=False, arrays=False)

    def st(name, tensors):
        with open(os.path.join(s, name), "wb") as f:
            f.write(st_bytes(tensors))

    st("f32.safetensors", {"w": ("float32", [2, 3], np.arange(6, dtype=np.float32))})
    st("mixed.safetensors", {
        "a": ("bfloat16", [4], np.zeros(4, np.uint16)),
        "b": ("float16", [2, 2], np.ones(4, np.float16)),
        "c": ("float32", [], np.ones(1, np.float32)),
    })


if __name__ == "__main__":
    main()
