#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Stand-ins for an HA peer's console socket (tests/ha/hang.sh, stale.sh).

fakepeer.py backlog PATH   listens with a backlog of 0 and fills it itself, never
                           accepts: a connect to PATH cannot complete (a peer whose
                           control thread stalls while keepalived's polls keep
                           connecting).
fakepeer.py silent PATH    accepts, reads what comes (prints "got LINE" for each line),
                           never answers.
fakepeer.py flood PATH     accepts, then writes bytes without a terminator as fast as
                           the socket takes them, until the client goes.
fakepeer.py ask PATH ...   a client of a bridge's console speaking the takeover
                           protocol by hand (see ask() below).

The servers print "ready" on stdout once PATH accepts connections (or, for backlog, once
the backlog is full) and run until killed.
"""
import os
import socket
import sys
import threading
import time


def listen(path, backlog):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(backlog)
    return s


def ready():
    print("ready", flush=True)


def serve_backlog(path):
    s = listen(path, 0)
    keep = []
    # Linux refuses a connect once more than `backlog` connections wait: with 0, the
    # first one waits and the next finds the queue full.
    for _ in range(3):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(path)
        except (BlockingIOError, InterruptedError):
            pass
        keep.append(c)
    ready()
    while True:
        time.sleep(3600)


def serve_silent(path):
    s = listen(path, 16)
    ready()
    while True:
        c, _ = s.accept()
        threading.Thread(target=lambda c=c: drain(c), daemon=True).start()


def drain(c):
    """Read what comes; print each line received as "got LINE" (the test waits on it)."""
    buf = b""
    try:
        while True:
            d = c.recv(4096)
            if not d:
                return
            buf += d
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                print("got " + line.decode(errors="replace"), flush=True)
    except OSError:
        pass


def serve_flood(path):
    s = listen(path, 16)
    ready()
    chunk = b"x" * 65536
    while True:
        c, _ = s.accept()
        try:
            while True:
                c.sendall(chunk)
        except OSError:
            c.close()


def reply(c):
    """One console reply: (text, ok)."""
    buf = b""
    while True:
        i = buf.find(b"\0")
        if i >= 0 and len(buf) >= i + 3:
            return buf[:i].decode(), buf[i + 1:i + 2] == b"0"
        d = c.recv(4096)
        if not d:
            raise SystemExit("ask: the bridge closed the connection: %r" % buf)
        buf += d


def ask(path, steps):
    """Steps, in order: 'send:LINE' sends LINE and prints 'ok|fail TEXT' of its reply;
    'sendgone:LINE' sends LINE, then shuts the socket down both ways and closes it at
    once, reading nothing (an asker that gave up); 'sleep:SECONDS'."""
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    for st in steps:
        verb, _, arg = st.partition(":")
        if verb == "send":
            c.sendall(arg.encode() + b"\n")
            text, ok = reply(c)
            print("%s %s" % ("ok" if ok else "fail", " ".join(text.split())), flush=True)
        elif verb == "sendgone":
            c.sendall(arg.encode() + b"\n")
            c.shutdown(socket.SHUT_RDWR)
            c.close()
            return
        elif verb == "sleep":
            time.sleep(float(arg))
        else:
            raise SystemExit("ask: bad step %r" % st)
    c.close()


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "backlog":
        serve_backlog(path)
    elif mode == "silent":
        serve_silent(path)
    elif mode == "flood":
        serve_flood(path)
    elif mode == "ask":
        ask(path, sys.argv[3:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
