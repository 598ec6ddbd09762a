#!/usr/bin/env python3
"""CLI contract of the engine commands (docs: design.md section 5): synth writes the shapes it
claims (read back with the PyPI gguf package), bench --json reports speeds, eval/generate follow
their output formats, and bad input ends with a clear error, not a crash."""
import argparse
import json
import os
import subprocess
import sys

import gguf
import numpy as np


def run(cli, *args, ok=True):
    r = subprocess.run([cli, *args], capture_output=True, text=True, timeout=300)
    if ok and r.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(args)} exited {r.returncode}: {r.stderr}")
    if not ok and r.returncode == 0:
        raise SystemExit(f"FAIL: {' '.join(args)} succeeded but should have failed")
    if r.returncode < 0:
        raise SystemExit(f"FAIL: {' '.join(args)} crashed (signal {-r.returncode})")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    cli = a.cli

    # synth: shapes and types as an independent reader sees them.
    path = os.path.join(a.out_dir, "tiny-qwen3moe-q4_k.gguf")
    run(cli, "synth", "--like", "tiny-qwen3moe", "--type", "q4_k", "-o", path)
    r = gguf.GGUFReader(path)
    t = {x.name: x for x in r.tensors}
    assert str(r.fields["general.architecture"].contents()) == "qwen3moe"
    assert t["blk.1.ffn_gate_exps.weight"].tensor_type == gguf.GGMLQuantizationType.Q4_K
    assert [int(v) for v in t["blk.1.ffn_gate_exps.weight"].shape] == [256, 256, 4]
    assert [int(v) for v in t["blk.0.ffn_down_exps.weight"].shape] == [256, 256, 4]
    assert t["blk.0.attn_norm.weight"].tensor_type == gguf.GGMLQuantizationType.F32
    assert np.isfinite(gguf.quants.dequantize(t["blk.0.attn_q.weight"].data, t["blk.0.attn_q.weight"].tensor_type)).all()
    run(cli, "synth", "--like", "no-such-model", "--type", "q4_0", "-o", path + ".x", ok=False)

    # bench --json
    b = json.loads(run(cli, "bench", "-m", path, "-p", "16", "-n", "4", "--json", "--threads", "2").stdout)
    for k in ("prefill_tok_s", "decode_tok_s", "decode_gb_s"):
        assert b[k] > 0, (k, b)
    assert b["decode_bytes_per_token"] < b["weight_bytes"], b  # only 2 of 4 experts are read

    # eval: float32 LE [n_ids, n_vocab], finite.
    lo = os.path.join(a.out_dir, "eval.f32")
    run(cli, "eval", "-m", path, "--ids", "1,2,3,500", "--logits-out", lo)
    x = np.fromfile(lo, dtype="<f4")
    assert x.size == 4 * 512 and np.isfinite(x).all(), x.size

    # generate --print-ids: the last line is the ids.
    out = run(cli, "generate", "-m", path, "--ids", "1,2,3", "-n", "5", "--print-ids").stdout.strip().splitlines()
    ids = [int(v) for v in out[-1].split()]
    assert len(ids) == 5 and all(0 <= i < 512 for i in ids), out

    # Bad input: clear errors.
    checks = [
        (["eval", "-m", path, "--ids", "1,x,3", "--logits-out", lo], "not a token id"),
        (["eval", "-m", path, "--ids", "1,512", "--logits-out", lo], "outside the vocabulary"),
        (["eval", "-m", path, "--ids", "1,2,3,4,5,6", "--logits-out", lo, "--ctx", "4"], "context full"),
        (["eval", "-m", path + ".missing", "--ids", "1", "--logits-out", lo], "error:"),
        (["eval", "-m", path, "--ids", "1", "--logits-out", lo, "--backend", "nosuch"], "not available"),
    ]
    for args, text in checks:
        e = run(cli, *args, ok=False).stderr
        assert text in e, (args, e)
    print("engine CLI contract: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
