#!/usr/bin/env python3
"""Independent check of `tandem-cli convert` on a Hugging Face folder.

Runs the converter, then reads the GGUF with the PyPI `gguf` package and the source weights with
the PyPI `safetensors` package, and checks llama.cpp's conventions from first principles: the
architecture and hyperparameter keys, the tensor names, types and shapes, and the values (the
llama Q/K row permutation and Gemma's stored 1 + w are undone here). Values must be exact for
f32 and bf16 output (the sources are bf16) and equal to numpy's float16 rounding for f16.

usage: convert_check.py --cli TANDEM_CLI --model HF_DIR --type f32|f16|bf16 --out-dir DIR
exit 0: pass, 1: fail, 77: fixture missing (CTest SKIP_RETURN_CODE)
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
from gguf import GGUFReader
from safetensors import deserialize

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg)


def bf16_bytes_to_f32(raw, shape):
    u = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
    return u.view(np.float32).reshape(shape)


def load_safetensors(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    files = ["model.safetensors"]
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    out = {}
    for fn in files:
        with open(os.path.join(folder, fn), "rb") as f:
            for name, t in deserialize(f.read()):
                raw = bytes(t["data"])
                if t["dtype"] == "BF16":
                    out[name] = bf16_bytes_to_f32(raw, t["shape"])
                elif t["dtype"] == "F16":
                    out[name] = np.frombuffer(raw, np.float16).astype(np.float32).reshape(t["shape"])
                elif t["dtype"] == "F32":
                    out[name] = np.frombuffer(raw, np.float32).reshape(t["shape"])
                else:
                    raise SystemExit(f"unexpected dtype {t['dtype']} in {name}")
    return out


def gguf_values(t):
    """A GGUF tensor as float32 in PyTorch order (ggml shape reversed)."""
    shape = [int(x) for x in reversed(list(t.shape))]
    raw = t.data.tobytes()
    kind = int(t.tensor_type)
    if kind == 0:
        v = np.frombuffer(raw, np.float32)
    elif kind == 1:
        v = np.frombuffer(raw, np.float16).astype(np.float32)
    elif kind == 30:
        v = bf16_bytes_to_f32(raw, [-1])
    else:
        raise SystemExit(f"unexpected tensor type {kind} for {t.name}")
    return v.reshape(shape)


def unpermute(w, n_head):
    # llama.cpp stores q/k rows per head as interleaved pairs; HF keeps [first half | second half].
    # Undo: reshape (n_head, half, 2, ...) -> swap -> (n_head, 2, half, ...).
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def expected_layout(cfg, arch, st):
    """{gguf_name: (hf_names, how)} built independently from llama.cpp's naming rules."""
    common = {
        "input_layernorm.weight": "attn_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
        "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
        "self_attn.v_proj.bias": "attn_v.bias",
        "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight", "mlp.gate.weight": "ffn_gate_inp.weight",
    }
    if arch == "gemma3":
        common.update({"post_attention_layernorm.weight": "post_attention_norm.weight",
                       "pre_feedforward_layernorm.weight": "ffn_norm.weight",
                       "post_feedforward_layernorm.weight": "post_ffw_norm.weight"})
    else:
        common["post_attention_layernorm.weight"] = "ffn_norm.weight"
    out = {}
    tied = cfg.get("tie_word_embeddings", arch == "gemma3")
    for name in st:
        if name == "model.embed_tokens.weight":
            out["token_embd.weight"] = ([name], "plain")
        elif name == "model.norm.weight":
            out["output_norm.weight"] = ([name], "plus1" if arch == "gemma3" else "plain")
        elif name == "lm_head.weight":
            if not tied:
                out["output.weight"] = ([name], "plain")
        else:
            m = re.match(r"model\.layers\.(\d+)\.(.+)$", name)
            if not m:
                fail(f"unexpected source tensor {name}")
                continue
            layer, suffix = m.group(1), m.group(2)
            e = re.match(r"mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight$", suffix)
            if e:
                key = f"blk.{layer}.ffn_{e.group(2)}_exps.weight"
                n_exp = cfg.get("num_experts") or cfg["num_local_experts"]
                srcs = [f"model.layers.{layer}.mlp.experts.{x}.{e.group(2)}_proj.weight" for x in range(n_exp)]
                out[key] = (srcs, "stack")
                continue
            how = "plain"
            if arch == "llama" and suffix.startswith("self_attn.q_proj"):
                how = ("unpermute", cfg["num_attention_heads"])
            elif arch == "llama" and suffix.startswith("self_attn.k_proj"):
                how = ("unpermute", cfg.get("num_key_value_heads", cfg["num_attention_heads"]))
            elif arch == "gemma3" and suffix.endswith("norm.weight"):
                how = "plus1"
            out[f"blk.{layer}.{common[suffix]}"] = ([name], how)
    return out


def check_metadata(r, cfg, arch, out_type):
    kv = {k: f.contents() for k, f in r.fields.items()}

    def want(key, value, approx=False):
        if key not in kv:
            fail(f"metadata key {key} missing")
        elif approx:
            if not np.isclose(np.float32(kv[key]), np.float32(value), rtol=0, atol=0):
                fail(f"{key} = {kv[key]}, expected {np.float32(value)}")
        elif kv[key] != value:
            fail(f"{key} = {kv[key]!r}, expected {value!r}")

    rp = cfg.get("rope_parameters") or {}
    full = rp.get("full_attention", rp)
    want("general.architecture", arch)
    want("general.file_type", {"f32": 0, "f16": 1, "bf16": 32}[out_type])
    want(f"{arch}.context_length", cfg["max_position_embeddings"])
    want(f"{arch}.embedding_length", cfg["hidden_size"])
    want(f"{arch}.block_count", cfg["num_hidden_layers"])
    want(f"{arch}.feed_forward_length", cfg["intermediate_size"])
    want(f"{arch}.attention.head_count", cfg["num_attention_heads"])
    want(f"{arch}.attention.head_count_kv", cfg["num_key_value_heads"])
    want(f"{arch}.attention.layer_norm_rms_epsilon", cfg["rms_norm_eps"], approx=True)
    want(f"{arch}.rope.freq_base", full.get("rope_theta", cfg.get("rope_theta")), approx=True)
    if "head_dim" in cfg:
        want(f"{arch}.attention.key_length", cfg["head_dim"])
        want(f"{arch}.attention.value_length", cfg["head_dim"])
    if arch == "llama":
        want("llama.vocab_size", cfg["vocab_size"])
        want("llama.rope.dimension_count", cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"]))
    if arch == "qwen3moe":
        want("qwen3moe.expert_count", cfg.get("num_experts") or cfg["num_local_experts"])
        want("qwen3moe.expert_used_count", cfg["num_experts_per_tok"])
        want("qwen3moe.expert_feed_forward_length", cfg["moe_intermediate_size"])
    if arch == "gemma3":
        want("gemma3.attention.sliding_window", cfg["sliding_window"])
        want("gemma3.rope.freq_base_swa", rp["sliding_attention"]["rope_theta"], approx=True)
        want("gemma3.attention.sliding_window_pattern",
             [t == "sliding_attention" for t in cfg["layer_types"]])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--type", required=True, choices=["f32", "f16", "bf16"])
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    if not os.path.isdir(a.model):
        print(f"SKIP: fixture {a.model} not found")
        return 77
    os.makedirs(a.out_dir, exist_ok=True)
    out = os.path.join(a.out_dir, f"{os.path.basename(a.model.rstrip('/'))}-{a.type}.gguf")
    res = subprocess.run([a.cli, "convert", a.model, "-o", out, "--type", a.type], capture_output=True, text=True)
    print(res.stdout, res.stderr)
    if res.returncode != 0:
        fail(f"convert exited {res.returncode}")
        return 1

    cfg = json.load(open(os.path.join(a.model, "config.json")))
    arch = {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3",
            "Qwen3MoeForCausalLM": "qwen3moe", "Gemma3ForCausalLM": "gemma3"}[cfg["architectures"][0]]
    st = load_safetensors(a.model)
    r = GGUFReader(out)
    check_metadata(r, cfg, arch, a.type)

    layout = expected_layout(cfg, arch, st)
    got = {t.name: t for t in r.tensors}
    if set(got) != set(layout):
        fail(f"tensor names differ: missing {sorted(set(layout) - set(got))}, extra {sorted(set(got) - set(layout))}")
    want_type = {"f32": 0, "f16": 1, "bf16": 30}[a.type]
    n_checked = 0
    n_values = 0
    for name, (srcs, how) in layout.items():
        if name not in got:
            continue
        t = got[name]
        v = gguf_values(t)
        src = np.stack([st[s] for s in srcs]) if how == "stack" else st[srcs[0]]
        if list(v.shape) != list(src.shape):
            fail(f"{name}: shape {list(v.shape)} (PyTorch order), source {list(src.shape)}")
            continue
        keep_f32 = src.ndim <= 1 or name.endswith("_norm.weight") or "ffn_gate_inp" in name or not name.endswith(".weight")
        expect_type = 0 if keep_f32 else want_type
        if int(t.tensor_type) != expect_type:
            fail(f"{name}: type {int(t.tensor_type)}, expected {expect_type}")
        if isinstance(how, tuple):
            v = unpermute(v, how[1])
        elif how == "plus1":
            # HF's Gemma3RMSNorm computes 1 + w in float32; the stored value must be exactly that
            # (subtracting 1 again would not be exact for tiny w).
            src = np.float32(1) + src.astype(np.float32)
        if int(t.tensor_type) == 1:
            expected = src.astype(np.float16).astype(np.float32)  # numpy's round-to-nearest-even
        else:
            expected = src
        if not np.array_equal(v, expected):
            bad = np.argwhere(v != expected)
            i = tuple(bad[0])
            fail(f"{name}: {len(bad)} values differ, first at {i}: {v[i]} vs {expected[i]}")
        n_checked += 1
        n_values += v.size
    if arch == "llama":
        # The permutation must actually move rows (else the check above proves nothing about it).
        q = gguf_values(got["blk.0.attn_q.weight"])
        if np.array_equal(q if q.dtype == np.float32 else q, st["model.layers.0.self_attn.q_proj.weight"].astype(q.dtype)):
            fail("llama attn_q equals the unpermuted source")
    print(f"{os.path.basename(a.model)} {a.type}: {n_checked} tensors, {n_values} values checked, "
          f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
