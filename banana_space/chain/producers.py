"""Where a chain's frames come from, for the one loop (`loop.replicate`) that runs every chain.

- `Editing`: an image editor asked for a copy of the frame before, step after step (Banana100,
  arXiv 2604.03400, Sec. 3: each output fed back in). A recording played by the `replay`
  backend is edited this way too, its gaps kept (`recorded`).
- `Existing`: frames that exist already, each at the step its name gives: a dataset's chain
  sampled at some steps (`real_chains`), or a chain the table found in a folder, a zip or on
  the hub (`table.work`). Each frame is decoded when its turn comes, never before.

Both answer the same two questions: which steps come after a given one (`steps_after`) and the
frame of a step (`make`); the loop asks them from its producer thread, so a slow editor or a
slow decode never holds up the scoring of the frame before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from PIL import Image

from ..backends import Backend
from ..prompts import repeats_for
from ..sources.frames import Frames
from ..sources.images import BadImage, load_image


@dataclass(frozen=True)
class Made:
    """A frame as its producer made it, before it is scored."""

    step: int
    image: Image.Image
    text: str = ""  # what the generator said (its text and thought parts), or a decode's notes
    seconds: float = 0.0
    calls: int = 0
    cost_usd: float | None = None


class Producer(Protocol):
    def steps_after(self, step: int, last: int) -> Iterator[int]:
        """The steps it makes after `step`, up to `last`, rising."""

    def make(self, before: Image.Image, step: int,
             report: Callable[[str], object]) -> Made:
        """The frame of `step`; `before` is the frame it made last (the chain's start first)."""


@dataclass(frozen=True)
class Editing:
    """Frames made by an editor (a backend), each a copy of the one before."""

    backend: Backend
    prompt: str
    seed: int
    recorded: frozenset[int] | None = None  # a recording's steps (gaps are not made); None: all

    def steps_after(self, step: int, last: int) -> Iterator[int]:
        return (k for k in range(step + 1, last + 1)
                if self.recorded is None or k in self.recorded)

    def make(self, before: Image.Image, step: int,
             report: Callable[[str], object]) -> Made:
        return make_step(self.backend, before, self.prompt, self.seed, step, report)


@dataclass(frozen=True)
class Existing:
    """Frames that exist already, at the steps their source gives (gaps kept), decoded one at a
    time as they are played. `wanted`: the only steps played besides the first and the last
    (None: every one)."""

    frames: Frames
    wanted: frozenset[int] | None = None

    @property
    def first_step(self) -> int:
        return self.frames.steps[0]

    def first(self) -> Image.Image:
        """The chain's first frame (its input, or its first copy where it has no input)."""
        return self._decoded(0)

    def steps_after(self, step: int, last: int) -> Iterator[int]:
        final = self.frames.steps[-1]
        return (k for k in self.frames.steps
                if step < k <= last and (self.wanted is None or k in self.wanted or k == final))

    def make(self, before: Image.Image, step: int,
             report: Callable[[str], object]) -> Made:
        started = time.perf_counter()
        image = self._decoded(self.frames.steps.index(step))
        return Made(step, image, seconds=time.perf_counter() - started)

    def _decoded(self, index: int) -> Image.Image:
        try:
            return self.frames.frame(index).image
        except BadImage as error:
            raise BadImage(f"step {self.frames.steps[index]} ({self.frames.names[index]}): "
                           f"{error}") from None


def make_step(backend: Backend, image: Image.Image, prompt: str, seed: int, step: int,
              report: Callable[[str], object] = lambda message: None) -> Made:
    """One chain step: `repeats` calls with the prompt (e.g. "mirror it" twice). A recording's
    frames are re-made with it too (remake.py)."""
    started = time.perf_counter()
    texts, calls, cost = [], 0, None
    for _ in range(repeats_for(prompt)):
        edit = backend.edit(image, prompt, seed=seed, step=step, report=report)
        loaded = load_image(edit.image)
        image, calls = loaded.image, calls + edit.calls
        texts += [t for t in (edit.text, *loaded.notes) if t]
        if edit.cost_usd is not None:
            cost = (cost or 0.0) + edit.cost_usd
    return Made(step, image, "\n".join(texts), time.perf_counter() - started, calls, cost)
