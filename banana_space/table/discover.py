"""Finding chains in a source, without assuming a layout.

A chain is a directory of at least 2 frames, one archive (a zip), a lone animated GIF/WebP in
its folder, or one of our run directories (its `frames/`). Sub-folders are searched at any
depth. Parquet/arrow shards (the hub's usual image dataset) count by their rows: each image row
is a file at its `path` (`shards.py`), and a chain of rows is of kind "rows". The rule works
on a plain list of (path, size), so a local folder and a dataset on the hub
(`hf://datasets/OWNER/NAME[/PATH]`, listed by the hub's tree call) are read the same way, and
only the files a chain needs are ever fetched.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..images import BadImage
from ..shards import LocalShards, ShardSource, expand_shards, is_shard_name
from ..sources import ANIMATION_SUFFIXES, ARCHIVE_SUFFIXES, HUB_PREFIX, is_image_name, natural_key

Listing = Sequence[tuple[str, int]]  # (path relative to the source's root, size in bytes)


@dataclass(frozen=True)
class ChainRef:
    """Where one chain lies; small and picklable, so any worker on any machine can open it."""

    name: str  # unique and readable: the source's name, then the chain's path in it
    root: str  # a local folder, or "hf://datasets/OWNER/NAME"
    kind: str  # "folder" (frames, or a run directory's frames) | "rows" | "zip" | "animation"
    files: tuple[str, ...]  # relative to root: the frames, the one archive, or rows (SHARD#ROW)
    size: int  # bytes

    @property
    def frames_known(self) -> int | None:
        """How many frames, where the listing says (a folder's); None for an archive."""
        return len(self.files) if self.kind in ("folder", "rows") else None


def chains_in(listing: Listing) -> list[tuple[str, str, tuple[str, ...], int]]:
    """(chain path, kind, files, bytes) for every chain in a listing, in natural order."""
    sizes = {path: size for path, size in listing
             if not any(p.startswith(".") or p == "__MACOSX" for p in path.split("/"))}
    by_dir: dict[str, list[str]] = defaultdict(list)
    for path in sizes:
        posix = PurePosixPath(path)
        by_dir[str(posix.parent).strip(".")].append(path)
    runs = {folder for folder, files in by_dir.items()
            if any(PurePosixPath(f).name == "run.json" for f in files)}
    chains = []
    for folder in sorted(by_dir, key=natural_key):
        if any(_inside(folder, run) for run in runs):
            continue
        images = sorted((f for f in by_dir[folder] if is_image_name(f)), key=natural_key)
        if folder in runs:
            frames = sorted((f for f in by_dir.get(_join(folder, "frames"), [])
                             if is_image_name(f)), key=natural_key)
            chains.append((folder, "folder", tuple(frames), sum(sizes[f] for f in frames)))
            continue
        if len(images) >= 2:
            chains.append((folder, "folder", tuple(images), sum(sizes[f] for f in images)))
        elif len(images) == 1 and PurePosixPath(images[0]).suffix.lower() in ANIMATION_SUFFIXES:
            chains.append((images[0], "animation", (images[0],), sizes[images[0]]))
        chains += [(f, "zip", (f,), sizes[f]) for f in sorted(by_dir[folder], key=natural_key)
                   if PurePosixPath(f).suffix.lower() in ARCHIVE_SUFFIXES]
    return chains


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _inside(folder: str, run: str) -> bool:
    return folder != run and (run == "" or folder.startswith(run + "/"))


def local_listing(root: Path) -> Listing:
    found = []
    for directory, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not f.startswith(".")]
        for name in files:
            path = Path(directory) / name
            found.append((path.relative_to(root).as_posix(), path.stat().st_size))
    return found


def shards_at(root: str) -> ShardSource:
    """Where the shards of a chain's root are read from: the hub, or a local folder."""
    if root.startswith(HUB_PREFIX):
        from ..hub import HubShards, parse_hub

        return HubShards(parse_hub(root).repo_id)
    return LocalShards(Path(root))


def find_chains(source: str) -> list[ChainRef]:
    """Every chain in one source: a local folder, a single archive or shard, or a hub
    dataset path."""
    if source.startswith(HUB_PREFIX):
        from ..hub import list_files, parse_hub

        hub = parse_hub(source)
        root, label, base = hub.root, hub.repo_id, hub.path
        listing = [(hub.path, 0)] if is_shard_name(hub.path) else list_files(hub)
    else:
        path = Path(source).resolve()
        if not path.exists():
            raise BadImage(f"{source} does not exist")
        if path.is_file():  # one archive or animation: a chain by itself
            root, label, base = str(path.parent), path.parent.name, ""
            listing = [(path.name, path.stat().st_size)]
        else:
            root, label, base = str(path), path.name, ""
            listing = local_listing(path)
    rows: dict[str, str] = {}
    if any(is_shard_name(name) for name, _ in listing):
        listing, rows = expand_shards(listing, shards_at(root))
    refs = []
    for chain, kind, files, size in chains_in(listing):
        relative = chain[len(base):].strip("/") if chain.startswith(base) else chain
        if files[0] in rows:  # a chain of shard rows
            kind, files = "rows", tuple(rows[f] for f in files)
        refs.append(ChainRef(f"{label}/{relative}".rstrip("/") if relative else label,
                             root, kind, files, size))
    return refs


def find_all(sources: Sequence[str]) -> list[ChainRef]:
    """Chains of every source; names made unique where two sources share one."""
    refs, seen = [], set()
    for source in sources:
        for ref in find_chains(source):
            name, count = ref.name, 1
            while name in seen:
                count += 1
                name = f"{ref.name} ({count})"
            seen.add(name)
            refs.append(ChainRef(name, ref.root, ref.kind, ref.files, ref.size))
    return refs


def describe(refs: Sequence[ChainRef]) -> str:
    """What was found, for the first lines of output."""
    kinds: dict[str, int] = defaultdict(int)
    for ref in refs:
        kinds[ref.kind] += 1
    frames = sum(ref.frames_known or 0 for ref in refs)
    archives = sum(ref.frames_known is None for ref in refs)
    size = sum(ref.size for ref in refs) / 2**20
    parts = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    return (f"found {len(refs)} chain(s) ({parts}): {frames} frames in folders"
            + (f" + {archives} archive(s)" if archives else "") + f", {size:,.1f} MB")
