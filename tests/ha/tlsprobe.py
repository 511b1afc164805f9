#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Peers of a bridge's --ha-listen that are not peers (tests/ha/tls.sh).

  tlsprobe.py garbage HOST PORT        a console command in clear text
  tlsprobe.py stall HOST PORT          the first bytes of a TLS record, then silence
  tlsprobe.py relay PORT HOST PORT2 FILE
                                       one connection relayed to HOST:PORT2, what the
                                       client sent recorded into FILE (for replay)
  tlsprobe.py replay HOST PORT FILE    a recorded client's bytes played again
  tlsprobe.py flood HOST PORT N        N connections that send nothing, then one more:
                                       that one must be closed at once (busy)

Each waits until the bridge closes the connection (at most 15 s: the bridge's bound
is 2 s) and prints "closed after N bytes" or "still open"; the exit status is 0 when
the bridge closed it.
"""
import socket
import sys
import time


def wait_closed(s, limit=15.0):
    got = 0
    s.settimeout(0.2)
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            b = s.recv(4096)
        except socket.timeout:
            continue
        except ConnectionResetError:
            b = b""
        if not b:
            print(f"closed after {got} bytes")
            return 0
        got += len(b)
    print("still open")
    return 1


def main():
    mode = sys.argv[1]
    if mode == "relay":
        port, host, port2, path = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", port))
        ls.listen(1)
        print("listening", flush=True)
        c, _ = ls.accept()
        u = socket.create_connection((host, port2))
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(c, selectors.EVENT_READ)
        sel.register(u, selectors.EVENT_READ)
        rec = b""
        live = True
        while live:
            for key, _ in sel.select(timeout=20):
                src = key.fileobj
                try:
                    b = src.recv(65536)
                except ConnectionResetError:
                    b = b""
                if not b:
                    live = False
                    break
                if src is c:
                    rec += b
                    u.sendall(b)
                else:
                    c.sendall(b)
        with open(path, "wb") as f:
            f.write(rec)
        print(f"recorded {len(rec)} bytes")
        return 0
    host, port = sys.argv[2], int(sys.argv[3])
    if mode == "flood":
        held = [socket.create_connection((host, port)) for _ in range(int(sys.argv[4]))]
        time.sleep(0.5)  # accepted by the bridge's loop, not only by the kernel
        s = socket.create_connection((host, port))
        rc = wait_closed(s, 1.5)  # before the held ones' 2 s are up
        for h in held:
            h.close()
        return rc
    s = socket.create_connection((host, port))
    if mode == "garbage":
        s.sendall(b"takeover commit default 1.2.3\n")
    elif mode == "stall":
        # A TLS handshake record header announcing 300 bytes, and 10 of them.
        s.sendall(b"\x16\x03\x01\x01\x2c" + b"\x01\x00\x01\x28" + b"\x03\x03" + b"\x00" * 4)
    elif mode == "replay":
        with open(sys.argv[4], "rb") as f:
            data = f.read()
        # The whole recording at once: the client's side of a session, in order.
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
    else:
        print("unknown mode", mode, file=sys.stderr)
        return 2
    return wait_closed(s)


if __name__ == "__main__":
    sys.exit(main())
