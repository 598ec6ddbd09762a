"""CLI contract of `tandem-cli render-template` (docs: shared design notes, section 5).

1. --template-file: every case of chat-templates/expected.json (rendered by Jinja2 3.1) is printed
   byte for byte with no added newline; cases where Jinja2 raised exit non-zero with "error:".
2. -m MODEL: a GGUF written here with the PyPI `gguf` package (independent of our writer) carries
   the template in tokenizer.chat_template and <s>/</s> in its vocabulary at the bos/eos ids; a
   messages file without bos_token/eos_token renders exactly the fixture's expectation, and a file
   that sets them wins. A named template is picked with --template-name.
3. Bad input: missing template key, bad JSON, non-object JSON give a clear error, exit 1.

Usage: cli_check.py --cli PATH --fixtures DIR --work DIR   (exit 77: fixture missing, skipped)
"""
import argparse
import json
import os
import subprocess
import sys

import gguf


def run(cli, *args):
    return subprocess.run([cli, "render-template", *args], capture_output=True, timeout=60)


def write_gguf(path, template, named=None, bos_id=1, eos_id=2):
    w = gguf.GGUFWriter(path, "llama")
    w.add_tokenizer_model("llama")
    tokens = ["<unk>", "<s>", "</s>"] + [f"tok{i}" for i in range(10)]
    w.add_token_list(tokens)
    w.add_bos_token_id(bos_id)
    w.add_eos_token_id(eos_id)
    if named:
        w.add_chat_template([{"name": "default", "template": template}] +
                            [{"name": k, "template": v} for k, v in named.items()])
    elif template is not None:
        w.add_chat_template(template)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    root = os.path.join(a.fixtures, "chat-templates")
    if not os.path.isfile(os.path.join(root, "expected.json")):
        print(f"SKIP: fixture not found: {root}")
        return 77
    os.makedirs(a.work, exist_ok=True)
    cases = json.load(open(os.path.join(root, "expected.json"), encoding="utf-8"))["cases"]
    failures = []

    # 1. --template-file over every fixture case.
    rendered = raised = 0
    for i, c in enumerate(cases):
        tmpl = os.path.join(root, "templates", c["template"])
        ctx_path = os.path.join(a.work, f"ctx{i}.json")
        json.dump(c["context"], open(ctx_path, "w", encoding="utf-8"), ensure_ascii=False)
        r = run(a.cli, "--template-file", tmpl, "--messages-json", ctx_path)
        name = f'{c["template"]} / {c["case"]}'
        if c["error"]:
            if r.returncode == 0 or b"error:" not in r.stderr:
                failures.append(f"{name}: Jinja2 raised {c['error']!r}, CLI exit {r.returncode}")
            raised += 1
        elif r.returncode != 0 or r.stdout != c["expected"].encode("utf-8"):
            failures.append(f"{name}: exit {r.returncode}, stderr {r.stderr[:200]!r}, "
                            f"stdout differs: {r.stdout[:120]!r}")
        else:
            rendered += 1
    print(f"--template-file: {rendered} renderings byte-identical, {raised} errors raised")

    # 2. -m MODEL: template and special tokens from the GGUF.
    by_template = {}
    for c in cases:
        by_template.setdefault(c["template"], []).append(c)
    for tname in ["Qwen-Qwen2.5-7B-Instruct.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
                  "meta-llama-Llama-3.1-8B-Instruct.jinja"]:
        source = open(os.path.join(root, "templates", tname), encoding="utf-8").read()
        model = os.path.join(a.work, tname + ".gguf")
        write_gguf(model, source)
        for c in by_template[tname]:
            ctx = {k: v for k, v in c["context"].items() if k not in ("bos_token", "eos_token")}
            ctx_path = os.path.join(a.work, "m.json")
            json.dump(ctx, open(ctx_path, "w", encoding="utf-8"))
            r = run(a.cli, "-m", model, "--messages-json", ctx_path)
            if r.returncode != 0 or r.stdout != c["expected"].encode("utf-8"):
                failures.append(f"-m {tname} / {c['case']}: exit {r.returncode} {r.stderr[:200]!r}")
    # The file's bos_token overrides the model's.
    model = os.path.join(a.work, "bos.gguf")
    write_gguf(model, "[{{ bos_token }}|{{ eos_token }}|{{ messages|length }}]")
    ctx_path = os.path.join(a.work, "bos.json")
    json.dump({"messages": [{"role": "user", "content": "x"}], "bos_token": "<BOS>"}, open(ctx_path, "w"))
    r = run(a.cli, "-m", model, "--messages-json", ctx_path)
    if r.stdout != b"[<BOS>|</s>|1]":
        failures.append(f"file bos_token should win: got {r.stdout!r} {r.stderr!r}")
    # bos/eos at other ids come from the vocabulary.
    model = os.path.join(a.work, "ids.gguf")
    write_gguf(model, "{{ bos_token }}{{ eos_token }}", bos_id=5, eos_id=0)
    r = run(a.cli, "-m", model, "--messages-json", ctx_path.replace("bos.json", "m.json"))
    if r.stdout != b"tok2<unk>":
        failures.append(f"bos/eos from tokenizer.ggml.tokens: got {r.stdout!r} {r.stderr!r}")
    # Named templates.
    model = os.path.join(a.work, "named.gguf")
    write_gguf(model, "default:{{ messages|length }}", named={"tool_use": "tools:{{ messages|length }}"})
    r1 = run(a.cli, "-m", model, "--messages-json", ctx_path)
    r2 = run(a.cli, "-m", model, "--messages-json", ctx_path, "--template-name", "tool_use")
    if r1.stdout != b"default:1" or r2.stdout != b"tools:1":
        failures.append(f"named templates: {r1.stdout!r} {r2.stdout!r} {r2.stderr!r}")

    # 3. Bad input: clear errors, exit 1, never a crash.
    model = os.path.join(a.work, "none.gguf")
    write_gguf(model, None)
    r = run(a.cli, "-m", model, "--messages-json", ctx_path)
    if r.returncode != 1 or b"tokenizer.chat_template" not in r.stderr:
        failures.append(f"model without template: exit {r.returncode} {r.stderr!r}")
    bad = os.path.join(a.work, "bad.json")
    open(bad, "w").write("{not json")
    tmpl = os.path.join(root, "templates", "Qwen-Qwen2.5-7B-Instruct.jinja")
    r = run(a.cli, "--template-file", tmpl, "--messages-json", bad)
    if r.returncode != 1 or b"invalid JSON" not in r.stderr:
        failures.append(f"bad JSON: exit {r.returncode} {r.stderr!r}")
    open(bad, "w").write("[1, 2]")
    r = run(a.cli, "--template-file", tmpl, "--messages-json", bad)
    if r.returncode != 1 or b"JSON object" not in r.stderr:
        failures.append(f"non-object JSON: exit {r.returncode} {r.stderr!r}")
    broken = os.path.join(a.work, "broken.jinja")
    open(broken, "w").write("line one\n{% for m in messages %}{{ m.content ]}{% endfor %}")
    r = run(a.cli, "--template-file", broken, "--messages-json", ctx_path)
    if r.returncode != 1 or b"line 2" not in r.stderr or r.stdout:
        failures.append(f"syntax error: exit {r.returncode} {r.stderr!r} {r.stdout!r}")
    r = run(a.cli, "--messages-json", ctx_path)
    if r.returncode == 0:
        failures.append("neither -m nor --template-file must fail")

    for f in failures:
        print("FAIL:", f)
    print("OK" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
