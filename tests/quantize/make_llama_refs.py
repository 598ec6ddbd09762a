#!/usr/bin/env python3
"""Makes tests/quantize/data/llama_quantize_reference.tsv: what llama.cpp's llama-quantize
writes for each test input, as one line per tensor (type and sha256 of its data).

The inputs are the ones test-quantize quantizes itself: run
    TANDEM_QUANT_DUMP_DIR=/tmp/qrefs build/bin/test-quantize --gtest_filter='LlamaQuantize.*'
to write them (hf-tiny models converted to f32 by tandem-cli's converter, plus an edge-case
model), then
    tests/quantize/make_llama_refs.py /tmp/qrefs /path/to/llama-quantize > tests/quantize/data/llama_quantize_reference.tsv
llama-quantize is not needed in CI: the test compares against this file. The input tensors'
hashes are recorded too, so a changed input is reported as such, not as a quantizer bug.

Lines: MODEL<TAB>SCHEME<TAB>TENSOR<TAB>TYPE<TAB>SHA256 (SCHEME "input" for the f32 input).
"""
import hashlib
import os
import subprocess
import sys
import tempfile

from gguf import GGUFReader

SCHEMES = ["Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"]


def tensor_lines(model, scheme, path):
    r = GGUFReader(path)
    out = []
    for t in r.tensors:
        h = hashlib.sha256(bytes(t.data.tobytes())).hexdigest()
        out.append(f"{model}\t{scheme}\t{t.name}\t{t.tensor_type.name}\t{h}")
    return out


def main():
    src, tool = sys.argv[1], sys.argv[2]
    print("# llama-quantize reference for test-quantize (tests/quantize/make_llama_refs.py)")
    print("# llama.cpp from the llama-cpp-python 0.3.36 sdist (vendor/llama.cpp), CPU build")
    print("# command: llama-quantize IN.f32.gguf OUT.gguf SCHEME 2")
    inputs = sorted(n for n in os.listdir(src) if n.endswith(".f32.gguf"))
    with tempfile.TemporaryDirectory() as tmp:  # the tool prints its version when it runs
        p = subprocess.run([tool, os.path.join(src, inputs[0]), os.path.join(tmp, "v.gguf"), "Q8_0"],
                           capture_output=True, text=True)
        for line in (p.stdout + p.stderr).splitlines():
            if line.startswith("Version:"):
                print("# " + line.strip())
    for name in inputs:
        model = name[: -len(".f32.gguf")]
        path = os.path.join(src, name)
        for line in tensor_lines(model, "input", path):
            print(line)
        for scheme in SCHEMES:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "out.gguf")
                p = subprocess.run([tool, path, out, scheme, "2"], capture_output=True, text=True)
                if p.returncode != 0:
                    sys.stderr.write(p.stdout + p.stderr)
                    raise SystemExit(f"llama-quantize failed on {name} {scheme}")
                for line in tensor_lines(model, scheme, out):
                    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
