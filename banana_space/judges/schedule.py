"""Which steps the judges rate (`rating_at`): a run's choice (`judged_steps`: every frame, or
the checkpoints the verdict reads, the ZeroGPU default, `chain.quota`), then each judge's own
schedule (a slow judge rates the checkpoints only).
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Judge

JUDGED_STEPS = (0, 1, 5, 10, 20, 50, 100)  # judge_at="checkpoints": these and the last step
JUDGE_AT = {"checkpoints": "at the checkpoints (0, 1, 5, 10, 20, 50, 100, the last step)",
            "every": "every frame"}


def judged_steps(steps: int, judge_at: str) -> frozenset[int] | None:
    """The steps the judges rate in a run of `steps` steps; None for every step."""
    if judge_at not in JUDGE_AT:
        raise ValueError(f"judge_at must be one of {', '.join(JUDGE_AT)}, got {judge_at!r}")
    if judge_at == "every":
        return None
    return frozenset(step for step in JUDGED_STEPS if step <= steps) | {steps}


def rating_at(judges: Sequence[Judge], step: int, steps: int,
              judge_at: str = "every") -> tuple[Judge, ...]:
    """Of `judges`, those that rate `step` of a `steps`-step chain: none where the run's choice
    (`judge_at`) leaves it out, else each by its own schedule."""
    judged = judged_steps(steps, judge_at)
    if judged is not None and step not in judged:
        return ()
    return tuple(judge for judge in judges
                 if (own := judge.schedule(steps)) is None or step in own)
