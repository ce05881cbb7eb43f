"""The votes' arithmetic, pure: who preferred which step of a pair, with a 95 % Wilson
interval, and the people row of the verdict by the paper's test.

A vote is a two-alternative forced choice between two frames of one chain, as the BAPPS set
collects human judgements (Zhang et al., "The Unreasonable Effectiveness of Deep Features as a
Perceptual Metric", CVPR 2018). Each voter counts once per pair: a later vote replaces an
earlier one. The share of voters who preferred the earlier step `a` of pair (a, b) is reported
with the Wilson score interval (Wilson, JASA 22:209, 1927), which stays inside [0, 1] and is
not degenerate at 0 or n, unlike the normal approximation, for the small n of a class.

The people row reads the paper's test off the pairs (1, k) at its checkpoints: its Δ at k is the
share who preferred step k minus the share who preferred step 1, the first copy (in [-1, 1],
negative = worse, the orientation of every other Δ); it "detects" where most preferred step 1
at each checkpoint, and is "beyond floor" where the interval's lower bound for step 1 lies above
one half at each. Below `MIN_VOTES` at a checkpoint the row is undecided and says how many
votes each checkpoint has.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..verdict.analysis import (
    CHECKPOINTS,
    FIRST_COPY,
    checkpoints,
    detects_degradation,
    wilson_interval,
)
from ..verdict.history import VerdictRow

PEOPLE = "people"  # the people row's name and role in the verdict
# At 10 votes a 95 % Wilson interval around one half is still ±0.27 wide: fewer say nothing.
MIN_VOTES = 10
Choice = Literal["earlier", "later"]
CHOICES: tuple[Choice, ...] = ("earlier", "later")


@dataclass(frozen=True)
class Vote:
    """One voter's choice between two steps of a chain (`earlier` < `later`)."""

    voter: str  # a keyed hash (the page's), never a credential or an address
    earlier: int
    later: int
    choice: Choice
    at: str = ""  # when, UTC, ISO 8601; filled in by `Ledger.cast` when blank

    def __post_init__(self) -> None:
        if not 0 <= self.earlier < self.later:
            raise ValueError(f"a vote compares an earlier step with a later one, not "
                             f"{self.earlier} and {self.later}")
        if self.choice not in CHOICES:
            raise ValueError(f'a vote\'s choice is "earlier" or "later", not {self.choice!r}')


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson interval of a proportion `successes / n` (`analysis.wilson_interval`);
    (NaN, NaN) for a pair nobody voted on."""
    return wilson_interval(successes, n) if n > 0 else (math.nan, math.nan)


@dataclass(frozen=True)
class PairTally:
    """The votes on one pair of steps a < b: how many voters, how many preferred step a."""

    a: int
    b: int
    n: int
    prefer_a: int

    @property
    def interval(self) -> tuple[float, float]:
        """The 95 % Wilson interval of `prefer_a / n`."""
        return wilson(self.prefer_a, self.n)

    @property
    def share_a(self) -> float:
        return self.prefer_a / self.n if self.n else math.nan

    def as_record(self) -> dict[str, float | int | None]:
        """The pair as `votes --json` and the API answer it (`low`/`high`: the interval)."""
        low, high = self.interval
        return {"a": self.a, "b": self.b, "n": self.n, "prefer_a": self.prefer_a,
                "low": None if math.isnan(low) else round(low, 4),
                "high": None if math.isnan(high) else round(high, 4)}


def tally(votes: Iterable[Vote]) -> list[PairTally]:
    """Each pair's votes, the last of each voter's only (a second vote replaces the first),
    ordered by pair."""
    last: dict[tuple[int, int, str], bool] = {}
    for vote in votes:  # in the order cast
        last[(vote.earlier, vote.later, vote.voter)] = vote.choice == "earlier"
    pairs: dict[tuple[int, int], list[bool]] = {}
    for (a, b, _), prefers_a in last.items():
        pairs.setdefault((a, b), []).append(prefers_a)
    return [PairTally(a, b, len(choices), sum(choices))
            for (a, b), choices in sorted(pairs.items())]


def _delta(pair: PairTally | None) -> float:
    """The people's Δ at a pair (1, k): share for k minus share for step 1; NaN under
    `MIN_VOTES`."""
    if pair is None or pair.n < MIN_VOTES:
        return math.nan
    return (pair.n - 2 * pair.prefer_a) / pair.n


def _above_half(pair: PairTally | None) -> float:
    """-1 where the interval for step 1 lies wholly above one half, else 1 (`detects_degradation`
    with a zero floor reads it); NaN under `MIN_VOTES`."""
    if pair is None or pair.n < MIN_VOTES:
        return math.nan
    return -1.0 if pair.interval[0] > 0.5 else 1.0


def people_row(pairs: Iterable[PairTally], last_step: int) -> VerdictRow | None:
    """The people row of a run of `last_step` steps, by the paper's test at the checkpoints it
    has (`analysis.checkpoints`); None where nobody has voted on a pair (1, k) yet."""
    from_first = {pair.b: pair for pair in pairs if pair.a == FIRST_COPY}
    if not from_first:
        return None
    used = checkpoints(last_step)
    deltas = [math.nan] * (last_step + 1)
    robust = [math.nan] * (last_step + 1)
    for step in used:
        deltas[step] = _delta(from_first.get(step))
        robust[step] = _above_half(from_first.get(step))
    counts = ", ".join(f"{from_first[s].n if s in from_first else 0} at step {s}" for s in used)
    detects = detects_degradation(deltas)
    why = "" if detects is not None else (
        f"not enough votes yet ({counts})" if used else "no step after the first copy yet")
    at = tuple(_delta(from_first.get(s)) if s <= last_step else math.nan for s in CHECKPOINTS)
    return VerdictRow(PEOPLE, PEOPLE, at, detects, math.nan,
                      detects_robust=detects_degradation(robust), undecided_because=why,
                      checkpoints_used=used)
