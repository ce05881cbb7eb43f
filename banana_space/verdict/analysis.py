"""The paper's arithmetic, as pure functions: oriented deltas, normalisation, verdicts.

Banana100 (arXiv 2604.03400): the normalised score difference Δi is the score at step i
minus the score at step 1, the first copy, and a metric *detects* the degradation when Δ5, Δ10
and Δ20 are all negative. (Whether the dataset's own chains keep the input at step 0 is read
from each chain's file names, `real_chains.py`; nothing here assumes either layout.)
Here Δ is oriented so that negative always means worse (the sign flipped for lower-is-better
scores). The reading taken of "normalised": a rescaling of the score by a positive factor, which
leaves every sign, and so every verdict, as it is; the Δ columns stay in the score's own units.
Ours, for runs shorter than the paper's: the checkpoints that exist are used (and the last step
when none of them does, if it comes after step 1), and every verdict says which it used
(`history.VerdictRow.checkpoints_used`, `paper_test`). A missing score (NaN) is missing: it never
counts as a pass, and a chain with no score at step 1 has no verdict (`undecided_because` says so).

Fidelity (PSNR, SSIM) is scored against the input, the right answer of a replication chain;
its Δ is from step 1 like any other score's, so pyiqa's 80 dB cap for "identical" (the input
against itself) never enters a verdict.

Beside the paper's verdict, ours: the same test against a noise floor (`beyond_floor`, with
the floors of `floors.py`; `FLOOR_RULE` words it); the change since the input (`since_input`,
the input's own score as the base) and the same checkpoints read from it
(`worse_than_input`), since a smooth start that one dose of static makes look "natural" can be
worse than step 1 at every checkpoint and still better than the input; and the rank
correlation with fidelity (`spearman`). A run's scores and their verdict rows are
`history.History`'s, which reads them by these functions. The share of a count, with its 95 %
interval (`wilson_interval`), for the leaderboard's rates and the room's votes alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from ..events import ScoreInfo

CHECKPOINTS = (5, 10, 20)
FIRST_COPY = 1  # the base of the paper's Δ: step 1, the first copy
INPUT = 0  # the base of the change since the input (ours), and fidelity's reference
# Each checkpoint's column, generated from the table above: the field name in the CSVs and in
# JSON ("delta_5"), and the header a person reads ("Δ5").
CHECKPOINT_FIELDS = tuple(f"delta_{step}" for step in CHECKPOINTS)
CHECKPOINT_HEADERS = tuple(f"Δ{step}" for step in CHECKPOINTS)
SINCE_INPUT_HEADER = "Δ since input"
REFERENCE_METRIC = "psnr"  # the fidelity line every metric is rank-correlated with
PROVISIONAL = " so far"  # after a verdict word while a checkpoint the run will reach is ahead
Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95 % interval


def steps_text(steps: Sequence[int]) -> str:
    """Step numbers in words: "step 5", "steps 5 and 10", "steps 5, 10 and 20"."""
    named = [str(step) for step in steps]
    if len(named) <= 1:
        return f"step {''.join(named)}"
    return f"steps {', '.join(named[:-1])} and {named[-1]}"


def paper_test(used: Sequence[int] = CHECKPOINTS) -> str:
    """The paper's test in one line, as read at the checkpoints `used` (`checkpoints`): at all
    of the paper's it names them; at fewer it names only those, and says so, so a short run
    never names a checkpoint it does not have.

    Args:
        used: the checkpoints the verdicts were read at (`VerdictRow.checkpoints_used`);
            none: the test as the paper asks it, which cannot be asked yet.

    Returns:
        e.g. "the paper's test (Δ from step 1 < 0 at steps 5, 10 and 20)", or
        "the paper's test at step 5 only (Δ from step 1 < 0 there; …)".
    """
    if not used or tuple(used) == CHECKPOINTS:  # none yet: the test as the paper asks it
        return f"the paper's test (Δ from step 1 < 0 at {steps_text(CHECKPOINTS)})"
    return (f"the paper's test at {steps_text(used)} only (Δ from step 1 < 0 there; the chain "
            "has not reached the paper's later checkpoints)")


def fewer_checkpoints(used: Sequence[int]) -> str:
    """"at step 5 only" where a verdict was read at fewer checkpoints than the paper's; ""
    where it was read at all of them (or at none: it is undecided)."""
    return "" if not used or tuple(used) == CHECKPOINTS else f"at {steps_text(used)} only"


# The paper's test in one line, for every surface that names it (a run's own: `paper_test`).
PAPER_TEST = paper_test()
# Ours, the noise-floor rule (`beyond_floor` decides it) in one line, for every surface that
# states it: the zip's README, the API's answer, the gate's answer, the CLI.
FLOOR_RULE = ("worse by more than its noise floor: the oriented Δ (negative = worse) is below "
              "minus the most the score moved on chains with no damage a person would name (an "
              "identical copy, a half-pixel shift, a lossless re-save, one JPEG pass at quality "
              "95; banana_space/verdict/floors.csv)")
# (detects, worse_than_input) -> what it means where the two disagree: one rule, one text.
INPUT_CONTRASTS = {
    (True, False): "step 1 scored better than the input; from there it falls, but not below "
                   "the input at every checkpoint",
    (False, True): "step 1 scored worse than the input; from there it does not fall at every "
                   "checkpoint"}


@dataclass(frozen=True)
class _Words:
    plain: str  # the files (verdict.csv, verdicts.csv) and the API: "yes"
    terse: str  # the CLI's fixed-width summary: "?" for undecided
    word: str  # a legend or a report: "detects"
    page: str  # the page's verdict column: "✅ detects"
    page_robust: str  # the page's "beyond floor" column: "❌ no"
    code: int  # the heat map's cell: 1 detects, -1 fooled, 0 undecided


class Verdict(Enum):
    """One metric's verdict: the paper's two outcomes (it detects the damage, or it is
    fooled) and ours for a test that cannot be asked yet, with the words every surface writes
    for them; `Verdict(value)` reads the True/False/None that `detects_degradation` gives
    and `VerdictRow.detects`, `.detects_robust` and `.worse_than_input` hold."""

    DETECTS = True
    FOOLED = False
    UNDECIDED = None

    @property
    def words(self) -> _Words:
        return _VERDICT_WORDS[self]

    def on_page(self, provisional: bool = False, robust: bool = False,
                used: Sequence[int] = CHECKPOINTS) -> str:
        """The page's words for this verdict.

        Args:
            provisional: the run goes on towards a checkpoint it has not reached yet
                (`provisional`): a decided verdict says " so far" (an undecided one says
                nothing more).
            robust: the "beyond floor" column's words ("❌ no", "…") instead of the paper's
                ("❌ fooled", "… undecided").
            used: the checkpoints the verdict was read at: a final verdict read at fewer
                than the paper's says which ("✅ detects (at step 5 only)").

        Returns:
            e.g. "✅ detects", "❌ fooled so far", "… undecided", "❌ fooled (at step 5 only)".
        """
        word = self.words.page_robust if robust else self.words.page
        if self is Verdict.UNDECIDED:
            return word
        if provisional:
            return word + PROVISIONAL
        fewer = fewer_checkpoints(used)
        return word + (f" ({fewer})" if fewer else "")


_VERDICT_WORDS = {
    Verdict.DETECTS: _Words("yes", "yes", "detects", "✅ detects", "✅ detects", 1),
    Verdict.FOOLED: _Words("no", "no", "fooled", "❌ fooled", "❌ no", -1),
    Verdict.UNDECIDED: _Words("undecided", "?", "undecided", "… undecided", "…", 0),
}


def oriented_deltas(scores: Sequence[float], lower_better: bool,
                    base: int = FIRST_COPY) -> list[float]:
    """Oriented Δ: delta_i = score_i - score_base, sign flipped for lower-is-better, so that
    negative always means worse. The paper's base is step 1, the first copy (`FIRST_COPY`);
    `INPUT` (step 0) gives the change since the input.

    Args:
        scores: one score per step, step 0 first (NaN where missing).
        lower_better: the metric's orientation (pyiqa's `lower_better`).
        base: the step every Δ is measured from.

    Returns:
        One Δ per step: 0 at the base; NaN before it (not on the paper's chain), where the
        score is missing, and everywhere while the base step has no score.
    """
    if len(scores) <= base:
        return [math.nan] * len(scores)
    sign = -1.0 if lower_better else 1.0
    return [sign * (score - scores[base]) + 0.0 if step >= base else math.nan  # + 0.0: no "-0.0"
            for step, score in enumerate(scores)]


def since_input(scores: Sequence[float], info: ScoreInfo, base: int = INPUT) -> list[float]:
    """The oriented change since the input (ours, beside the paper's Δ from step 1): a fidelity
    series first held inside its range (`anchored`), so its curve is not measured from pyiqa's
    cap for "identical". `base`: another step to measure from (`History.drawn`)."""
    return oriented_deltas(anchored(scores, info), info.lower_better, base=base)


def normalised(deltas: Sequence[float]) -> list[float]:
    """Each curve divided by its largest |delta| so far, so it spans -1..1; 0 stays
    "unchanged" and the sign stays "better/worse". The fallback for a score with no range."""
    finite = [abs(d) for d in deltas if math.isfinite(d)]
    scale = max(finite, default=0.0)
    return [d / scale if scale > 0 and math.isfinite(d) else (0.0 if d == 0 else math.nan)
            for d in deltas]


def range_scaled(change: Sequence[float], info: ScoreInfo) -> list[float] | None:
    """An oriented change (`since_input`, or `History.drawn`) as a share of the score's nominal
    range (pyiqa's `score_range`), so a move within a metric's noise stays small on the shared
    axis and a large move looks large; None when the score has no range (then `normalised` is
    the fallback). A fidelity score's change is measured from inside its range (`anchored`)."""
    if info.score_range is None:
        return None
    low, high = info.score_range
    return [d / (high - low) for d in change]


def anchored(scores: Sequence[float], info: ScoreInfo) -> list[float]:
    """A fidelity series held inside its range, so that its change since the input is measured
    from a sane anchor:
    frame 0 against itself is "identical", which pyiqa writes as a cap far above the range
    (PSNR 80 dB; its range tops at 40 dB), and a Δ from the cap says more about the cap than
    about the copy. Any other score, or one without a range, is returned as it is."""
    if info.role != "fidelity" or info.score_range is None:
        return list(scores)
    low, high = info.score_range
    return [min(max(s, low), high) if math.isfinite(s) else s for s in scores]


def checkpoints(last_step: int) -> tuple[int, ...]:
    """The paper's checkpoints (5, 10, 20) a run of `last_step` steps has reached; a shorter
    run uses its last step as its one checkpoint, if it comes after the first copy (a Δ from
    step 1 at step 1 is 0 by definition, not a measurement)."""
    present = tuple(s for s in CHECKPOINTS if s <= last_step)
    return present or ((last_step,) if last_step > FIRST_COPY else ())


def provisional(last_step: int, planned_steps: int, running: bool) -> bool:
    """Whether a run's verdicts may still change: it goes on, and a checkpoint it will read
    (`checkpoints` of its planned length) is still ahead. A run that has ended (completed,
    stopped or failed) is final whatever it reached; its verdicts say which checkpoints they
    used instead."""
    return running and checkpoints(last_step) != checkpoints(planned_steps)


def detects_degradation(deltas: Sequence[float], floor: float | None = 0.0) -> bool | None:
    """The paper's test: a metric *detects* the damage if its oriented Δ is negative at steps
    5, 10 and 20; with a noise floor (ours, `VerdictRow.detects_robust`), if it is below -floor
    there (`beyond_floor`: worse by more than the score moves on nuisance chains).

    Args:
        deltas: oriented Δ per step (`oriented_deltas`: from step 1 for the paper's test,
            from the input for `worse_than_input`), step 0 first.
        floor: 0 for the paper's test; the score's floor from `floors.floor_of` (>= 0) for
            ours, or None where no floor was measured.

    Returns:
        True: every checkpoint's Δ is below -floor. False: a finite one is not. None: not
        decidable (no floor, no checkpoint yet, or one is missing and none says False);
        `undecided_because` says which for the paper's test.
    """
    steps = checkpoints(len(deltas) - 1)
    if floor is None or not steps:
        return None
    beyond = [beyond_floor(deltas[s], floor) for s in steps]
    if False in beyond:
        return False
    if all(beyond):
        return True
    return None


def beyond_floor(delta: float, floor: float) -> bool | None:
    """The verdicts' one rule for one oriented Δ (negative = worse): is it worse by more than
    `floor` (0 for the paper's test)? `FLOOR_RULE` words it.

    Args:
        delta: an oriented Δ, from step 1 (a run's checkpoint) or from the input (the gate's
            edit against its original).
        floor: the score's noise floor, >= 0.

    Returns:
        True: `delta` < -floor. False: it is not. None: `delta` is missing (NaN).
    """
    if not math.isfinite(delta):
        return None
    return bool(delta < -floor)


def undecided_because(deltas: Sequence[float]) -> str:
    """Why the paper's test has no verdict on these Δ (from step 1); "" when it has one.

    Args:
        deltas: oriented Δ per step from `oriented_deltas` with the paper's base.

    Returns:
        e.g. "no step 1 yet (the paper's Δ is measured from the first copy)".
    """
    if detects_degradation(deltas) is not None:
        return ""
    if len(deltas) <= FIRST_COPY:
        return "no step 1 yet (the paper's Δ is measured from the first copy)"
    if not math.isfinite(deltas[FIRST_COPY]):
        return "no score at step 1, the first copy, which the paper's Δ is measured from"
    steps = checkpoints(len(deltas) - 1)
    if not steps:
        return "no step after the first copy yet"
    missing = [str(s) for s in steps if not math.isfinite(deltas[s])]
    return f"no score at step {', '.join(missing)}"


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation over the steps where both are finite (NaN below 3): the
    Pearson correlation of their average ranks, as scipy's `spearmanr` defines it, without
    its per-call overhead (it runs for every metric on every streamed update)."""
    from scipy.stats import rankdata

    n = min(len(a), len(b))
    x, y = np.asarray(a[:n], dtype=float), np.asarray(b[:n], dtype=float)
    both = np.isfinite(x) & np.isfinite(y)
    x, y = x[both], y[both]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of the share `successes / trials` (95 % by default).

    Unlike the normal approximation it stays inside 0..1 and is not empty at 0 or at all
    successes, which small counts (a leaderboard's suite, a class's votes) meet often (Wilson,
    "Probable inference, the law of succession, and statistical inference", JASA 1927; Brown,
    Cai & DasGupta, Statistical Science 2001, recommend it for small n).

    Raises:
        ValueError: unless 0 <= successes <= trials >= 1.
    """
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"a share needs 0 <= successes <= trials >= 1, got {successes}/{trials}")
    share, z2 = successes / trials, z * z
    centre = (share + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z / (1 + z2 / trials) * math.sqrt(share * (1 - share) / trials
                                            + z2 / (4 * trials * trials))
    return max(0.0, centre - half), min(1.0, centre + half)
