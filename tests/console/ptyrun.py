#!/usr/bin/env python3
"""ptyrun.py SCRIPT -- ARGV...: run ARGV on a pseudo-terminal and play SCRIPT against it.

A tool of the console tests (interactive.sh): bcom's interactive mode needs a terminal.
SCRIPT is a file of steps, one a line:
  send TEXT     type TEXT (Python escapes: \\t Tab, \\r Enter, \\x03 ^C, \\x04 ^D,
                \\x1b[D Left, \\x1b[A Up)
  expect REGEX  wait until the output since the last expect matches REGEX (at most 10 s);
                the output is matched without its terminal control sequences (cursor
                moves, colours), so "mult" + move + "icast" reads "multicast"
  exit N        wait for the program to end with status N
Output seen goes to stdout; a step that fails exits 1 naming it.
"""
import os
import pty
import re
import select
import sys
import time

CONTROL = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|[\x07\x08\r]")


def clean(b):
    return CONTROL.sub(b"", b)


def main():
    script = sys.argv[1]
    argv = sys.argv[sys.argv.index("--") + 1:]
    env = dict(os.environ, TERM="xterm", LANG="C.UTF-8", LC_ALL="C.UTF-8")
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    seen = b""
    done = None

    def read_some(limit):
        nonlocal seen
        r, _, _ = select.select([fd], [], [], limit)
        if not r:
            return False
        try:
            data = os.read(fd, 4096)
        except OSError:
            return None
        if not data:
            return None
        sys.stdout.write(data.decode("utf-8", "replace"))
        seen += data
        return True

    for lineno, step in enumerate(open(script, encoding="utf-8"), 1):
        step = step.rstrip("\n")
        if not step or step.startswith("#"):
            continue
        op, _, arg = step.partition(" ")
        if op == "send":
            os.write(fd, arg.encode("utf-8").decode("unicode_escape").encode("latin-1"))
        elif op == "expect":
            rx = re.compile(arg.encode("utf-8"))
            end = time.monotonic() + 10
            while not rx.search(clean(seen)):
                left = end - time.monotonic()
                if left <= 0 or read_some(left) is None and not rx.search(clean(seen)):
                    print(f"\nptyrun: line {lineno}: no /{arg}/ in the output", file=sys.stderr)
                    sys.exit(1)
            seen = clean(seen)[rx.search(clean(seen)).end():]
        elif op == "exit":
            end = time.monotonic() + 10
            while time.monotonic() < end:
                if read_some(0.1) is None:
                    break
            _, st = os.waitpid(pid, 0)
            done = os.waitstatus_to_exitcode(st)
            if done != int(arg):
                print(f"\nptyrun: line {lineno}: exit status {done}, expected {arg}",
                      file=sys.stderr)
                sys.exit(1)
        else:
            print(f"ptyrun: line {lineno}: unknown step '{op}'", file=sys.stderr)
            sys.exit(2)
    if done is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


main()
