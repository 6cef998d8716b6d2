#!/usr/bin/env python3
"""Every function and variable a project library defines with external
linkage is used by another object file (another file of the library, another
library, the command or a test); one only its own file uses is static, one
nobody uses is gone. Reads the object files of a build with nm(1).

    python3 tests/integration/test_symbols.py BUILD_DIR
"""
import collections
import glob
import os
import subprocess
import sys

LIBS = ("ddpsim_core", "ddpsim_sim", "ddpsim_import", "ddpsim_validate", "ddpsim_calibrate", "ddpsim_runtime")
# The project's own names; the rest is generated code (protobuf-c), C++
# runtime data of the Gloo shim and sanitizer bookkeeping.
OURS = ("core_", "sim_", "rt_", "cal_", "cli_")


def objects(build):
    out = {}
    for d in glob.glob(os.path.join(build, "**", "CMakeFiles", "*.dir"), recursive=True):
        target = os.path.basename(d)[:-4]
        for o in glob.glob(os.path.join(d, "**", "*.o"), recursive=True):
            out[o] = target
    return out


def main():
    build = sys.argv[1]
    objs = objects(build)
    defined, used = {}, collections.defaultdict(set)
    for o in objs:
        nm = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in nm.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBRV":
                defined[f[2]] = o
            elif len(f) == 2 and f[0] == "U":
                used[f[1]].add(o)
    bad = []
    for sym, o in sorted(defined.items()):
        if objs[o] not in LIBS or not sym.startswith(OURS):
            continue
        if not (used[sym] - {o}):
            src = os.path.basename(o)[:-2]
            bad.append(f"{src}: {sym} is used by no other file: make it static (or remove it)")
    for b in bad:
        print("FAIL:", b)
    print(f"test_symbols: {len(bad)} symbols exported for nobody")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
