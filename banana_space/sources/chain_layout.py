"""A chain's layout, read one way from every source: step numbers from names, the input by name,
gaps kept, and neighbours that must be copies of each other.

Every reader hands the names of a chain's frames here (a local folder, a zip, the page's upload,
the rows of parquet/arrow shards, files on the Hugging Face hub: `dispatch.py`, `hub.py`), and
the chain's steps come from those names, never from the order a listing or a sort gives:

- a frame's name is its file's stem, or, where it lies in a subfolder of its own, that
  subfolder's name (`0/frame.png`, `step_01/out.png`: one frame in each); the folder that holds
  them all (a zip's `chain/`) is no part of a name;
- its step is the last run of digits in its name (`step_007` is step 7), at most `MAX_STEP`;
- numbered from 0, the chain holds its input at step 0; numbered from 1, it holds copies (copy k
  is step k) and its input is the frame named input, original, start or source (`INPUT_NAMES`);
  where there is none it has no input: a reader that scores from the input refuses it, and
  only a dataset's sampled chains read it on (`real_chains.py` finds a Banana100 start by name
  elsewhere in the dataset, `find_start`, or scores from step 1);
- the names a file gets when it is saved again under a taken name are read as they say: the
  unmarked original (`frame.png`) is step 0 and its k-th copy is step k (macOS's `frame copy`,
  `frame copy 2` …, Windows' `frame - Copy (2)`, a browser's `frame (2)`). The names say which
  file copies which, not that the first file saved was the input: a folder saved that way from
  copy 1 on cannot be told apart, and is read as named;
- a gap in the numbers is kept: a missing step has no frame and no score, and the verdicts say
  which checkpoints they had (`verdict/analysis.py`);
- anything else is refused in one line saying what was expected: a name with no number that is
  not the input, two inputs or an input beside a step 0, two frames of one step, numbers from 2
  up or past `MAX_STEP`, two frames in one subfolder (a folder of chains), a copy's name among
  numbered frames.

An animation's frames are in the order it plays, and a run directory's are named by step
(`store/run.py`): they keep theirs. From every source, neighbouring frames (steps k and k + 1)
must be copies of each other (`not_copies`): unrelated pictures are not a chain.

A dataset's own conventions (Banana100's starts kept apart from its chains, its metadata) are
read by `dataset_layout.py`, on top of these rules.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

import numpy as np
from PIL import Image

from .frames import Frames
from .images import BadImage, BadSource

__all__ = ["COPY_PSNR_DB", "EXPECTED", "INPUT_NAMES", "MAX_STEP", "Numbered", "as_chain",
           "chain_steps", "copies_only", "gap_note", "names_a_step", "not_copies",
           "numbered_paths"]

INPUT_NAMES = ("input", "original", "start", "source")  # a frame named so is step 0
# The largest step number read: a larger number is a date or a camera's counter, not a step
# (Banana100's chains are 100 steps; 10,000 calls to an editor would take days).
MAX_STEP = 10_000
EXPECTED = ("expected frames numbered from 0 (frame_000.png …, or one frame per numbered "
            "subfolder: 0/frame.png …), or copies numbered from 1 beside an input named "
            f"{', '.join(INPUT_NAMES[:-1])} or {INPUT_NAMES[-1]}")
_DIGITS = re.compile(r"(\d+)(?!.*\d)")  # the last run of digits in a name
# A file saved again under a taken name: "frame copy", "frame copy 2", "frame - Copy (2)",
# "frame (2)". The group `k` is the copy's number ("copy" alone is the first).
_COPY = re.compile(r"(?P<base>.+?)(?:(?: -)? copy(?: \(?(?P<k>\d+)\)?)?| \((?P<n>\d+)\))",
                   re.IGNORECASE)


@dataclass(frozen=True)
class Numbered:
    """A chain's files by step: `files[i]` is step `steps[i]`, steps rising (gaps kept)."""

    steps: tuple[int, ...]
    files: tuple[str, ...]

    @property
    def has_input(self) -> bool:
        """Step 0, the input, is in the chain."""
        return self.steps[0] == 0


def numbered_paths(paths: Sequence[str], files: Sequence[str] = ()) -> Numbered | str:
    """A chain's steps read from its frames' paths, or why they cannot be.

    Args:
        paths: each frame's path (relative to anything: the folder above them all is dropped).
        files: what `Numbered.files` holds for each path (rows, say); default: the paths.

    Returns:
        `Numbered` (from 0, or from 1 with no input), or one line saying what was expected.
    """
    if not paths:
        return f"{EXPECTED}; found no frames"
    named = _names(paths)
    if isinstance(named, str):
        return named
    names, shown = named
    read = _copy_steps if any(_COPY.fullmatch(n) for n in names) else _steps
    steps = read(names, shown)
    if isinstance(steps, str):
        return steps
    if max(steps) > MAX_STEP:
        return f"{EXPECTED}; found step {max(steps)} (steps stop at {MAX_STEP})"
    twice = [step for step, count in Counter(steps).items() if count > 1]
    if twice:
        both = [name for name, s in zip(shown, steps, strict=True) if s == twice[0]]
        return f"{EXPECTED}; found {both[0]} and {both[1]}, both step {twice[0]}"
    order = sorted(range(len(steps)), key=steps.__getitem__)
    files = tuple(files or paths)
    return Numbered(tuple(steps[i] for i in order), tuple(files[i] for i in order))


def _names(paths: Sequence[str]) -> tuple[list[str], list[str]] | str:
    """Each frame's name below the folder that holds them all (a file's stem, or the subfolder
    it lies in, one frame each), and how a message shows it ('0.png', '0/')."""
    parts = [PurePosixPath(p).parts for p in paths]
    depth = 0
    while all(len(p) > depth + 1 and p[depth] == parts[0][depth] for p in parts):
        depth += 1
    names = [PurePosixPath(p[depth]).stem if len(p) == depth + 1 else p[depth] for p in parts]
    shown = [repr(p[depth] if len(p) == depth + 1 else f"{p[depth]}/") for p in parts]
    crowded = Counter(p[depth] for p in parts if len(p) > depth + 1).most_common(1)
    if crowded and crowded[0][1] > 1:
        return (f"{EXPECTED}; found {crowded[0][0]}/ holding {crowded[0][1]} frames (a folder "
                "of several chains is read by `table`)")
    return names, shown


def names_a_step(name: str) -> bool:
    """Whether a subfolder's name can be a step's (digits, or the input's name)."""
    return _is_input(name) or _DIGITS.search(name) is not None


def _is_input(name: str) -> bool:
    return name.lower() in INPUT_NAMES


def _steps(names: Sequence[str], shown: Sequence[str]) -> list[int] | str:
    """Steps from the numbers in names; the input by its name."""
    found = [_DIGITS.search(name) for name in names]
    inputs = [s for name, s in zip(names, shown, strict=True) if _is_input(name)]
    unnamed = [s for name, s, f in zip(names, shown, found, strict=True)
               if not f and not _is_input(name)]
    numbers = [int(f.group(1)) for f in found if f]
    first = min(numbers, default=1)
    if unnamed and len(unnamed) == len(names):
        return (f"{EXPECTED}; found no step number in any name ({', '.join(unnamed[:2])}"
                f"{' …' if len(unnamed) > 2 else ''})")
    if unnamed:
        return f"{EXPECTED}; found {unnamed[0]}, which has no step number"
    if len(inputs) > 1:
        return f"{EXPECTED}; found two inputs, {inputs[0]} and {inputs[1]}"
    if inputs and first == 0:
        return f"{EXPECTED}; found {inputs[0]} and a frame numbered 0"
    if first > 1:
        return f"{EXPECTED}; found frames numbered from {first}"
    return [int(f.group(1)) if f else 0 for f in found]


def _copy_steps(names: Sequence[str], shown: Sequence[str]) -> list[int] | str:
    """Steps from the names of an original and its copies: the original (or the input, by
    name) is step 0, its k-th copy step k."""
    marks = [_COPY.fullmatch(name) for name in names]
    bases = {mark.group("base") for mark in marks if mark}
    strays = [s for name, s, mark in zip(names, shown, marks, strict=True)
              if not mark and name not in bases and not _is_input(name)]
    if len(bases) > 1 or strays:
        copy = next(s for s, mark in zip(shown, marks, strict=True) if mark)
        return (f"expected an original and its copies (frame.png, frame copy.png, frame copy "
                f"2.png … or frame (1).png …), or {EXPECTED.removeprefix('expected ')}; found "
                f"{copy}, a copy's name, beside {(strays or sorted(bases))[0]}")
    return [0 if mark is None else int(mark.group("k") or mark.group("n") or 1)
            for mark in marks]


def chain_steps(paths: Sequence[str], label: str) -> Numbered:
    """A chain's steps for a reader that scores from the input: numbered from 0, or from 1
    beside an input by name (`numbered_paths`).

    Raises:
        BadSource: the names are not a chain's, or it has no input; one line, what was expected.
    """
    numbers = numbered_paths(paths)
    if isinstance(numbers, Numbered) and not numbers.has_input:
        numbers = f"{EXPECTED}; found copies numbered from 1 and no input"
    if isinstance(numbers, str):
        raise BadSource(f"{label}: {numbers}")
    return numbers


def gap_note(steps: Sequence[int]) -> list[str]:
    """A note naming the steps a chain's names skip, if any."""
    missing = sorted(set(range(steps[-1] + 1)) - set(steps)) if steps else []
    if not missing:
        return []
    shown = ", ".join(str(s) for s in missing[:10]) + (" …" if len(missing) > 10 else "")
    return [f"no frame for step{'s' * (len(missing) > 1)} {shown} (the names skip "
            f"{'them' if len(missing) > 1 else 'it'}): no score there"]


def as_chain(frames: Frames) -> Frames:
    """A reader's frames as a chain: in step order by their names (`chain_steps`), or in the
    source's own order (an animation, a run), from the input on, each neighbour a copy of the
    one before (`copies_only`).

    Raises:
        BadImage: not a chain; one line saying what was expected.
    """
    if frames.steps_in_names:
        numbers = chain_steps(frames.names, frames.label)
        frames = replace(frames, names=list(numbers.files), steps=numbers.steps,
                         notes=[*frames.notes, *gap_note(numbers.steps)], steps_in_names=False)
    elif frames.steps and frames.steps[0] != 0:
        raise BadSource(f"{frames.label} has no step 0: it was recorded from step "
                        f"{frames.steps[0]}, and a chain is scored against its input")
    return copies_only(frames)


def copies_only(frames: Frames) -> Frames:
    """The frames, if each is a copy of the step before it (`not_copies`); each frame is decoded
    once here, one at a time. A frame that cannot be decoded is not compared: it is refused
    where it is read for scoring, as always (a replay fails at its step, keeping the frames
    before it; the table reports the chain and skips it).

    Raises:
        BadImage: two neighbours are not copies.
    """
    why = not_copies(_decodable(frames))
    if why:
        raise BadImage(f"{frames.label} is not a chain: {why}")
    return frames


def _decodable(frames: Frames) -> Iterator[tuple[int, Image.Image]]:
    for index, step in enumerate(frames.steps):
        try:
            yield step, frames.frame(index).image
        except BadImage:
            continue


# Two neighbouring frames of a replication chain are one edit apart; unrelated pictures are
# not. They are compared as COPY_SIDE² thumbnails (area averages): a thumbnail keeps what a
# picture shows and averages away what an edit adds (noise, texture, a pixel's shift), so a
# damaged copy stays near its original and an unrelated picture does not. Measured by
# `bench/neighbour_rule.py`: neighbours in the bundled recordings are 34 dB apart or more (the
# moss recording's are 16 dB at full size, which a full-size rule refused), pairs of the bundled
# example pictures 14.5 dB at most, and a picture 26 dB from itself cropped by 1 % a side
# (20 dB at 2 %).
COPY_PSNR_DB = 18.0
COPY_SIDE = 32


def not_copies(frames: Iterable[tuple[int, Image.Image]]) -> str:
    """Why neighbouring frames (steps k and k + 1) are not copies of each other ("" where they
    are, or where no two steps are neighbours).

    Args:
        frames: (step, frame), in step order; read one at a time.

    Returns:
        e.g. "steps 1 and 2 are 9.8 dB apart as 32 px thumbnails; neighbouring copies are
        more than 18 dB".
    """
    before: tuple[int, np.ndarray] | None = None
    for step, image in frames:
        thumb = _thumbnail(image)
        if before is not None and step == before[0] + 1:
            psnr = _psnr(before[1], thumb)
            if psnr < COPY_PSNR_DB:
                return (f"steps {before[0]} and {step} are {psnr:.1f} dB apart as {COPY_SIDE} px "
                        f"thumbnails; neighbouring copies are more than {COPY_PSNR_DB:.0f} dB")
        before = (step, thumb)
    return ""


def _thumbnail(image: Image.Image) -> np.ndarray:
    small = image.convert("RGB").resize((COPY_SIDE, COPY_SIDE), Image.Resampling.BOX)
    return np.asarray(small, dtype=np.float64)


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a - b) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)
