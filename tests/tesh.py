#!/usr/bin/env python3
"""A small tesh (SimGrid's test shell): a file of commands and the output each must print.

    $ zplan schedule --model tiny ...     a command (`zplan` is the binary under test)
    > expected line                        its standard output, line by line, exactly
    ! expect return 2                      the exit status of the next command (default 0)
    # a comment                            ignored, as are blank lines

Usage: tesh.py ZPLAN FILE.tesh [--write]   (--write rewrites FILE with what the commands print now)
Prints one line per command and exits 1 when any command's output or status differs."""
import shlex
import subprocess
import sys


def parse(path):
    cases, cur, want_rc, notes = [], None, 0, []
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("#"):
            notes.append(line)
        elif line.startswith("$ "):
            cur = {"cmd": line[2:], "out": [], "rc": want_rc, "notes": notes}
            cases.append(cur)
            want_rc, notes = 0, []
        elif line.startswith("> ") or line == ">":
            cur["out"].append(line[2:])
        elif line.startswith("! expect return "):
            want_rc = int(line.split()[-1])
    return cases


def main():
    zplan, path = sys.argv[1], sys.argv[2]
    write = "--write" in sys.argv[3:]
    cases, failed, text = parse(path), 0, []
    for c in cases:
        argv = [zplan if a == "zplan" else a for a in shlex.split(c["cmd"])]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        got = p.stdout.split("\n")
        if got and got[-1] == "":
            got.pop()
        if write:
            text.extend(c["notes"])
            if p.returncode:
                text.append("! expect return %d" % p.returncode)
            text.append("$ " + c["cmd"])
            text.extend(("> " + g) if g else ">" for g in got)
            text.append("")
            continue
        if got == c["out"] and p.returncode == c["rc"]:
            print("ok   %s (%d lines)" % (c["cmd"], len(got)))
            continue
        failed += 1
        print("FAIL %s: exit %d (want %d)" % (c["cmd"], p.returncode, c["rc"]))
        for i, (g, w) in enumerate(zip(got + [None] * len(c["out"]), c["out"] + [None] * len(got))):
            if g != w:
                print("  line %d: got  %r\n          want %r" % (i + 1, g, w))
                break
        if p.stderr:
            print("  stderr: " + p.stderr.strip()[:300])
    if write:
        open(path, "w", encoding="utf-8").write("\n".join(text))
        print("wrote %s: %d commands" % (path, len(cases)))
        return 0
    print("%d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed else 0


sys.exit(main())
