"""Renders template cases with Jinja2 configured as transformers' apply_chat_template does.

Usage: jinja_reference.py IN.json OUT.json
IN: [{"template": str, "context": {...}}, ...]
OUT: [{"output": str} | {"error": "ExceptionType: message"}, ...] in the same order.
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers overrides Jinja2's tojson: no HTML escaping, Python json.dumps spacing.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime(2026, 1, 15, 12, 0, 0).strftime(fmt)


def make_env(trim_blocks=True, lstrip_blocks=True):
    env = ImmutableSandboxedEnvironment(trim_blocks=trim_blocks, lstrip_blocks=lstrip_blocks,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    envs = {}
    results = []
    for case in cases:
        key = (case.get("trim_blocks", True), case.get("lstrip_blocks", True))
        env = envs.setdefault(key, make_env(*key))
        try:
            out = env.from_string(case["template"]).render(**case.get("context", {}))
            results.append({"output": out})
        except Exception as e:  # every failure is an expected "must raise"
            results.append({"error": f"{type(e).__name__}: {e}"})
    json.dump(results, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)


if __name__ == "__main__":
    main()
