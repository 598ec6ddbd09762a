"""tandem-cli serve driven by the real OpenAI Python client (PyPI `openai`) with the default model:
models, chat and completions (whole and streamed), stop sequences, max_tokens, usage counts,
OpenAI-style errors, and concurrent clients that must each get their own answer.

Exit 77 (CTest skip) when the model is absent. Usage:
  server_openai_check.py --cli build/bin/tandem-cli --model gemma-3-270m-q4_k_m.gguf
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import subprocess
import sys
import threading
import time

import openai

MODEL_ID = "fixture-model"


class Server:
    def __init__(self, cli, model, *extra):
        cmd = [cli, "serve", "-m", model, "--port", "0", "--ctx", "1024", "--model-id", MODEL_ID,
               *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = ""
        for _ in range(100):  # anything printed while the model loads comes first
            line = self.proc.stdout.readline()
            if not line or line.startswith("listening on http://"):
                break
        if not line.startswith("listening on http://"):
            self.proc.kill()
            raise SystemExit(f"serve did not start: {line!r} {self.proc.stderr.read()}")
        self.base = line.split()[2]  # http://127.0.0.1:PORT
        self.port = int(self.base.rsplit(":", 1)[1])
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def client(self, **kw):
        return openai.OpenAI(base_url=self.base + "/v1", api_key=kw.pop("api_key", "unused"),
                             max_retries=0, timeout=120, **kw)

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(timeout=30)
        assert rc == 0, f"serve exited with {rc}: {''.join(self.stderr)}"


failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def chat(client, text, **kw):
    return client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": text}], temperature=0, **kw)


def test_basics(client):
    models = client.models.list()
    check([m.id for m in models.data] == [MODEL_ID], f"models.list -> {[m.id for m in models.data]}")

    r = chat(client, "Name three colors.", max_tokens=12)
    text = r.choices[0].message.content
    u = r.usage
    check(r.object == "chat.completion" and r.choices[0].message.role == "assistant",
          "chat.completion shape")
    check(len(text) > 0, f"chat answer is non-empty: {text!r}")
    check(u.completion_tokens <= 12 and u.total_tokens == u.prompt_tokens + u.completion_tokens,
          f"usage counts {u}")
    check(u.prompt_tokens > 5, f"prompt tokens include the template: {u.prompt_tokens}")

    # Streaming gives the same greedy answer, chunk by chunk, then a usage chunk.
    stream = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "Name three colors."}],
        temperature=0, max_tokens=12, stream=True, stream_options={"include_usage": True})
    pieces, finish, usage, roles = [], None, None, []
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            if c.delta.role:
                roles.append(c.delta.role)
            if c.delta.content:
                pieces.append(c.delta.content)
            if c.finish_reason:
                finish = c.finish_reason
    check("".join(pieces) == text, f"streamed chat equals the whole answer ({len(pieces)} chunks)")
    check(len(pieces) > 1, "streamed in more than one chunk")
    check(roles == ["assistant"], f"first delta carries the role: {roles}")
    check(finish == r.choices[0].finish_reason, f"stream finish_reason {finish}")
    check(usage is not None and usage.completion_tokens == u.completion_tokens,
          f"stream usage {usage}")

    # max_tokens: exactly that many tokens, finish_reason "length".
    r3 = chat(client, "Write a long story about a dragon.", max_tokens=3)
    check(r3.choices[0].finish_reason == "length" and r3.usage.completion_tokens == 3,
          f"max_tokens=3 -> {r3.choices[0].finish_reason}, {r3.usage.completion_tokens} tokens")

    # stop: cut the greedy answer at a sequence taken from its middle.
    full = chat(client, "Count from one to twenty in words, separated by commas.",
                max_tokens=40).choices[0].message.content
    cut = len(full) // 2
    stop = full[cut:cut + 3]
    expect = full[:full.index(stop)]
    rs = chat(client, "Count from one to twenty in words, separated by commas.", max_tokens=40,
              stop=[stop, "\u2603never"])
    check(rs.choices[0].message.content == expect and rs.choices[0].finish_reason == "stop",
          f"stop {stop!r}: {rs.choices[0].message.content!r} == {expect!r}")
    pieces = [c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user",
                                   "content": "Count from one to twenty in words, separated by commas."}],
        temperature=0, max_tokens=40, stop=stop, stream=True) if c.choices]
    check("".join(pieces) == expect, "streamed text stops before the stop sequence too")


def test_completions(client, cli, model):
    prompt = "The quick brown fox"
    r = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=8, temperature=0)
    check(r.object == "text_completion" and r.usage.completion_tokens <= 8, "text_completion shape")
    # The same continuation as `tandem-cli generate` (a separate process, no server).
    out = subprocess.run([cli, "generate", "-m", model, "--ctx", "1024", "-p", prompt, "-n", "8",
                          "--print-ids"], capture_output=True, text=True, check=True).stdout
    cli_text = out.rsplit("\n", 2)[0]
    check(r.choices[0].text == cli_text, f"completion {r.choices[0].text!r} == generate {cli_text!r}")
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model=MODEL_ID, prompt=prompt, max_tokens=8, temperature=0, stream=True) if c.choices)
    check(streamed == r.choices[0].text, "streamed completion equals the whole one")


def test_errors(server, client):
    try:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
        check(False, "unknown model raises")
    except openai.NotFoundError as e:
        check(e.status_code == 404 and e.code == "model_not_found", f"unknown model -> {e}")
    try:
        client.chat.completions.create(
            model=MODEL_ID, messages=[{"role": "user", "content": "x"}], temperature=7)
        check(False, "temperature 7 raises")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.param == "temperature", f"bad temperature -> {e}")
    try:
        client.chat.completions.create(model=MODEL_ID, messages=[])
        check(False, "empty messages raises")
    except openai.BadRequestError as e:
        check(e.param == "messages", f"empty messages -> {e}")
    # Malformed JSON straight over HTTP (the client never sends any).
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/v1/chat/completions", body=b'{"model": "x", ', headers={
        "Content-Type": "application/json"})
    resp = conn.getresponse()
    body = json.loads(resp.read())
    check(resp.status == 400 and body["error"]["type"] == "invalid_request_error",
          f"malformed JSON -> {resp.status} {body}")
    conn.close()


def test_concurrent(client, n_clients=8, rounds=2):
    prompts = [f"Reply with the number {i * 7 + 3} and one word about it." for i in range(n_clients)]
    serial = {p: chat(client, p, max_tokens=6).choices[0].message.content for p in prompts}
    t0 = time.monotonic()
    jobs = [(p, s) for _ in range(rounds) for i, p in enumerate(prompts) for s in [i % 2 == 0]]

    def one(job):
        p, streamed = job
        if streamed:
            return p, "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
                model=MODEL_ID, messages=[{"role": "user", "content": p}], temperature=0,
                max_tokens=6, stream=True) if c.choices)
        return p, chat(client, p, max_tokens=6).choices[0].message.content

    with concurrent.futures.ThreadPoolExecutor(n_clients) as pool:
        results = list(pool.map(one, jobs))
    took = time.monotonic() - t0
    wrong = [(p, got, serial[p]) for p, got in results if got != serial[p]]
    check(len(results) == len(jobs) and not wrong,
          f"{len(jobs)} requests from {n_clients} concurrent clients in {took:.1f} s, "
          f"{len(wrong)} mixed up {wrong[:2]}")
    check(took < 300, "load test within its time bound")


def test_api_key(cli, model):
    server = Server(cli, model, "--api-key", "k-123")
    try:
        try:
            server.client(api_key="wrong").models.list()
            check(False, "wrong key raises")
        except openai.AuthenticationError as e:
            check(e.status_code == 401, f"wrong API key -> {e.status_code}")
        check(len(server.client(api_key="k-123").models.list().data) == 1, "right API key works")
    finally:
        server.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", default=os.environ.get("TANDEM_DEFAULT_MODEL", ""))
    args = ap.parse_args()
    if not args.model or not os.path.isfile(args.model):
        print("SKIP: no default model (set TANDEM_DEFAULT_MODEL; packaging/fetch-default-model.sh)")
        return 77
    server = Server(args.cli, args.model)
    try:
        client = server.client()
        test_basics(client)
        test_completions(client, args.cli, args.model)
        test_errors(server, client)
        test_concurrent(client)
    finally:
        server.stop()
    test_api_key(args.cli, args.model)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
