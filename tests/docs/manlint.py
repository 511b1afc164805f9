#!/usr/bin/python3
"""The man pages (docs/*.1, *.5, *.7): no prose on an alternating-font macro line.

.BR, .IR, .BI, .RB, .RI and .IB print their arguments one after the other without
spaces, alternating the fonts: a sentence after ".BR mclisten (1))." renders as
"mclisten(1)).Theconsolesocketis0660..." (ib2roce(1), issue 21). Two unquoted words in a row on such a
line are words run together; lists use quoted separators (", ").
Usage: manlint.py DOCDIR. Exit 0 clean, 1 with one line per fault."""
import glob
import os
import re
import sys

MACROS = (".BR", ".IR", ".BI", ".RB", ".RI", ".IB")


def args(line):
    """The arguments of a macro line: (text, quoted)."""
    out, i = [], 0
    while i < len(line):
        if line[i] in " \t":
            i += 1
        elif line[i] == '"':
            j = line.find('"', i + 1)
            j = len(line) if j < 0 else j
            out.append((line[i + 1:j], True))
            i = j + 1
        else:
            j = i
            while j < len(line) and line[j] not in " \t":
                j += 1
            out.append((line[i:j], False))
            i = j
    return out


def main():
    faults = []
    for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.[157]"))):
        for n, line in enumerate(open(f, encoding="utf-8"), 1):
            m = line.split(None, 1)
            if not m or m[0] not in MACROS or len(m) < 2:
                continue
            a = args(m[1].rstrip("\n"))
            # Three unquoted arguments in a row, the last two words: prose (".BI ib k",
            # a name and its italic index, is two).
            for (x, qx), (y, qy), (z, qz) in zip(a, a[1:], a[2:]):
                if not (qx or qy or qz) and re.match(r"[A-Za-z]", y) and re.match(r"[A-Za-z]", z):
                    faults.append("%s:%d: words run together ('%s%s%s'): %s" % (
                        f, n, x, y, z, line.strip()))
                    break
    for x in faults:
        print(x)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
