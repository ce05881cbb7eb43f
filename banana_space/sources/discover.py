"""Finding chains in a source, without assuming a layout.

A source is listed (a local folder walked at any depth, or a dataset on the hub,
`hf://datasets/OWNER/NAME[/PATH]`, by the hub's tree call) and the listing is read by the one
rule of what makes a chain (`listing.chains_in`). Parquet/arrow shards (the hub's usual image
dataset) count by their rows: each image row is a file at its `path` (`shards.py`), and a
chain of rows is of kind `ChainFormat.ROWS`. Each chain found is a `ChainRef`, which
`sources.open_chain` opens.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .dispatch import shards_at
from .frames import HUB_PREFIX
from .images import BadImage
from .listing import ChainFormat, ChainRef, Listing, chains_in
from .shards import expand_shards, is_shard_name

__all__ = ["ChainRef", "found_text", "find_all", "find_chains_in", "local_listing"]

def local_listing(root: Path) -> Listing:
    """Every file under a local folder, for `listing.chains_in`.

    Args:
        root: the folder; dot-folders below it are not walked.

    Returns:
        (path relative to `root`, size in bytes) per file.
    """
    found = []
    for directory, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not f.startswith(".")]
        for name in files:
            path = Path(directory) / name
            found.append((path.relative_to(root).as_posix(), path.stat().st_size))
    return found


def find_chains_in(source: str) -> list[ChainRef]:
    """Every chain in one source.

    Args:
        source: a local folder, a single archive or shard, or a hub dataset path.

    Returns:
        A `ChainRef` per chain, named by the source's name and the chain's path in it.

    Raises:
        BadImage: the source does not exist (or the hub refuses it).
    """
    if source.startswith(HUB_PREFIX):
        from .hub_client import list_files, parse_hub

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
    for chain in chains_in(listing):
        relative = (chain.path[len(base):].strip("/") if chain.path.startswith(base)
                    else chain.path)
        kind, files = chain.kind, chain.files
        if files[0] in rows:  # a chain of shard rows
            kind, files = ChainFormat.ROWS, tuple(rows[f] for f in files)
        refs.append(ChainRef(f"{label}/{relative}".rstrip("/") if relative else label,
                             root, kind, files, chain.size, chain.files))
    return refs


def find_all(sources: Sequence[str]) -> list[ChainRef]:
    """Chains of every source; names made unique where two sources share one."""
    refs, seen = [], set()
    for source in sources:
        for ref in find_chains_in(source):
            name, count = ref.name, 1
            while name in seen:
                count += 1
                name = f"{ref.name} ({count})"
            seen.add(name)
            refs.append(replace(ref, name=name))
    return refs


def found_text(refs: Sequence[ChainRef]) -> str:
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
