"""Files a hostile visitor would send, built byte by byte (Pillow would take minutes to write
them, or refuse to): a TIFF of many pages and a GIF of many frames, each a few bytes a page.
Shared by the tests and `bench/page_counting.py`."""

from __future__ import annotations

import struct

SIDE = 64  # each page is SIDE x SIDE, 8-bit grey, uncompressed, all sharing one strip


def many_page_tiff(pages: int) -> bytes:
    """A little-endian TIFF of `pages` pages, each a directory of 8 entries (106 bytes)
    pointing at one shared strip: 32,000 pages are 3.4 MB."""
    strip_at = 8
    first = strip_at + SIDE * SIDE
    size = 2 + 8 * 12 + 4
    out = bytearray(b"II" + struct.pack("<HI", 42, first) + bytes(SIDE * SIDE))
    for page in range(pages):
        next_at = first + (page + 1) * size if page + 1 < pages else 0
        entries = [(256, 3, 1, SIDE), (257, 3, 1, SIDE), (258, 3, 1, 8), (259, 3, 1, 1),
                   (262, 3, 1, 1), (273, 4, 1, strip_at), (278, 3, 1, SIDE),
                   (279, 4, 1, SIDE * SIDE)]
        out += struct.pack("<H", len(entries))
        for tag, kind, count, value in entries:
            out += struct.pack("<HHII", tag, kind, count, value)
        out += struct.pack("<I", next_at)
    return bytes(out)


def many_frame_gif(frames: int) -> bytes:
    """A SIDE x SIDE GIF of `frames` frames, each a 1 x 1 patch (24 bytes)."""
    screen = b"GIF89a" + struct.pack("<HH", SIDE, SIDE) + bytes([0x80, 0, 0]) + bytes(6)
    frame = (bytes([0x21, 0xF9, 4, 0, 1, 0, 0, 0])  # graphic control: 10 ms
             + b"\x2c" + struct.pack("<HHHH", 0, 0, 1, 1) + b"\x00"  # a 1 x 1 image
             + bytes([2, 2, 0x4C, 0x01, 0]))  # its LZW data
    return screen + frame * frames + b";"
