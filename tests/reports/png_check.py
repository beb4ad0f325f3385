#!/usr/bin/env python3
"""Checks a PNG screenshot of an HTML report: its size, that it is not blank, and that each chart
colour of the report's palette covers enough pixels (the SVG charts drew). Standard library only.
Usage: png_check.py FILE WIDTH MIN_HEIGHT COLOUR:MIN_PIXELS ..."""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError("unsupported PNG: depth %d colour type %d" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main():
    path, width, min_height = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    w, h, bpp, rows = read_png(path)
    if w != width or h < min_height:
        print("FAIL: %s is %dx%d, expected width %d and height >= %d" % (path, w, h, width, min_height))
        return 1
    counts, nonwhite = {}, 0
    for row in rows:
        for x in range(0, len(row), bpp):
            px = row[x:x + 3]
            if px != b"\xff\xff\xff":
                nonwhite += 1
            counts[px] = counts.get(px, 0) + 1
    if nonwhite < 0.02 * w * h:
        print("FAIL: %s is blank (%d non-white pixels)" % (path, nonwhite))
        return 1
    bad = 0
    for spec in sys.argv[4:]:
        colour, need = spec.split(":")
        rgb = bytes.fromhex(colour.lstrip("#"))
        got = counts.get(rgb, 0)
        print("  colour %s: %d pixels (need %s)" % (colour, got, need))
        if got < int(need):
            bad += 1
    if bad:
        print("FAIL: %d chart colours missing: the charts did not draw" % bad)
        return 1
    print("ok: %s %dx%d, %d non-white pixels" % (path, w, h, nonwhite))
    return 0


if __name__ == "__main__":
    sys.exit(main())
