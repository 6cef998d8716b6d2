#!/usr/bin/env python3
"""The include graph keeps the layering the architecture promises
(docs/architecture.md): cli -> calibrate -> runtime -> core, cli -> sim ->
core, calibrate -> sim for validation only; sim and runtime never include each
other; core includes nothing of the project. CUDA, NCCL and Gloo headers only
in runtime/; C++ only in runtime's Gloo shim; the NCCL backend meets its peers
through the store (runtime/store.h), never the Gloo shim. Prints every violation with its
file:line; exit 1 if any.

    python3 tests/integration/test_layering.py SOURCE_DIR
"""
import os
import re
import sys

ALLOWED = {
    "core": {"core"},
    "sim": {"sim", "core"},
    "runtime": {"runtime", "core"},
    "calibrate": {"calibrate", "runtime", "core"},
    "cli": {"cli", "calibrate", "runtime", "sim", "core"},
}
# The Gloo shim: the only C++ of the project.
SHIM = {"runtime/gloo_shim.cc", "runtime/gloo_store.cc", "runtime/gloo_shim_int.hpp"}
# calibrate -> sim: validation runs predictions.
EXCEPTIONS = {("calibrate/validate.h", "sim"), ("calibrate/validate.c", "sim")}
VENDOR = re.compile(r'#\s*include\s*[<"](cuda|cublas|nccl|gloo/)')
# Files that must not include a given project header.
FORBIDDEN = {"runtime/gloo_shim.h": ("runtime/nccl", "runtime/pg.h")}
PROJECT = re.compile(r'#\s*include\s*"([a-z_]+)/[^"]+"')


def check(src):
    bad = []
    for mod, allowed in ALLOWED.items():
        d = os.path.join(src, mod)
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            rel = mod + "/" + name
            if name.endswith((".cc", ".cpp", ".cxx", ".hpp")) and rel not in SHIM:
                bad.append(f"{rel}: C++ outside runtime's Gloo shim")
            if not name.endswith((".c", ".h", ".cc", ".hpp")):
                continue
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    m = PROJECT.match(line.strip())
                    if m and m.group(1) in ALLOWED and m.group(1) not in allowed \
                            and (rel, m.group(1)) not in EXCEPTIONS:
                        bad.append(f"{rel}:{n}: {mod} includes {m.group(1)}: {line.strip()}")
                    for hdr, who in FORBIDDEN.items():
                        if rel.startswith(who) and re.match(r'#\s*include\s*"' + re.escape(hdr), line.strip()):
                            bad.append(f"{rel}:{n}: includes {hdr}; use runtime/store.h")
                    if VENDOR.match(line.strip()) and mod != "runtime":
                        bad.append(f"{rel}:{n}: CUDA, NCCL or Gloo header outside runtime/: {line.strip()}")
    return bad


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    bad = check(src)
    for b in bad:
        print("FAIL:", b)
    print(f"test_layering: {len(bad)} violations")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
