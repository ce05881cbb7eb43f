"""A running chain's progress in words a person reads at a glance: a bar of the steps made,
the seconds a step takes and about how long is left.

A pure function of when each frame was made (`time.monotonic()` seconds, as the view saw
the frames arrive) and how many steps the run has. The pace is the mean time between the
frames made so far (the generator and the scorer overlap, so it is the slower of the two
that sets it); step 0 is the input, made at once, so the pace needs a second frame.
"""

from __future__ import annotations

from collections.abc import Mapping

BAR_CELLS = 10
FULL, EMPTY = "▰", "▱"


def bar(done: int, total: int) -> str:
    """`BAR_CELLS` cells, as many full as the share of steps done (never full before the end)."""
    if total <= 0:
        return EMPTY * BAR_CELLS
    full = BAR_CELLS if done >= total else min(BAR_CELLS - 1, BAR_CELLS * max(done, 0) // total)
    return FULL * full + EMPTY * (BAR_CELLS - full)


def seconds_per_step(made_at: Mapping[int, float]) -> float | None:
    """The mean seconds from one frame to the next, over the frames seen; None before two."""
    if len(made_at) < 2:
        return None
    first, last = min(made_at), max(made_at)
    return (made_at[last] - made_at[first]) / (last - first)


def duration_text(seconds: float) -> str:
    """"8 s", "2 min", "1 h 5 min": rounded as a person says it."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def progress_line(made_at: Mapping[int, float], steps: int) -> str:
    """`▰▰▰▱▱▱▱▱▱▱ 3 of 10 steps · 2.1 s a step · about 15 s left`: what is done, the pace and
    the time left at that pace (each part once it is known)."""
    done = max(made_at, default=0)
    parts = [f"{bar(done, steps)} {done} of {steps} steps"]
    pace = seconds_per_step(made_at)
    if pace is not None:
        parts.append(f"{pace:.1f} s a step")
        if done < steps:
            parts.append(f"about {duration_text(pace * (steps - done))} left")
    return " · ".join(parts)
