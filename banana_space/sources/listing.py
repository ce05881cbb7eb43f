"""Which files make a chain: the rule, on a plain list of (path, size), and where a chain lies.

A chain is a directory of at least 2 frames, a directory of subfolders named by step that hold
one frame each (`0/frame.png`, `1/frame.png` …, beside any frames of its own: an input, say),
one archive (a zip), a lone animated GIF/WebP in its folder, or one of our run directories (its
`frames/`); which step each frame is, its name says (`chain_layout.py`). Because the rule reads
a listing, not a disk, a local folder, the rows of parquet/arrow shards (each image row is a
file at its `path`, `shards.py`) and a dataset on the hub (listed by the hub's tree call) are
read the same way, and only the files a chain needs are ever fetched. `discover` finds
the chains of a source with it; `sources.open_chain` opens one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath
from typing import NamedTuple

from ..store.run import FRAMES, META_NAME
from .chain_layout import names_a_step
from .frames import ANIMATION_SUFFIXES, ARCHIVE_SUFFIXES, is_image_name, natural_key

Listing = Sequence[tuple[str, int]]  # (path relative to the source's root, size in bytes)


class ChainFormat(StrEnum):
    """What holds a chain's frames; its value is the word `table.found_text` and messages print."""

    FOLDER = "folder"  # image files (a run directory's frames/ too)
    ROWS = "rows"  # rows of parquet/arrow shards (SHARD#ROW)
    ZIP = "zip"  # one archive of frames
    ANIMATION = "animation"  # one animated GIF/WebP


class FoundChain(NamedTuple):
    """One chain in a listing."""

    path: str  # the chain's folder, or its one file, relative to the listing's root
    kind: ChainFormat
    files: tuple[str, ...]  # the frames in order, or the one archive or animation
    size: int  # bytes


@dataclass(frozen=True)
class ChainRef:
    """Where one chain lies; small and picklable, so any worker on any machine can open it."""

    name: str  # unique and readable: the source's name, then the chain's path in it
    root: str  # a local folder, or "hf://datasets/OWNER/NAME"
    kind: ChainFormat
    files: tuple[str, ...]  # relative to root: the frames, the one archive, or rows (SHARD#ROW)
    size: int  # bytes
    # Each file's path in the listing (a row's `path`, a file's own), where its name may say
    # something (a step number, `layout.py`); () where not kept.
    paths: tuple[str, ...] = ()

    @property
    def frames_known(self) -> int | None:
        """How many frames, where the listing says (a folder's); None for an archive."""
        known = self.kind in (ChainFormat.FOLDER, ChainFormat.ROWS)
        return len(self.files) if known else None


def chains_in(listing: Listing) -> list[FoundChain]:
    """Every chain in a listing, in natural order.

    Args:
        listing: (path, size) of every file under one root; hidden paths are passed over.

    Returns:
        One `FoundChain` per chain: a folder of 2+ frames (its numbered one-frame subfolders'
        too), a run directory's frames, a lone animation in its folder, or each zip.
    """
    sizes = {path: size for path, size in listing
             if not any(p.startswith(".") or p == "__MACOSX" for p in path.split("/"))}
    by_dir: dict[str, list[str]] = defaultdict(list)
    for path in sizes:
        posix = PurePosixPath(path)
        by_dir[str(posix.parent).strip(".")].append(path)
    runs = {folder for folder, files in by_dir.items()
            if any(PurePosixPath(f).name == META_NAME for f in files)}
    steps = _step_folders(by_dir)
    taken = {folder for held in steps.values() for folder in held}
    chains = []
    for folder in sorted(by_dir, key=natural_key):
        if any(_inside(folder, run) for run in runs) or folder in taken:
            continue
        images = sorted((f for f in by_dir[folder] if is_image_name(f)), key=natural_key)
        images += [f for held in steps.get(folder, ()) for f in by_dir[held]
                   if is_image_name(f)]
        if folder in runs:
            frames = sorted((f for f in by_dir.get(_join(folder, FRAMES), [])
                             if is_image_name(f)), key=natural_key)
            chains.append(FoundChain(folder, ChainFormat.FOLDER, tuple(frames),
                                     sum(sizes[f] for f in frames)))
            continue
        if len(images) >= 2:
            chains.append(FoundChain(folder, ChainFormat.FOLDER, tuple(images),
                                     sum(sizes[f] for f in images)))
        elif len(images) == 1 and PurePosixPath(images[0]).suffix.lower() in ANIMATION_SUFFIXES:
            chains.append(FoundChain(images[0], ChainFormat.ANIMATION, (images[0],),
                                     sizes[images[0]]))
        chains += [FoundChain(f, ChainFormat.ZIP, (f,), sizes[f])
                   for f in sorted(by_dir[folder], key=natural_key)
                   if PurePosixPath(f).suffix.lower() in ARCHIVE_SUFFIXES]
    return chains


def _step_folders(by_dir: dict[str, list[str]]) -> dict[str, list[str]]:
    """The folders that hold one frame each and are named by step, by the folder above them
    where it holds two or more: folder -> its step folders, in natural order."""
    above: dict[str, list[str]] = defaultdict(list)
    parents = {str(PurePosixPath(f).parent).strip(".") for f in by_dir if f}
    for folder, files in by_dir.items():
        posix = PurePosixPath(folder)
        if (folder and folder not in parents and len(files) == 1 and is_image_name(files[0])
                and names_a_step(posix.name)):
            above[str(posix.parent).strip(".")].append(folder)
    return {parent: sorted(held, key=natural_key) for parent, held in above.items()
            if len(held) >= 2}


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _inside(folder: str, run: str) -> bool:
    return folder != run and (run == "" or folder.startswith(run + "/"))
