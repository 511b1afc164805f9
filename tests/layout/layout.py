#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""
The layout's arrows (docs/architecture.md, "Layout"): a file may include headers of its
own folder and of the folders below it, never of one above:

    app -> ops -> control -> host -> lib -> engine, pool, pgm, capture

so that no include circle can form between app/, ops/, control/, host/ and lib/. Every
#include "x.h" of a .c or .h file in those folders is resolved to the folder holding
x.h (its own folder first); an include of a folder above is reported as
"FILE: includes DIR/x.h (upward: A -> B)". Headers that include each other in a circle
are reported too. Exit status 1 on any finding.

--self-test first plants an upward include (control/ctl.c including ops/show.h) and a
circle of two headers in a copy of the tree's file list, and fails unless both are
caught: the check would catch today's kinds of mistakes.

Usage: layout.py SRCDIR [--self-test]
"""
import os
import re
import sys

RANK = {"app": 5, "ops": 4, "control": 3, "host": 2, "lib": 1,
        "engine": 0, "pool": 0, "pgm": 0, "capture": 0}
CHECKED = ("app", "ops", "control", "host", "lib")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def load(src):
    """{relative path: text} of the .c and .h files of the ranked folders."""
    files = {}
    for d in RANK:
        top = os.path.join(src, d)
        if not os.path.isdir(top):
            continue
        for name in sorted(os.listdir(top)):
            if name.endswith((".c", ".h")):
                with open(os.path.join(top, name), encoding="utf-8") as f:
                    files[f"{d}/{name}"] = f.read()
    return files


def check(files):
    where = {}  # header name -> the folders that hold it
    for path in files:
        d, name = path.split("/", 1)
        if name.endswith(".h"):
            where.setdefault(name, []).append(d)
    bad, edges = [], {}
    for path, text in sorted(files.items()):
        d, _ = path.split("/", 1)
        for inc in INCLUDE.findall(text):
            name = os.path.basename(inc)
            dirs = where.get(name)
            if not dirs:
                continue  # generated (version.h) or not ours
            t = d if d in dirs else dirs[0]
            target = f"{t}/{name}"
            if path.endswith(".h"):
                edges.setdefault(path, set()).add(target)
            if d in CHECKED and RANK[t] > RANK[d]:
                bad.append(f"{path}: includes {target} (upward: {d} -> {t})")
    # Headers in a circle: a depth-first search over header -> header edges.
    state = {}

    def visit(h, stack):
        state[h] = 1
        stack.append(h)
        for n in sorted(edges.get(h, ())):
            if state.get(n) == 1:
                bad.append("include circle: " + " -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n, stack)
        stack.pop()
        state[h] = 2

    for h in sorted(edges):
        if h not in state:
            visit(h, [])
    return bad


def self_test(files):
    planted = dict(files)
    planted["control/ctl.c"] = '#include "show.h"\n' + planted["control/ctl.c"]
    planted["host/zz_a.h"] = '#include "zz_b.h"\n'
    planted["host/zz_b.h"] = '#include "zz_a.h"\n'
    found = check(planted)
    ok = any("control/ctl.c: includes ops/show.h (upward" in b for b in found) and any(
        b.startswith("include circle: host/zz_a.h") for b in found)
    print(f"self-test: {'caught' if ok else 'MISSED'} the planted upward include and circle")
    return ok


def main():
    src = sys.argv[1]
    files = load(src)
    if "--self-test" in sys.argv[2:] and not self_test(files):
        return 1
    bad = check(files)
    for b in bad:
        print(b)
    n = sum(1 for p in files if p.split("/", 1)[0] in CHECKED)
    print(f"layout: {n} files in {', '.join(CHECKED)}: {len(bad)} finding(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
