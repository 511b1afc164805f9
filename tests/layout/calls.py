#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""
The calls' arrows (docs/architecture.md, "Layout"): files of app/, ops/, control/, host/
and lib/ call each other in layers, never in a circle, inside a folder or across them.
layout.py checks the includes; this checks the calls, as the linker sees them: the
objects of the bridge (BUILDDIR/app/ib2roce.p/*.o, meson names the other folders' ones
".._ops_show.c.o") and of lib/'s libraries (BUILDDIR/lib/*.a.p/*.o). With `nm`, each
global symbol a file defines (T, D, B, R) is its own; a file that uses one defined in
another file has an edge to it. A circle of files (a strongly connected component of
more than one file) is reported with the symbols on each of its edges:

    call circle: ops/health.c, ops/show.c
      ops/health.c -> ops/show.c: show_summary
      ops/show.c -> ops/health.c: health_check, health_print

Exit status 1 on a circle, or when no object is found (the check must not pass for
want of a build). A function handed over as a callback or registered (console_cmd_register,
loop_on_stop, console_on_shutdown, health_on_change, report_on_refused, struct
hanet_ops) is no call: that is how a lower file reaches up.

--self-test first plants an upward call (lib/paths.c using a symbol of app/start.c, whose
file calls paths.c) and fails unless it is caught as a circle.

Usage: calls.py BUILDDIR [--self-test]
"""
import glob
import os
import subprocess
import sys

CHECKED = ("app", "ops", "control", "host", "lib")


def source_of(obj):
    """The source file of an object, relative to the source root: app/ib2roce.p's
    ".._ops_show.c.o" is ops/show.c, its "main.c.o" app/main.c; lib's are lib/x.c."""
    name = os.path.basename(obj)[: -len(".o")]
    if "/app/ib2roce.p/" in obj:
        if name.startswith(".._"):
            d, f = name[3:].split("_", 1)
            return f"{d}/{f}"
        return f"app/{name}"
    return f"lib/{name}"


def objects(build):
    objs = glob.glob(os.path.join(build, "app", "ib2roce.p", "*.o"))
    objs += glob.glob(os.path.join(build, "app", "ib2roce.p", ".*.o"))
    objs += glob.glob(os.path.join(build, "lib", "*.a.p", "*.o"))
    return sorted(set(objs))


def graph(objs):
    """{file: {file it calls: {symbols}}} from nm."""
    defs, uses = {}, {}
    for o in objs:
        f = source_of(o)
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBR":
                defs[p[2]] = f
            elif len(p) == 2 and p[0] == "U":
                uses.setdefault(f, set()).add(p[1])
    edges = {}
    for f, syms in uses.items():
        for s in syms:
            t = defs.get(s)
            if t and t != f:
                edges.setdefault(f, {}).setdefault(t, set()).add(s)
    return edges


def circles(edges):
    """The strongly connected components of more than one checked file (Tarjan)."""
    nodes = sorted(f for f in set(edges) | {t for e in edges.values() for t in e}
                   if f.split("/", 1)[0] in CHECKED)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(out)


def report(edges):
    lines = []
    for comp in circles(edges):
        lines.append("call circle: " + ", ".join(comp))
        for a in comp:
            for b in sorted(edges.get(a, {})):
                if b in comp:
                    lines.append(f"  {a} -> {b}: " + ", ".join(sorted(edges[a][b])))
    return lines


def self_test(edges):
    back = {f: set(s) for f, s in edges.get("app/start.c", {}).items()}
    if "lib/paths.c" not in back:
        return "self-test: app/start.c does not call lib/paths.c any more: pick another pair"
    planted = {f: {t: set(s) for t, s in e.items()} for f, e in edges.items()}
    planted.setdefault("lib/paths.c", {})["app/start.c"] = {"app_control"}
    found = report(planted)
    want = "  lib/paths.c -> app/start.c: app_control"
    if want not in found:
        return "self-test: a call from lib/paths.c up to app/start.c was not caught"
    return None


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    objs = objects(argv[1])
    if not any("/app/ib2roce.p/" in o for o in objs) or not any("/lib/" in o for o in objs):
        print(f"calls: no objects of ib2roce or lib/ under {argv[1]} (build first)")
        return 1
    edges = graph(objs)
    if "--self-test" in argv[2:]:
        err = self_test(edges)
        if err:
            print(err)
            return 1
    bad = report(edges)
    for line in bad:
        print(line)
    if bad:
        return 1
    print(f"calls: {len(objs)} objects, no circle of files in {', '.join(CHECKED)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
