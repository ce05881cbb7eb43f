"""A dataset's chains as its listing shows them: steps by `chain_layout.py`'s rules, starts
found by name, and what made a chain read from the dataset's own metadata.

Banana100 (arXiv 2604.03400) published its chains on the hub in a layout never seen from here,
so nothing is assumed of it. A chain numbered from 1 holds copies only; its input is the one it
names (`chain_layout.INPUT_NAMES`), else the start the dataset keeps for it, found by name (a
file named like the chain's folder, among the starts: `starts/0007.png` for `chains/0007/`);
where there is none, the chain has no step 0. A folder whose files are named after other
chains is those chains' starts, never a chain (`starts_folders`). What made a chain (its model,
its prompt) is read from the dataset's own metadata where it has some (`described`), never
assumed. `chain/real_chains.py` applies these rules and logs each folder it passes over, with
why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from .chain_layout import Numbered, numbered_paths
from .listing import ChainRef

__all__ = ["METADATA_NAMES", "chain_folder", "described", "find_start", "numbered",
           "starts_folders"]


def numbered(ref: ChainRef) -> Numbered | str:
    """A listed chain's files (or rows) by the step numbers in their paths
    (`chain_layout.numbered_paths`): from 0, or from 1 with no input of its own."""
    return numbered_paths(ref.paths or ref.files, ref.files)


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
