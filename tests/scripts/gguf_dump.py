#!/usr/bin/env python3
"""Dumps a GGUF file as JSON using the PyPI `gguf` package (llama.cpp's own reader), as the
independent reference for tandem's GGUF reader and writer tests.

usage: gguf_dump.py FILE.gguf [--max-data-bytes N]
Output: {"version", "tensor_count", "kv_count", "alignment", "data_offset",
         "kv": {key: {"types": [...], "value": ...}},
         "tensors": [{"name", "type", "shape" (ggml order), "n_bytes", "offset" (absolute),
                      "data_hex" (when n_bytes <= N)}]}
"""
import json
import sys

from gguf import GGUFReader


def main():
    path = sys.argv[1]
    max_bytes = 65536
    if len(sys.argv) > 3 and sys.argv[2] == "--max-data-bytes":
        max_bytes = int(sys.argv[3])
    r = GGUFReader(path)
    out = {"alignment": int(r.alignment), "data_offset": int(r.data_offset), "kv": {}, "tensors": []}
    for name, f in r.fields.items():
        if name.startswith("GGUF."):
            out[name[5:]] = int(f.contents())
            continue
        out["kv"][name] = {"types": [int(t) for t in f.types], "value": f.contents()}
    for t in r.tensors:
        d = {"name": t.name, "type": int(t.tensor_type), "shape": [int(x) for x in t.shape],
             "n_bytes": int(t.n_bytes), "offset": int(t.data_offset)}
        if t.n_bytes <= max_bytes:
            d["data_hex"] = t.data.tobytes().hex()
        out["tensors"].append(d)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
