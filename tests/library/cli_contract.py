#!/usr/bin/env python3
"""CLI contract of `tandem-cli search/pull/list/rm` against the local hub stand-in.

usage: cli_contract.py PATH/TO/tandem-cli
Needs the gguf package (the test venv); prints 'N passed, N failed' and exits non-zero on failure.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = sys.argv[1]
passed, failed = 0, 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s %s" % (what, detail))


def start_hub(root):
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "hf_test_server.py"), "--root", root],
                         stdout=subprocess.PIPE, text=True)
    port = int(p.stdout.readline().split()[1])
    return p, "http://127.0.0.1:%d" % port


def control(url, what, query=""):
    return json.load(urllib.request.urlopen(url + "/_control/" + what + ("?" + query if query else "")))


def cli(home, url, *args, **kw):
    cmd = [CLI, *args]
    if args[0] in ("pull", "list", "rm"):
        cmd += ["--home", home]
    if args[0] in ("search", "pull"):
        cmd += ["--endpoint", url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.get("timeout", 60))


def make_gguf(out, *args):
    subprocess.run([sys.executable, os.path.join(HERE, "make_test_gguf.py"), out, *args],
                   check=True, capture_output=True)


def main():
    tmp = tempfile.mkdtemp(prefix="tandem-cli-library-")
    root, home = os.path.join(tmp, "hub"), os.path.join(tmp, "home")
    os.makedirs(os.path.join(root, "org", "Tiny-GGUF"))
    json.dump([{"id": "org/Tiny-GGUF", "downloads": 1234, "likes": 5, "tags": ["gguf"],
                "lastModified": "2025-05-01T00:00:00.000Z"},
               {"id": "org/Other", "downloads": 9, "likes": 1, "tags": ["safetensors"]}],
              open(os.path.join(root, "_models.json"), "w"))
    make_gguf(os.path.join(root, "org", "Tiny-GGUF", "Tiny-Q8_0.gguf"), "--name", "Tiny")
    make_gguf(os.path.join(root, "org", "Tiny-GGUF", "Tiny-Q4_K_M.gguf"), "--name", "TinyQ4",
              "--split-tensors", "3", "--file-type", "15")
    # A bigger file, for interrupting a pull.
    with open(os.path.join(root, "org", "Tiny-GGUF", "Big-F16.gguf"), "wb") as f:
        f.write(os.urandom(8 << 20))
    hub, url = start_hub(root)
    try:
        r = cli(home, url, "search", "tiny", "--json")
        check(r.returncode == 0, "search exit", r.stderr)
        ids = [m["id"] for m in json.loads(r.stdout)] if r.returncode == 0 else []
        check(ids == ["org/Tiny-GGUF"], "search finds the GGUF repo only", str(ids))

        r = cli(home, url, "pull", "org/Tiny-GGUF", "--list")
        check(r.returncode == 0 and "Q4_K_M" in r.stdout and "Q8_0" in r.stdout, "pull --list", r.stdout + r.stderr)

        r = cli(home, url, "pull", "org/Tiny-GGUF:Q4_K_M")
        check(r.returncode == 0 and "pulled org/Tiny-GGUF:Q4_K_M" in r.stdout, "pull split", r.stdout + r.stderr)
        r = cli(home, url, "pull", "org/Tiny-GGUF:Q4_K_M")
        check(r.returncode == 0 and "already in the library" in r.stdout, "pull again", r.stdout + r.stderr)

        r = cli(home, url, "pull", "org/Tiny-GGUF:Q2_K")
        check(r.returncode == 1 and r.stderr.startswith("error:") and "available:" in r.stderr,
              "unknown quant is an error", r.stderr)
        r = cli(home, url, "pull", "org/Nothing:Q4_K_M")
        check(r.returncode == 1 and "not found" in r.stderr, "unknown repo is an error", r.stderr)

        # Ctrl-C mid-download keeps the partial file; the same command resumes.
        control(url, "fault", "kind=stall&after=1048576&seconds=30&times=8&match=Big-F16")
        p = subprocess.Popen([CLI, "pull", "org/Tiny-GGUF:F16", "--home", home, "--endpoint", url],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        part = os.path.join(home, "models", "org", "Tiny-GGUF", "Big-F16.gguf.part")
        deadline = time.time() + 20
        while time.time() < deadline and not os.path.exists(part + ".json"):
            time.sleep(0.05)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
        check(p.returncode == 130 and "resume" in err, "SIGINT cancels with a resume hint",
              "rc=%s %s" % (p.returncode, err[-300:]))
        check(os.path.exists(part), "partial file kept")
        control(url, "reset")
        r = cli(home, url, "pull", "org/Tiny-GGUF:F16")
        # Not a GGUF (random bytes): downloaded, verified, but refused by the catalog.
        check(r.returncode == 1 and "not a usable model" in r.stderr, "resumed pull verifies and refuses junk",
              r.stderr)
        served = control(url, "stats")["stats"]["bytes"]
        check(served < (8 << 20), "resume fetched only the rest", "served %d" % served)

        r = cli(home, url, "pull", "org/Tiny-GGUF:Q8_0")
        check(r.returncode == 0, "pull single", r.stderr)

        r = cli(home, url, "list", "--json")
        models = json.loads(r.stdout) if r.returncode == 0 else []
        check(len(models) == 2, "list shows 2 models", r.stdout)
        q4 = [m for m in models if m["quant"] == "Q4_K_M"]
        check(len(q4) == 1 and len(q4[0]["files"]) == 3 and q4[0]["source_repo"] == "org/Tiny-GGUF",
              "list record of the split model", json.dumps(q4))
        r = cli(home, url, "list")
        check(r.returncode == 0 and "TinyQ4" in r.stdout and "Q8_0" in r.stdout, "list table", r.stdout)

        # Import a folder of someone else's models, and rm keeps files it did not download.
        other = os.path.join(tmp, "lmstudio", "models", "pub", "X")
        os.makedirs(other)
        make_gguf(os.path.join(other, "X-Q8_0.gguf"), "--name", "Xmodel")
        r = cli(home, url, "list", "--scan", os.path.join(tmp, "lmstudio", "models"), "--json")
        check(r.returncode == 0 and len(json.loads(r.stdout)) == 3, "list --scan imports", r.stderr)
        r = cli(home, url, "rm", "Xmodel")
        check(r.returncode == 0 and "files kept" in r.stdout and os.path.exists(os.path.join(other, "X-Q8_0.gguf")),
              "rm of an imported model keeps its file", r.stdout + r.stderr)
        r = cli(home, url, "rm", "org/Tiny-GGUF:Q4_K_M")
        gone = not os.path.exists(os.path.join(home, "models", "org", "Tiny-GGUF", "Tiny-Q4_K_M-00001-of-00003.gguf"))
        check(r.returncode == 0 and "freed" in r.stdout and gone, "rm of a pulled model deletes it", r.stdout + r.stderr)
        os.remove(os.path.join(home, "models", "org", "Tiny-GGUF", "Tiny-Q8_0.gguf"))
        r = cli(home, url, "list", "--json")
        q8 = [m for m in json.loads(r.stdout) if m["quant"] == "Q8_0"] if r.returncode == 0 else []
        check(len(q8) == 1 and q8[0]["missing_files"], "list flags deleted files", r.stdout)
        r = cli(home, url, "rm", "nothing-like-this")
        check(r.returncode == 1 and "no model" in r.stderr, "rm of an unknown model is an error", r.stderr)
        r = cli(home, url, "list", "--json")
        check(r.returncode == 0 and len(json.loads(r.stdout)) == 1, "one model left", r.stdout)
    finally:
        hub.kill()
        hub.wait()
        subprocess.run(["rm", "-rf", tmp])
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
