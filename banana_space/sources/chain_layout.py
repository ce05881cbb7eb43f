"""A dataset's chains read defensively: step numbers from file names, starts found by name.

Banana100 (arXiv 2604.03400) published its chains on the hub, but their layout has never been
seen from here, so nothing is assumed of it. A chain's step numbers are read from its file
names (the last run of digits in each name), and they must be a contiguous run of integers:
- numbered from 0, the chain holds its input at step 0;
- numbered from 1, it holds copies only: copy k is step k, and its input is the start the
  dataset keeps for it, found by name (a file named like the chain's folder, among the
  starts: `starts/0007.png` for `chains/0007/`); where there is none, the chain has no step 0.
A folder whose files are named after other chains is those chains' starts, never a chain
(`starts_folders`); and a folder whose neighbouring frames are not copies of each other
(`not_copies`) is not a chain either. What made a chain (its model, its prompt) is read from
the dataset's own metadata where it has some (`described`), never assumed. `real_chains.py`
applies these rules and logs each folder it passes over, with why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
from PIL import Image

from .listing import ChainRef

__all__ = ["COPY_PSNR_DB", "METADATA_NAMES", "Numbered", "chain_folder", "described", "find_start",
           "not_copies", "numbered", "starts_folders"]

# Two neighbouring frames of a replication chain are one edit apart: a copy of a copy, however
# damaged, stays close to it (the bundled simulations: 30-45 dB between neighbours). Unrelated
# pictures (a folder of starts) score 8-14 dB against each other. Below this, neighbours are
# not copies of each other.
COPY_PSNR_DB = 18.0
_DIGITS = re.compile(r"(\d+)(?!.*\d)")  # the last run of digits in a name


@dataclass(frozen=True)
class Numbered:
    """A chain's files by step: `files[i]` is step `steps[i]`, a contiguous run."""

    steps: tuple[int, ...]
    files: tuple[str, ...]

    @property
    def has_input(self) -> bool:
        """Numbered from 0: step 0, the input, is in the chain."""
        return self.steps[0] == 0


def numbered(ref: ChainRef) -> Numbered | str:
    """The chain's files by the step numbers in their names, or why there are none.

    Args:
        ref: a chain of files or rows, with the paths its names are read from.

    Returns:
        `Numbered` (from 0 or 1), or one line saying why the names are not step numbers.
    """
    paths = ref.paths or ref.files
    numbers = [_number(path) for path in paths]
    if None in numbers:
        name = paths[numbers.index(None)]
        return f"{PurePosixPath(name).name!r} has no step number in its name"
    order = sorted(range(len(paths)), key=lambda i: numbers[i])
    steps = tuple(numbers[i] for i in order)
    if steps[0] not in (0, 1) or steps != tuple(range(steps[0], steps[0] + len(steps))):
        return (f"its file names are not one run of step numbers from 0 or 1 "
                f"({steps[0]}…{steps[-1]}, {len(steps)} files)")
    return Numbered(steps, tuple(ref.files[i] for i in order))


def _number(path: str) -> int | None:
    found = _DIGITS.search(PurePosixPath(path).stem)
    return int(found.group(1)) if found else None


def chain_folder(ref: ChainRef) -> str:
    """The folder that holds a chain's frames, as the dataset names it ("chains/0007")."""
    paths = ref.paths or ref.files
    return str(PurePosixPath(paths[0]).parent).strip(".")


def starts_folders(refs: Sequence[ChainRef]) -> set[str]:
    """The names of the refs that are starts, not chains: every file of theirs is named after
    another chain's folder (`starts/0007.png` beside `chains/0007/`)."""
    folders = {PurePosixPath(chain_folder(ref)).name: ref.name for ref in refs}
    return {ref.name for ref in refs
            if all(folders.get(PurePosixPath(p).stem, ref.name) != ref.name
                   for p in ref.paths or ref.files)}


def find_start(ref: ChainRef, refs: Sequence[ChainRef]) -> tuple[ChainRef, str] | None:
    """The start the dataset keeps for `ref`, found by name among the starts folders: (the
    starts' ref, the one file of it), or None."""
    name = PurePosixPath(chain_folder(ref)).name
    starts = starts_folders(refs)
    for other in refs:
        if other.name in starts:
            for path, file in zip(other.paths or other.files, other.files, strict=True):
                if PurePosixPath(path).stem == name:
                    return other, file
    return None


# The hub's imagefolder convention: a metadata.jsonl or metadata.csv beside the images, one
# row per image (`file_name`, relative to the metadata file's folder) with any other columns.
METADATA_NAMES = ("metadata.jsonl", "metadata.csv")
MODEL_KEYS = ("model", "model_name", "editor", "generator")
PROMPT_KEYS = ("prompt", "instruction", "edit_prompt")


def described(ref: ChainRef, rows: Sequence[dict[str, str]]) -> tuple[str, str]:
    """The model and the prompt the dataset's own metadata gives for every file of a chain
    that it lists, where they agree; "" for what it does not say (or says two ways).

    Args:
        ref: the chain.
        rows: metadata rows, each with `file_name` as a path in the dataset.

    Returns:
        (model, prompt).
    """
    mine = set(ref.paths or ref.files)
    listed = [row for row in rows if row.get("file_name") in mine]
    return _agreed(listed, MODEL_KEYS), _agreed(listed, PROMPT_KEYS)


def _agreed(rows: Sequence[dict[str, str]], keys: Sequence[str]) -> str:
    values = {str(row[key]).strip() for row in rows for key in keys if row.get(key)}
    return values.pop() if len(values) == 1 else ""


def not_copies(frames: Sequence[tuple[int, Image.Image]]) -> str:
    """Why neighbouring frames (steps k and k + 1) are not copies of each other ("" where they
    are, or where no two fetched steps are neighbours).

    Args:
        frames: (step, frame), in step order.

    Returns:
        e.g. "steps 1 and 2 are 9.8 dB apart; copies are more than 18 dB".
    """
    for (step, image), (after, other) in zip(frames, frames[1:], strict=False):
        if after == step + 1:
            psnr = _psnr(image, other)
            if psnr < COPY_PSNR_DB:
                return (f"steps {step} and {after} are {psnr:.1f} dB apart; neighbouring "
                        f"copies are more than {COPY_PSNR_DB:.0f} dB")
    return ""


def _psnr(image: Image.Image, other: Image.Image) -> float:
    """PSNR (dB, 8-bit) of two frames, the second resized to the first where they differ."""
    if other.size != image.size:
        other = other.resize(image.size, Image.Resampling.BICUBIC)
    a = np.asarray(image.convert("RGB"), dtype=np.float64)
    b = np.asarray(other.convert("RGB"), dtype=np.float64)
    mse = float(np.mean((a - b) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)
