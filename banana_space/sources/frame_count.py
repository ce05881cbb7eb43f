"""How many pages (TIFF) or frames (GIF) an image file holds, counted from its structure with a
cap, before Pillow walks them.

Pillow counts a TIFF's pages by reading every page's directory, each read going back over the
ones before it: a 64 x 64 TIFF of 32,000 pages (3.6 MB) cost 10 CPU s to count and one of
64,000 pages 23.6 s, and a 100 MB upload holds ~850,000 (bench/page_counting.py). A GIF's frames are
counted by walking them all, ~3 µs each: a 100 MB GIF holds ~4 million tiny frames. Here each
format's chain of pages is followed directly (a TIFF's directories point to the next; a GIF's blocks
follow one another), stopping past `MAX_FRAMES`, so a file is refused after reading that many
headers whatever it declares. A loop in a TIFF's directory chain reads as too many pages.
WebP and APNG declare their frame count in their header, so Pillow's count is already cheap.

References: TIFF 6.0 (Adobe, 1992) sec. 2 "Image File Directory"; BigTIFF (Aware Systems);
GIF89a (CompuServe, 1990) sec. 17-24.
"""

from __future__ import annotations

import struct
from typing import IO

# A chain has at most 101 frames (spec.MAX_STEPS + 1); a replay reads its first frames only, and
# an upload uses frame 0. Ten times that leaves room for any real animation.
MAX_FRAMES = 1000


def count_frames(fp: IO[bytes], image_format: str | None) -> int | None:
    """The pages of a TIFF or the frames of a GIF in the open file `fp`, counted from its
    structure, or `MAX_FRAMES + 1` once past the cap; None for other formats (their header
    says). `fp`'s position is kept."""
    counter = {"TIFF": _tiff_pages, "GIF": _gif_frames}.get(image_format or "")
    if counter is None:
        return None
    where = fp.tell()
    try:
        fp.seek(0)
        return counter(fp)
    finally:
        fp.seek(where)


def _tiff_pages(fp: IO[bytes]) -> int:
    header = fp.read(16)
    order = "<" if header[:2] == b"II" else ">"
    big = struct.unpack(order + "H", header[2:4])[0] == 43  # BigTIFF: 8-byte offsets
    count_format, entry_size, offset_format = ("Q", 20, "Q") if big else ("H", 12, "I")
    count_size, offset_size = struct.calcsize(count_format), struct.calcsize(offset_format)
    offset = struct.unpack(order + offset_format, header[8:16] if big else header[4:8])[0]
    pages, seen = 0, set()
    while offset and pages <= MAX_FRAMES:
        if offset in seen:  # a directory that points back: Pillow would go round for ever
            return MAX_FRAMES + 1
        seen.add(offset)
        fp.seek(offset)
        raw = fp.read(count_size)
        if len(raw) < count_size:
            break  # a truncated file: Pillow says so when it reads it
        entries = struct.unpack(order + count_format, raw)[0]
        fp.seek(offset + count_size + entries * entry_size)
        raw = fp.read(offset_size)
        pages += 1
        offset = struct.unpack(order + offset_format, raw)[0] if len(raw) == offset_size else 0
    return pages


def _gif_frames(fp: IO[bytes]) -> int:
    header = fp.read(13)
    if len(header) < 13:
        return 0
    if header[10] & 0x80:  # a global colour table follows the screen descriptor
        fp.seek(3 << ((header[10] & 7) + 1), 1)
    frames = 0
    while frames <= MAX_FRAMES:
        introducer = fp.read(1)
        if introducer == b"\x21":  # an extension: its label, then its data blocks
            fp.seek(1, 1)
        elif introducer == b"\x2c":  # an image: its descriptor, colour table, LZW data
            descriptor = fp.read(9)
            if len(descriptor) < 9:
                break
            if descriptor[8] & 0x80:
                fp.seek(3 << ((descriptor[8] & 7) + 1), 1)
            fp.seek(1, 1)  # the LZW minimum code size
            frames += 1
        else:
            break  # the trailer, the end of the file, or junk Pillow refuses itself
        _skip_blocks(fp)
    return frames


def _skip_blocks(fp: IO[bytes]) -> None:
    """Past a GIF's data sub-blocks: each a length byte and that many bytes, until a 0."""
    while (length := fp.read(1)) and length != b"\x00":
        fp.seek(length[0], 1)
