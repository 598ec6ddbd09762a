#!/usr/bin/env python3
"""The default real model (Gemma 3 270M Q4_K_M) against llama.cpp's own outputs.

The references in tests/engine/data/llamacpp/ were produced by llama.cpp (llama-completion,
llama-perplexity; make_refs.sh there has the exact commands) and are committed because CI does
not build llama.cpp. This script runs tandem-cli on the same file and asserts:
  - greedy: the first 32 generated tokens are llama.cpp's (ids, and the text they decode to);
  - perplexity of perplexity_text.txt (chunks of 256) is within 1% of llama.cpp's.
Exit 77 (ctest skip) with a message when the model is absent or is another file than the one
the references were made with.
"""
import argparse
import hashlib
import json
import os
import pathlib
import subprocess
import sys

MIN_GREEDY_MATCH = 32
PPL_REL_TOL = 0.01


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run(cmd):
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout)
        print(r.stderr)
        raise SystemExit(f"FAIL: exit {r.returncode}: {' '.join(cmd)}")
    return r.stdout, r.stderr


def check_greedy(cli, model, data, threads):
    ref = json.loads((data / "greedy_gemma3_270m.json").read_text())
    out, err = run([cli, "generate", "-m", model, "-p", ref["prompt"], "-n", str(ref["n_predict"]),
                    "--temp", "0", "--ignore-eos", "--print-ids", "--ctx", "256",
                    "--threads", str(threads)])
    lines = out.rstrip("\n").split("\n")
    ids = [int(x) for x in lines[-1].split()]
    text = "\n".join(lines[:-1])
    ref_ids = ref["text_ids_llama_tokenize"]
    n_match = 0
    while n_match < min(len(ids), len(ref_ids)) and ids[n_match] == ref_ids[n_match]:
        n_match += 1
    print(f"greedy: {n_match} of {len(ref_ids)} tokens equal to llama.cpp's")
    print(f"  ours:      {text!r}")
    print(f"  llama.cpp: {ref['text']!r}")
    ok = n_match >= MIN_GREEDY_MATCH
    # The text must agree as far as the ids do (a decode check independent of the ids).
    if n_match == len(ref_ids) and text != ref["text"]:
        print("FAIL: same ids but different text")
        ok = False
    if n_match < len(ref_ids):
        common = os.path.commonprefix([text, ref["text"]])
        print(f"  texts agree for {len(common)} characters")
    return ok


def check_perplexity(cli, model, data, threads):
    ref = json.loads((data / "perplexity_gemma3_270m.json").read_text())
    out, _ = run([cli, "perplexity", "-m", model, "-f", str(data / "perplexity_text.txt"),
                  "--ctx", str(ref["n_ctx"]), "--threads", str(threads), "--json"])
    ours = json.loads(out)
    rel = ours["perplexity"] / ref["perplexity"] - 1
    print(f"perplexity: ours {ours['perplexity']:.4f}, llama.cpp {ref['perplexity']:.4f}, "
          f"relative difference {rel * 100:+.3f}% (bound {PPL_REL_TOL * 100:.0f}%)")
    for i, (a, b) in enumerate(zip(ours["by_chunk"], ref["by_chunk"])):
        print(f"  after chunk {i + 1}: ours {a:.4f}  llama.cpp {b:.4f}  ({(a / b - 1) * 100:+.3f}%)")
    ok = ours["n_chunks"] == ref["n_chunks"] and abs(rel) <= PPL_REL_TOL
    if ours["n_chunks"] != ref["n_chunks"]:
        print(f"FAIL: {ours['n_chunks']} chunks, llama.cpp scored {ref['n_chunks']} "
              "(tokenization differs?)")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", default=os.environ.get("TANDEM_DEFAULT_MODEL", ""))
    ap.add_argument("--data", default=str(pathlib.Path(__file__).resolve().parents[1] /
                                          "engine" / "data" / "llamacpp"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", choices=["greedy", "perplexity"])
    a = ap.parse_args()
    if not a.model or not os.path.isfile(a.model):
        skip("no default model (set TANDEM_DEFAULT_MODEL; packaging/fetch-default-model.sh)")
    data = pathlib.Path(a.data)
    want = json.loads((data / "greedy_gemma3_270m.json").read_text())["model_sha256"]
    have = sha256(a.model)
    if have != want:
        skip(f"{a.model} is not the file the llama.cpp references were made with "
             f"(sha256 {have}, references: {want})")
    ok = True
    if a.only in (None, "greedy"):
        ok &= check_greedy(a.cli, a.model, data, a.threads)
    if a.only in (None, "perplexity"):
        ok &= check_perplexity(a.cli, a.model, data, a.threads)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
