"""Sources of frames: whatever holds a recorded chain, turned into one ordered list of frames.

The one dispatcher that replay, `score`, `table`, the page's upload and the leaderboard read
through. A source is a folder of frames, a zip, an animated GIF/WebP, one of our run directories
(`frames.py`), the rows of parquet/arrow shards (`shards.py`), or a chain on the Hugging Face hub,
`hf://datasets/OWNER/NAME[/PATH]` (`hub.py`); a chain the table found is a `ChainRef`
(`listing.py`). Every reader applies the same checks (zip bombs, declared sizes, the pixel
limit; see `frames.py`) and the same layout (`chain_layout.py`): steps from names, the input by
name, gaps kept, neighbours that are copies; an animation and a run keep their own order. The
readers never import this module, so nothing here is a circle:
frames <- chain_layout <- listing <- shards <- hub <- dispatch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..store.run import Run
from .chain_layout import as_chain
from .frames import (
    HUB_PREFIX,
    SHARD_SUFFIXES,
    Frames,
    frames_from_files,
    frames_in_animation,
    frames_in_file,
    frames_in_run,
    frames_in_zip,
    hidden_path,
    is_image_name,
)
from .images import BadImage, BadSource
from .listing import ChainFormat, ChainRef

if TYPE_CHECKING:
    from .shards import ShardSource

__all__ = ["HUB_PREFIX", "Frames", "chain_files", "open_chain", "open_frames", "open_local",
           "shards_at"]


def open_frames(source: str | Path) -> Frames:
    """The frames of one chain named by a path or a hub address (replay, `score`).

    Args:
        source: a local folder, zip, animation, run directory or shard(s), or
            `hf://datasets/OWNER/NAME[/PATH]`.

    Returns:
        Its frames, in order, at least 2.

    Raises:
        BadImage: the source cannot be used; the message says why.
    """
    if str(source).startswith(HUB_PREFIX):
        from .hub import open_hub_frames  # the hub client is imported only for hub sources

        frames = open_hub_frames(str(source))
    else:
        frames = open_local(Path(source))
    if len(frames) < 2:
        raise BadImage(f"a chain needs at least 2 frames; {frames.label} has {len(frames)}")
    return frames


def open_chain(ref: ChainRef) -> Frames:
    """The frames of a chain the table found (`sources.discover`), read as a chain
    (`chain_layout.as_chain`).

    Args:
        ref: where the chain lies and what holds it.

    Returns:
        Its frames, in step order, with their steps (the caller decides what too few means).

    Raises:
        BadImage: it cannot be read, or is not a chain; one line.
    """
    return as_chain(chain_files(ref))


def chain_files(ref: ChainRef) -> Frames:
    """A listed chain's frames as the reader finds them (no layout read, no frame decoded;
    a dataset's sampled chains read them so, `real_chains.py`): a hub chain's files are fetched
    first (cached by huggingface_hub); a chain of shard rows reads only the row groups that
    hold its frames, each named by its path where the ref keeps them."""
    if ref.kind == ChainFormat.ROWS:
        from .shards import frames_in_rows  # pyarrow only for shards

        return frames_in_rows(ref.files, shards_at(ref.root), ref.name, ref.paths)
    if ref.root.startswith(HUB_PREFIX):
        from .hub_client import fetch, parse_hub

        root = fetch(parse_hub(ref.root).repo_id, ref.files)
    else:
        root = Path(ref.root)
    if ref.kind == ChainFormat.ZIP:
        return frames_in_zip(root / ref.files[0])
    if ref.kind == ChainFormat.ANIMATION:
        return frames_in_animation(root / ref.files[0])
    return frames_from_files(root, list(ref.files), ref.name)


def shards_at(root: str) -> ShardSource:
    """Where the shards of a chain's root are read from.

    Args:
        root: a `ChainRef.root`: a local folder, or "hf://datasets/OWNER/NAME".

    Returns:
        The hub's shards (read by range) or the local folder's.
    """
    if root.startswith(HUB_PREFIX):
        from .hub import HubShards
        from .hub_client import parse_hub

        return HubShards(parse_hub(root).repo_id)
    from .shards import LocalShards

    return LocalShards(Path(root))


def open_local(path: Path) -> Frames:
    """The frames of one local chain.

    Args:
        path: shard(s) or a chain in their rows (`DATASET/chain_07`), a run directory, a
            folder of frames, a zip or an animation; the first that fits is read.

    Returns:
        Its frames, in step order, with their steps (`open_frames` checks there are at least
        2); the input is step 0.

    Raises:
        BadImage: nothing there can be read as a chain; one line saying why.
    """
    shards = path if path.exists() else _dataset_above(path)
    if shards and _holds_shards(shards):  # a shard, a folder of them, or a chain in their rows
        from .shards import frames_in_local_shards  # pyarrow only for shards

        chain = path.relative_to(shards).as_posix().strip(".")
        return as_chain(frames_in_local_shards(shards, chain))
    if path.is_dir() and Run(path).exists():
        return as_chain(frames_in_run(path))
    if path.is_dir():
        files = [p for p in path.rglob("*")
                 if p.is_file() and not hidden_path(p.relative_to(path))]
        return as_chain(frames_from_files(path, [str(p.relative_to(path)) for p in files],
                                          path.name))
    if path.is_file():
        return as_chain(frames_in_file(path))
    raise BadSource(f"{path.name} is not a folder, zip or animated image")


def _dataset_above(path: Path) -> Path | None:
    """For a path that does not exist (a chain named by its rows' folder, `DATASET/chain_07`):
    the nearest folder above it with shards at its top or one level down, else None."""
    folder = next((p for p in path.parents if p.exists()), None)
    near = [p for suffix in SHARD_SUFFIXES for p in (*folder.glob(f"*{suffix}"),
                                                   *folder.glob(f"*/*{suffix}"))] if folder else []
    return folder if near else None


def _holds_shards(path: Path) -> bool:
    """A parquet/arrow shard, or a folder of shards with no loose images (`shards.py`)."""
    if path.is_file():
        return path.suffix.lower() in SHARD_SUFFIXES
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []
    return (any(p.suffix.lower() in SHARD_SUFFIXES for p in files)
            and not any(is_image_name(p.name) for p in files))
