#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub, for the library tests.

Serves real files from --root (laid out as <root>/<owner>/<name>/<path>) through the endpoints
tandem's client uses:
  GET /api/models?search=&filter=gguf&sort=&direction=-1&limit=   (from <root>/_models.json)
  GET /api/models/<owner>/<name>/tree/<rev>?recursive=1            (LFS sha256 by hashlib)
  GET /<owner>/<name>/resolve/<rev>/<path>  -> 302 to /cdn/<owner>/<name>/<path>
  GET /cdn/<owner>/<name>/<path>            (Range, ETag)
Repos with a file named .gated need "Authorization: Bearer <--token>".

Fault injection, per request, set through GET /_control/fault?match=SUBSTR&kind=K&times=N&...:
  kind=cut     after=B     send B bytes of the body, then drop the connection
  kind=status  status=S [retry_after=s]   answer S instead of the file
  kind=stall   after=B seconds=T   send B bytes, then nothing for T seconds, then drop
  kind=corrupt               flip one byte of everything served
  kind=throttle rate=R       send at R bytes/s
times=N: the next N matching CDN requests (-1: all); the downloader's 1-byte probe
(Range: bytes=0-0) is spared unless probe=1. /_control/reset clears faults and counters;
/_control/stats returns bytes served and requests seen. /_control/page_size?n=N pages tree
listings. Prints "PORT <n>" on stdout once listening.
"""
import argparse
import hashlib
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
FAULTS = []
STATS = {"bytes": 0, "requests": [], "auth_seen": []}
SETTINGS = {"page_size": 1000}
SHA_CACHE = {}


def sha256_of(path):
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    with LOCK:
        if key in SHA_CACHE:
            return SHA_CACHE[key]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    with LOCK:
        SHA_CACHE[key] = h.hexdigest()
    return SHA_CACHE[key]


def take_fault(path, is_probe):
    with LOCK:
        for f in FAULTS:
            if is_probe and not f["probe"]:
                continue
            if f["match"] in path and f["times"] != 0:
                if f["times"] > 0:
                    f["times"] -= 1
                return dict(f)
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the tests print what matters
        pass

    def send_json(self, obj, status=200, extra=None):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def send_status(self, status, message="", extra=None):
        body = json.dumps({"error": message or str(status)}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def repo_dir(self, owner, name):
        return os.path.join(self.server.root, owner, name)

    def authorized(self, repo_dir):
        if not os.path.exists(os.path.join(repo_dir, ".gated")):
            return True
        return self.headers.get("Authorization", "") == "Bearer " + self.server.token

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")[1:]]
        with LOCK:
            STATS["requests"].append({"path": url.path, "query": url.query,
                                      "range": self.headers.get("Range", ""),
                                      "auth": self.headers.get("Authorization", "")})
        try:
            if parts[0] == "_control":
                return self.control(parts[1], q)
            if parts[:2] == ["api", "models"] and len(parts) == 2:
                return self.search(q)
            if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] == "tree":
                return self.tree(parts[2], parts[3], url, q)
            if len(parts) >= 5 and parts[2] == "resolve":
                return self.resolve(parts[0], parts[1], "/".join(parts[4:]))
            if parts[0] == "cdn" and len(parts) >= 4:
                return self.cdn(parts[1], parts[2], "/".join(parts[3:]))
            self.send_status(404, "no such endpoint")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def control(self, what, q):
        with LOCK:
            if what == "fault":
                FAULTS.append({"match": q.get("match", ""), "kind": q["kind"],
                               "times": int(q.get("times", "1")), "after": int(q.get("after", "0")),
                               "status": int(q.get("status", "500")),
                               "retry_after": q.get("retry_after"),
                               "seconds": float(q.get("seconds", "5")),
                               "rate": float(q.get("rate", "0")),
                               "probe": q.get("probe", "0") == "1"})
            elif what == "reset":
                FAULTS.clear()
                STATS["bytes"] = 0
                STATS["requests"] = []
            elif what == "page_size":
                SETTINGS["page_size"] = int(q["n"])
            stats = json.loads(json.dumps(STATS))
        self.send_json({"ok": True, "stats": stats})

    def search(self, q):
        path = os.path.join(self.server.root, "_models.json")
        models = json.load(open(path)) if os.path.exists(path) else []
        term = q.get("search", "").lower()
        models = [m for m in models if term in m["id"].lower()]
        if q.get("filter"):
            models = [m for m in models if q["filter"] in m.get("tags", [])]
        key = q.get("sort", "downloads")
        models.sort(key=lambda m: m.get(key, 0), reverse=q.get("direction", "-1") == "-1")
        models = models[: int(q.get("limit", "20"))]
        self.send_json(models)

    def tree(self, owner, name, url, q):
        root = self.repo_dir(owner, name)
        if not os.path.isdir(root):
            return self.send_status(404, "Repository not found")
        if not self.authorized(root):
            return self.send_status(401, "gated")
        entries = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, root)
            for d in dirnames:
                entries.append({"type": "directory", "oid": "0" * 40,
                                "path": os.path.normpath(os.path.join(rel_dir, d))})
            for fn in sorted(filenames):
                if fn.startswith("."):
                    continue
                full = os.path.join(dirpath, fn)
                rel = os.path.normpath(os.path.join(rel_dir, fn))
                size = os.path.getsize(full)
                e = {"type": "file", "oid": "1" * 40, "size": size, "path": rel}
                if size > 1024:
                    e["lfs"] = {"oid": sha256_of(full), "size": size, "pointerSize": 134}
                    e["size"] = size
                entries.append(e)
        cursor = int(q.get("cursor", "0"))
        page = SETTINGS["page_size"]
        extra = {}
        if cursor + page < len(entries):
            nxt = "http://%s:%d%s?recursive=1&cursor=%d" % (
                self.server.server_address[0], self.server.server_address[1], url.path,
                cursor + page)
            extra["Link"] = '<%s>; rel="next"' % nxt
        self.send_json(entries[cursor:cursor + page], extra=extra)

    def resolve(self, owner, name, path):
        root = self.repo_dir(owner, name)
        full = os.path.join(root, path)
        if not os.path.isfile(full):
            return self.send_status(404, "Entry not found")
        if not self.authorized(root):
            return self.send_status(401, "gated")
        self.send_response(302)
        self.send_header("Location", "/cdn/%s/%s/%s" % (owner, name, urllib.parse.quote(path)))
        self.send_header("X-Linked-Etag", '"%s"' % sha256_of(full))
        self.send_header("X-Linked-Size", str(os.path.getsize(full)))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def cdn(self, owner, name, path):
        full = os.path.join(self.repo_dir(owner, name), path)
        if not os.path.isfile(full):
            return self.send_status(404, "Entry not found")
        fault = take_fault(path, self.headers.get("Range") == "bytes=0-0")
        if fault and fault["kind"] == "status":
            extra = {}
            if fault["retry_after"] is not None:
                extra["Retry-After"] = fault["retry_after"]
            return self.send_status(fault["status"], "injected", extra)
        size = os.path.getsize(full)
        start, end = 0, size - 1
        rng = self.headers.get("Range")
        status = 200
        if rng:
            a, _, b = rng.replace("bytes=", "").partition("-")
            start = int(a)
            end = min(int(b), size - 1) if b else size - 1
            if start >= size or start > end:
                return self.send_status(416, "range not satisfiable",
                                        {"Content-Range": "bytes */%d" % size})
            status = 206
        count = end - start + 1
        self.send_response(status)
        self.send_header("Content-Length", str(count))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", '"%s"' % sha256_of(full))
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        self.wfile.flush()
        corrupt = any(f["kind"] == "corrupt" and f["match"] in path and f["times"] != 0
                      for f in FAULTS)
        with open(full, "rb") as f:
            if fault is None and not corrupt:
                sent = self.connection.sendfile(f, start, count)
                with LOCK:
                    STATS["bytes"] += sent
                return
            f.seek(start)
            limit = count
            if fault and fault["kind"] in ("cut", "stall"):
                limit = min(count, fault["after"])
            rate = fault["rate"] if fault and fault["kind"] == "throttle" else 0
            t0 = time.monotonic()
            pos = start
            while limit > 0:
                if rate:  # hold the average at `rate` bytes/s
                    ahead = (pos - start) / rate - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
                chunk = f.read(min(limit, 1 << 14 if rate else 1 << 16))
                if not chunk:
                    break
                if corrupt and pos <= size // 2 < pos + len(chunk):
                    b = bytearray(chunk)
                    b[size // 2 - pos] ^= 0xFF
                    chunk = bytes(b)
                self.wfile.write(chunk)
                pos += len(chunk)
                limit -= len(chunk)
                with LOCK:
                    STATS["bytes"] += len(chunk)
            self.wfile.flush()
        if fault and fault["kind"] == "stall":
            time.sleep(fault["seconds"])
        if fault and fault["kind"] in ("cut", "stall"):
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token", default="secret-token")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve HTTPS")
    args = ap.parse_args()
    srv = Server(("127.0.0.1", args.port), Handler)
    if args.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls[0], args.tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.root = os.path.abspath(args.root)
    srv.token = args.token
    print("PORT %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
