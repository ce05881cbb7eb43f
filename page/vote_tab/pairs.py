"""Which two frames a voter sees next, and on which side each: step 1 against each of the
paper's checkpoints the run has (5, 10, 20; a shorter run's last step), then, while the voter
goes on, pairs drawn at random from the frames it has. Left and right are drawn at random for
every pair shown, so a room cannot learn that the first copy sits on one side.

The pair travels with the page as text ("1,5,L": earlier, later, the earlier step's side, and
how many pairs the voter has seen), so no session holds it; a vote names its steps itself, and
`casting` checks them.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from banana_space.verdict.analysis import FIRST_COPY, checkpoints

SHOWN = re.compile(r"(\d{1,3}),(\d{1,3}),([LR]),(\d{1,6})")
_RANDOM = random.SystemRandom()


@dataclass(frozen=True)
class PairOnScreen:
    """A pair on the voter's screen: its steps, where the earlier one is, and how many pairs
    came before it."""

    earlier: int
    later: int
    earlier_left: bool
    index: int

    @property
    def text(self) -> str:
        return f"{self.earlier},{self.later},{'L' if self.earlier_left else 'R'},{self.index}"

    @classmethod
    def read(cls, text: str) -> PairOnScreen | None:
        found = SHOWN.fullmatch(text or "")
        if not found:
            return None
        return cls(int(found[1]), int(found[2]), found[3] == "L", int(found[4]))

    def steps(self) -> tuple[int, int]:
        """(left, right)."""
        return (self.earlier, self.later) if self.earlier_left else (self.later, self.earlier)

    def choice(self, left: bool) -> str:
        """"earlier" or "later": what a press of the left (or right) button chose."""
        return "earlier" if left == self.earlier_left else "later"


def nth_pair(made: list[int], index: int, rng: random.Random = _RANDOM) -> PairOnScreen | None:
    """The `index`-th pair for a voter of a run whose frames are `made` (steps, ascending);
    None where the run has fewer than two frames after the input."""
    last = made[-1] if made else -1
    first = [(FIRST_COPY, k) for k in checkpoints(last) if FIRST_COPY in made and k in made]
    if index < len(first):
        earlier, later = first[index]
    elif len(made) >= 2:
        earlier, later = sorted(rng.sample(made, 2))
    else:
        return None
    return PairOnScreen(earlier, later, rng.random() < 0.5, index)
