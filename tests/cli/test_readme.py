#!/usr/bin/env python3
"""test_readme.py ZPLAN README — the README's examples cannot drift: every command marked
<!-- example: [exit=N] zplan ARGS... --> is run (zplan is the built binary) and its stdout is compared
with the fenced block that follows the marker, line by line (trailing spaces ignored). A line "..." in
the block skips output lines up to the next line of the block (or to the end, when it is the last).
The exit status must be N (default 0). Commands run in README's folder (its paths are the tree's). Exit 0 when every example matches, 1 otherwise."""
import os
import re
import shlex
import subprocess
import sys

MARK = re.compile(r'^<!-- example: (?:exit=(\d+) )?zplan (.*) -->$')


def examples(text):
    lines = text.split('\n')
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() != '```':
            yield m.group(2), None, None, i + 1
            continue
        j = i + 2
        while j < len(lines) and lines[j].strip() != '```':
            j += 1
        yield m.group(2), int(m.group(1) or 0), lines[i + 2:j], i + 1


def match(expected, got):
    """None when got matches expected (with "..." gaps), else a message."""
    g = 0
    k = 0
    while k < len(expected):
        e = expected[k].rstrip()
        if e == '...':
            if k + 1 == len(expected):
                return None
            nxt = expected[k + 1].rstrip()
            while g < len(got) and got[g].rstrip() != nxt:
                g += 1
            if g == len(got):
                return 'expected line not in the output: %r' % nxt
            k += 1
            continue
        if g >= len(got):
            return 'output ends before expected line %r' % e
        if got[g].rstrip() != e:
            return 'line %d: expected %r, got %r' % (g + 1, e, got[g].rstrip())
        g += 1
        k += 1
    if g != len(got):
        return 'output goes on after the example (%d more lines; end the block with "...")' % (len(got) - g)
    return None


def main():
    zplan, readme = os.path.abspath(sys.argv[1]), sys.argv[2]
    with open(readme, encoding='utf-8') as f:
        text = f.read()
    fail = 0
    n = 0
    for args, want_rc, block, line in examples(text):
        n += 1
        if block is None:
            print('FAIL: README line %d: the example marker is not followed by a ``` block' % line)
            fail += 1
            continue
        p = subprocess.run([zplan] + shlex.split(args), capture_output=True, text=True, timeout=300,
                           cwd=os.path.dirname(os.path.abspath(readme)))  # paths in examples: the source tree's
        got = p.stdout.rstrip('\n').split('\n')
        why = match(block, got)
        if p.returncode != want_rc:
            why = 'exit %d, want %d: %s' % (p.returncode, want_rc, p.stderr.strip()[:300])
        if why:
            print('FAIL: README line %d: zplan %s: %s' % (line, args, why))
            fail += 1
        else:
            print('ok   README line %d: zplan %s' % (line, args))
    if n == 0:
        print('FAIL: no marked examples in %s' % readme)
        fail += 1
    print('readme examples: %d run, %d failed' % (n, fail))
    return 1 if fail else 0


if __name__ == '__main__':
    sys.exit(main())
