"""Free disk space as a resource a run holds: what a frame needs, checked before a
run starts and before each frame is written.

On a full disk a run once failed with a generic error, left run.json at "running" and a
temporary frame behind, and the next run left a folder with no run.json. Now a run that does
not have room for its next frame ends *failed* with a reason a person can read, keeping every
frame already written and its scores (`runs._recorded`); a write that fails anyway (another
writer took the room meanwhile) ends the run the same way (`is_disk_full`). `FRAME_MARGIN`
keeps room for the run's own record (run.json, the CSVs) after its last frame.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

FRAME_MARGIN = 1_000_000  # run.json and the CSVs rewritten after a frame, and its thumbnail


class DiskFull(ValueError):
    """The disk has no room for what a run would write next; the message says so, for the
    visitor (a kind of ValueError: refused like any other bad request)."""


def free_bytes(path: Path) -> int:
    """Bytes free for us on the file system that holds `path` (or would: a runs folder not
    made yet is made on the file system of its nearest folder that is)."""
    existing = Path(path).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return shutil.disk_usage(existing).free


def frame_bytes(size: tuple[int, int]) -> int:
    """An upper bound of what writing one frame of `size` takes: a PNG of noise is about its
    raw RGB bytes (lossless compression gains nothing on it), plus `FRAME_MARGIN`."""
    width, height = size
    return width * height * 3 + FRAME_MARGIN


def check_room(path: Path, size: tuple[int, int]) -> None:
    """`DiskFull` unless the disk under `path` has room for one more frame of `size`."""
    free, needed = free_bytes(path), frame_bytes(size)
    if free < needed:
        raise DiskFull(f"this server's disk is full ({free / 1e6:.1f} MB free, a "
                       f"{size[0]} x {size[1]} frame needs up to {needed / 1e6:.1f} MB): "
                       "older runs are removed to make room; try again later")


def is_disk_full(error: BaseException) -> bool:
    """Whether a failed write failed for want of space (or of the quota)."""
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)
