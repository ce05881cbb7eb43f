"""Every file we write is written whole: to a uniquely named temporary file, then renamed into
place, so a process killed at any instant leaves only complete files (and a failed write no
temporary one). Its bytes: a CSV whose text cells a spreadsheet would run as formulas are marked
as text (OWASP, "CSV Injection"), and a lossless PNG made fast for a run's frames. It imports
nothing of ours: every layer writes through it.
"""

from __future__ import annotations

import csv
import io
import math
import os
import secrets
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image


def temporary_name(path: Path) -> Path:
    """A name beside `path` that no other write can be using: two threads, or two processes,
    writing the same file (a thumbnail, a run's record) must never rename each other's
    half-written temporary. Write to it, then `os.replace` it onto `path`."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")


def write_atomic(path: Path, data: bytes) -> None:
    """`data` at `path`, written whole to a temporary file and renamed into place; on failure
    (a full disk) the temporary file is removed and the error raised, `path` untouched."""
    temporary = temporary_name(path)
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def png_bytes(image: Image.Image, *, fast: bool = False) -> bytes:
    """`image` as a lossless PNG. `fast`, for a run's frames and caches: zlib's level 1 with
    run-length matches only (Z_RLE) and, for a plain RGB image, one filter for every row
    (`_rgb_png`): a 2048 x 1280 frame in about 0.1 CPU s instead of 0.5-0.7 at Pillow's
    default level 6, 0-7 % larger on photographs and chain frames; flat synthetic images,
    which level 6 packs into 0.05-0.3 MB, take up to 0.4 MB (bench/default_run.py)."""
    if fast and image.mode == "RGB" and not image.info:
        return _rgb_png(image)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG",
               **({"compress_level": 1, "compress_type": zlib.Z_RLE} if fast else {}))
    return buffer.getvalue()


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_AVERAGE = 3  # the filter type: each byte minus the mean of the bytes left of and above it


def _rgb_png(image: Image.Image) -> bytes:
    """An 8-bit RGB image (no metadata to keep) as a PNG (ISO/IEC 15948: IHDR, one IDAT,
    IEND), every row filtered by Average and deflated at level 1 with Z_RLE. Pillow tries
    all five filters on every row and keeps the best, which costs more than the deflate."""
    rows = np.asarray(image, dtype=np.uint8).reshape(image.height, image.width * 3)
    left, above = np.zeros_like(rows), np.zeros_like(rows)
    left[:, 3:], above[1:] = rows[:, :-3], rows[:-1]
    lines = np.empty((image.height, rows.shape[1] + 1), dtype=np.uint8)
    lines[:, 0] = PNG_AVERAGE
    lines[:, 1:] = rows - ((left.astype(np.uint16) + above) >> 1).astype(np.uint8)  # mod 256
    deflate = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS, 8, zlib.Z_RLE)
    header = struct.pack(">IIBBBBB", image.width, image.height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (PNG_SIGNATURE + _png_chunk(b"IHDR", header)
            + _png_chunk(b"IDAT", deflate.compress(lines) + deflate.flush())
            + _png_chunk(b"IEND", b""))


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


# A spreadsheet runs a cell that begins with one of these as a formula (OWASP, "CSV
# Injection"): a model's answer `=HYPERLINK(…)` would be a link in the visitor's steps.csv.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
TEXT_MARK = "'"  # OWASP's escape: a leading quote makes a spreadsheet show the cell as text


def csv_bytes(header: list[str], rows: list[list[Any]]) -> bytes:
    """A CSV file's bytes: floats written so they read back exactly, NaN and None empty, text
    that a spreadsheet would run as a formula marked as text (`csv_text` reads it back)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return buffer.getvalue().encode()


def _cell(value: Any) -> Any:
    if isinstance(value, float):  # repr round-trips exactly, so a resumed run adds up the same
        return "" if math.isnan(value) else repr(value)
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith((*FORMULA_STARTS, TEXT_MARK)):
        return TEXT_MARK + value  # a text that began with the mark gets one too: exact round trip
    return value


def csv_text(cell: str) -> str:
    """A text cell as it was given to `csv_bytes` (its formula guard taken off)."""
    marked = cell.startswith(TEXT_MARK) and cell[1:].startswith((*FORMULA_STARTS, TEXT_MARK))
    return cell[1:] if marked else cell
