#!/usr/bin/env python3
"""Counts a PNG's pixels of given colours (within a tolerance per channel), standard library only.

    png_colours.py SHOT.png 1b9e77 e6ab02   ->   {"1b9e77": 51234, "e6ab02": 4021}

For the HTML report's browser test: a screenshot whose charts rendered has many pixels of the
charts' fixed colours. Reads 8-bit RGB or RGBA, non-interlaced PNGs (what Chromium writes).
"""
import json
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise SystemExit(f"{path}: only 8-bit RGB/RGBA, non-interlaced PNGs")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    rows = []
    at = 0
    for _ in range(height):
        kind = raw[at]
        line = bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(line)
        previous = line
    return rows, channels


def main():
    rows, channels = pixels(sys.argv[1])
    wanted = [(c, tuple(int(c[i:i + 2], 16) for i in (0, 2, 4))) for c in sys.argv[2:]]
    counts = {c: 0 for c, _ in wanted}
    for line in rows:
        for i in range(0, len(line), channels):
            r, g, b = line[i], line[i + 1], line[i + 2]
            for name, (wr, wg, wb) in wanted:
                if abs(r - wr) <= 8 and abs(g - wg) <= 8 and abs(b - wb) <= 8:
                    counts[name] += 1
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
