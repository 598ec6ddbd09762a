#!/usr/bin/env python3
"""tandem-cli quantize / convert --type q* / list FIT, checked with the PyPI gguf package.

Usage: quantize_cli_check.py --cli TANDEM_CLI --fixtures DIR --out-dir DIR. Exit 77 (skip) when
hf-tiny is missing."""
import argparse
import json
import os
import shutil
import subprocess
import sys

from gguf import GGUFReader


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=300)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    model = os.path.join(a.fixtures, "hf-tiny", "llama-tiny")
    if not os.path.isdir(model):
        print("skip: fixture hf-tiny/llama-tiny not found")
        return 77
    shutil.rmtree(a.out_dir, ignore_errors=True)
    os.makedirs(a.out_dir)
    failures = []

    def check(ok, what, detail=""):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what + ": " + detail[-2000:])

    out = os.path.join(a.out_dir, "q4km.gguf")
    r = run(a.cli, "quantize", model, out, "--type", "q4_k_m", "-t", "2")
    check(r.returncode == 0 and os.path.exists(out), "quantize HF folder -> Q4_K_M", r.stdout + r.stderr)
    if os.path.exists(out):
        g = GGUFReader(out)
        ft = int(g.fields["general.file_type"].parts[-1][0])
        types = {t.name: t.tensor_type.name for t in g.tensors}
        check(ft == 15, "general.file_type is LLAMA_FTYPE_MOSTLY_Q4_K_M (15)", str(ft))
        check(types.get("blk.0.attn_q.weight") == "Q4_K" and types.get("output.weight") == "Q6_K"
              and types.get("blk.0.attn_norm.weight") == "F32"
              # 3 layers: only layer 2 gets more bits (attn_v Q6_K; ffn_down Q6_K, but its 640
              # columns are no multiple of 256 -> Q8_0); layer 0's ffn_down Q4_K -> Q5_0.
              and types.get("blk.2.attn_v.weight") == "Q6_K" and types.get("blk.0.attn_v.weight") == "Q4_K"
              and types.get("blk.2.ffn_down.weight") == "Q8_0" and types.get("blk.0.ffn_down.weight") == "Q5_0",
              "Q4_K_M type mix", json.dumps(types))

    f32 = os.path.join(a.out_dir, "f32.gguf")
    run(a.cli, "convert", model, "-o", f32, "--type", "f32")
    q8 = os.path.join(a.out_dir, "q8.gguf")
    r = run(a.cli, "quantize", f32, q8, "--type", "Q8_0")
    check(r.returncode == 0 and "types:" in r.stdout and "q8_0" in r.stdout, "quantize GGUF -> Q8_0 with summary",
          r.stdout + r.stderr)
    r = run(a.cli, "convert", f32, "-o", os.path.join(a.out_dir, "q6.gguf"), "--type", "q6_k")
    check(r.returncode == 0 and os.path.exists(os.path.join(a.out_dir, "q6.gguf")), "convert GGUF --type q6_k",
          r.stdout + r.stderr)

    bad = os.path.join(a.out_dir, "bad.gguf")
    r = run(a.cli, "quantize", f32, bad, "--type", "q3_k")
    check(r.returncode == 1 and "unknown --type" in r.stderr and not os.path.exists(bad), "unknown type refused",
          r.stderr)
    r = run(a.cli, "quantize", os.path.join(a.out_dir, "missing.gguf"), bad)
    check(r.returncode == 1 and "does not exist" in r.stderr and not os.path.exists(bad), "missing input", r.stderr)
    r = run(a.cli, "quantize", q8, bad, "--type", "q4_0")
    check(r.returncode == 1 and "already q8_0" in r.stderr and not os.path.exists(bad)
          and not os.path.exists(bad + ".tmp"), "requantizing refused, no file", r.stderr)

    home = os.path.join(a.out_dir, "home")
    scan = os.path.join(a.out_dir, "scan")
    os.makedirs(scan)
    shutil.copy(out, scan)
    r = run(a.cli, "list", "--home", home, "--scan", scan, "--json")
    models = json.loads(r.stdout) if r.returncode == 0 else []
    check(len(models) == 1 and models[0]["fit"]["verdict"] in ("yes", "no")
          and models[0]["fit"]["n_ctx"] == 4096 and models[0]["fit"]["need_bytes"] > 0,
          "list --json has a planned fit hint", r.stdout + r.stderr)
    r = run(a.cli, "list", "--home", home)
    check(r.returncode == 0 and "FIT" in r.stdout, "list shows a FIT column", r.stdout)

    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
