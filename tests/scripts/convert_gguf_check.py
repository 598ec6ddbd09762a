#!/usr/bin/env python3
"""Independent check of `tandem-cli convert FILE.gguf` (re-typing a GGUF) and `tandem-cli inspect`.

1. The PyPI gguf package writes a GGUF with f32, f16, q8_0 and q4_0 tensors (quantized by
   gguf.quants); tandem converts it to f32; every value must equal gguf.quants.dequantize.
2. That f32 file is converted to f16 and bf16; values must equal numpy's float16 rounding and
   round-to-nearest-even bfloat16 computed here, 1-D tensors stay f32, metadata is kept except
   general.file_type.
3. `tandem-cli inspect` lists every key and every tensor with its type and shape.

usage: convert_gguf_check.py --cli TANDEM_CLI --out-dir DIR
"""
import argparse
import os
import subprocess
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFWriter
from gguf.quants import dequantize, quantize

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg)


def run(*args):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r.stdout


def values(t):
    """Tensor values as float32 in PyTorch order."""
    shape = [int(x) for x in reversed(list(t.shape))]
    raw = t.data.tobytes()
    kind = Q(int(t.tensor_type))
    if kind == Q.F32:
        return np.frombuffer(raw, np.float32).reshape(shape)
    if kind == Q.F16:
        return np.frombuffer(raw, np.float16).astype(np.float32).reshape(shape)
    if kind == Q.BF16:
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    return dequantize(np.frombuffer(raw, np.uint8), kind).reshape(shape)


def bf16_rne(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) << 16
    return r.astype(np.uint32).view(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    src = os.path.join(a.out_dir, "py-quant.gguf")
    rng = np.random.default_rng(7)
    w = GGUFWriter(src, "llama")
    w.add_block_count(1)
    w.add_string("general.name", "py-quant")
    w.add_array("test.ids", [1, 2, 3])
    data = {
        "token_embd.weight": (rng.standard_normal((16, 64)).astype(np.float32), Q.F16),
        "blk.0.attn_q.weight": (rng.standard_normal((8, 64)).astype(np.float32), Q.Q8_0),
        "blk.0.ffn_up.weight": (rng.standard_normal((4, 128)).astype(np.float32), Q.Q4_0),
        "blk.0.attn_norm.weight": (rng.standard_normal(64).astype(np.float32), Q.F32),
        "output.weight": (rng.standard_normal((16, 64)).astype(np.float32), Q.F32),
    }
    for name, (v, q) in data.items():
        if q == Q.F32:
            w.add_tensor(name, v)
        elif q == Q.F16:
            w.add_tensor(name, v.astype(np.float16))
        else:
            w.add_tensor(name, quantize(v, q), raw_shape=quantize(v, q).shape, raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    f32 = os.path.join(a.out_dir, "tandem-f32.gguf")
    run(a.cli, "convert", src, "-o", f32, "--type", "f32")
    if FAILURES:
        return 1
    ref = {t.name: t for t in GGUFReader(src).tensors}
    out = {t.name: t for t in GGUFReader(f32).tensors}
    if set(ref) != set(out):
        fail(f"tensor names differ: {sorted(ref)} vs {sorted(out)}")
    n_values = 0
    for name, t in out.items():
        if int(t.tensor_type) != 0:
            fail(f"{name}: type {int(t.tensor_type)} in the f32 output")
        want = values(ref[name])
        got = values(t)
        if not np.array_equal(want, got):
            fail(f"{name}: dequantized values differ ({np.max(np.abs(want - got))} max)")
        n_values += got.size

    for typ, code in (("f16", 1), ("bf16", 30)):
        dst = os.path.join(a.out_dir, f"tandem-{typ}.gguf")
        run(a.cli, "convert", f32, "-o", dst, "--type", typ)
        r_in, r_out = GGUFReader(f32), GGUFReader(dst)
        kv_in = {k: f.contents() for k, f in r_in.fields.items() if not k.startswith("GGUF.")}
        kv_out = {k: f.contents() for k, f in r_out.fields.items() if not k.startswith("GGUF.")}
        kv_in.pop("general.file_type", None)
        ft = kv_out.pop("general.file_type", None)
        if ft != {"f16": 1, "bf16": 32}[typ]:
            fail(f"{typ}: general.file_type {ft}")
        if kv_in != kv_out:
            fail(f"{typ}: metadata changed: {set(kv_in.items()) ^ set((k, str(v)) for k, v in kv_out.items())}")
        src_t = {t.name: t for t in r_in.tensors}
        for t in r_out.tensors:
            x = values(src_t[t.name])
            want_code = 0 if x.ndim <= 1 else code
            if int(t.tensor_type) != want_code:
                fail(f"{typ} {t.name}: type {int(t.tensor_type)}, expected {want_code}")
            if want_code == 0:
                want = x
            elif typ == "f16":
                want = x.astype(np.float16).astype(np.float32)
            else:
                want = bf16_rne(x)
            if not np.array_equal(values(t), want):
                fail(f"{typ} {t.name}: values differ from the reference rounding")
            n_values += x.size

        listing = run(a.cli, "inspect", dst)
        for k in kv_out:
            if k not in listing:
                fail(f"inspect: key {k} missing from the listing")
        for t in r_out.tensors:
            shape = ", ".join(str(int(d)) for d in t.shape)
            tname = Q(int(t.tensor_type)).name.lower()
            line = [l for l in listing.splitlines() if l.strip().startswith(t.name + " ")]
            if not line or tname not in line[0] or f"[{shape}]" not in line[0]:
                fail(f"inspect: tensor line for {t.name} ({tname} [{shape}]) missing or wrong: {line}")

    print(f"gguf retype: {n_values} values checked, {len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
