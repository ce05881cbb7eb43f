"""Lessons: one click sets up a comparison that makes one of the paper's points, and the
sentence of what to look for is written afterwards from the two runs' own verdicts.

Each lesson is a pair of sides (`sides.Side`) and the names of what each side shows; none
carries a conclusion. `lesson_sentence` reads the A/B verdict rows (`comparison.pair_rows`) and
says which metrics detect one side's damage and are fooled by the other's, whatever they turn
out to be: the page never says in advance what a run will show. It says at which checkpoints
the verdicts were read where that is fewer than the paper's (a lesson's short runs reach step 5
only), and names the metrics left undecided, so a silence is never read as a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..chain.comparison import PairRow
from ..chain.sides import Side
from ..scores.catalog import metric_info
from ..verdict.analysis import fewer_checkpoints, steps_text
from ..verdict.history import VerdictRow

STEPS = 6  # enough for the paper's first checkpoint (step 5)


@dataclass(frozen=True)
class Lesson:
    title: str  # the button
    a: Side
    b: Side
    a_shows: str  # what side A is, in a few words ("model-like static")
    b_shows: str
    about: str  # where the pair comes from (the paper, an audit), not what it will show


LESSONS: dict[str, Lesson] = {
    "static-vs-noise": Lesson(
        "Model-like static vs white noise",
        Side(options={"profile": "nano-banana-pro"}), Side(options={"profile": "white-noise"}),
        "model-like static (Nano Banana Pro-like)", "white noise",
        "The paper's explanation: classic metrics were fitted on textbook distortions such as "
        "white noise, not on what an editor does."),
    "as-is-vs-smoothed": Lesson(
        "Start as it is vs smoothed",
        Side(options={"profile": "nano-banana-pro"}),
        Side(options={"profile": "nano-banana-pro"}, smoothed=True),
        "the start as it is", "the start smoothed",
        "Our start-smoothness study (docs/start_smoothness.md): the paper's starts were smooth "
        "generated images, and a start's smoothness can change a classic metric's verdict."),
    "pro-vs-flux": Lesson(
        "Pro-like static vs FLUX.2-like dots",
        Side(options={"profile": "nano-banana-pro"}), Side(options={"profile": "scattered-dots"}),
        "Nano Banana Pro-like static", "FLUX.2-like scattered dots",
        "Two simulated generators' damage, each modelled on a description of the real one."),
}


def _subject(rows: Sequence[PairRow], singular: str, plural: str) -> str:
    """"BRISQUE detects" / "BRISQUE and NIQE detect": the metrics' labels and the verb."""
    labels = [metric_info(row.metric).label or row.metric for row in rows]
    names = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
    return f"{names} {singular if len(labels) == 1 else plural}"


def _read_at(rows: Sequence[PairRow]) -> str:
    """" at step 5 only" where every verdict in `rows` was read at the same checkpoints, fewer
    than the paper's; each side's where they differ; "" at all of the paper's."""
    used = {"A": {row.a.checkpoints_used for row in rows if row.a},
            "B": {row.b.checkpoints_used for row in rows if row.b}}
    if used["A"] == used["B"] and len(used["A"]) == 1:
        fewer = fewer_checkpoints(next(iter(used["A"])))
        return f" {fewer}" if fewer else ""
    per_side = [f"{side}'s at " + " or ".join(steps_text(steps) for steps in sorted(found))
                for side, found in used.items() if found]
    return f" (verdicts read: {', '.join(per_side)})"


def _undecided(rows: Sequence[PairRow]) -> str:
    """"; left undecided: NIQE on B (why)": the metrics with a verdict row on a side that has
    no verdict there."""
    named = []
    for row in rows:
        sides = [(side, verdict) for side, verdict in (("A", row.a), ("B", row.b))
                 if isinstance(verdict, VerdictRow) and verdict.detects is None]
        if row.role != "metric" or not sides:
            continue
        label = metric_info(row.metric).label or row.metric
        where = " and ".join(side for side, _ in sides)
        why = "; ".join(dict.fromkeys(v.undecided_because for _, v in sides if v.undecided_because))
        named.append(f"{label} on {where}" + (f" ({why})" if why else ""))
    return f"; left undecided: {', '.join(named)}" if named else ""


def lesson_sentence(a_shows: str, b_shows: str, rows: Sequence[PairRow]) -> str:
    """What to look for, from the verdicts (the paper's test) of the quality metrics on both
    sides: which detect one side and are fooled by the other, which detect or miss both, at
    which checkpoints that was read (where fewer than the paper's), and which are undecided.

    Args:
        a_shows, b_shows: what each side is, in a few words.
        rows: the pair's verdict rows.
    Returns:
        One sentence; "" while no metric has a verdict on both sides yet.
    """
    groups: dict[tuple[bool, bool], list[PairRow]] = {}
    for row in rows:
        if (row.role == "metric" and row.a and row.b and row.a.detects is not None
                and row.b.detects is not None):
            groups.setdefault((row.a.detects, row.b.detects), []).append(row)
    clauses = []
    if found := groups.get((False, True)):
        clauses.append(f"{_subject(found, 'detects', 'detect')} {b_shows} but "
                       f"{'is' if len(found) == 1 else 'are'} fooled by {a_shows}")
    if found := groups.get((True, False)):
        clauses.append(f"{_subject(found, 'detects', 'detect')} {a_shows} but "
                       f"{'is' if len(found) == 1 else 'are'} fooled by {b_shows}")
    if found := groups.get((True, True)):
        clauses.append(f"{_subject(found, 'detects', 'detect')} both")
    if found := groups.get((False, False)):
        clauses.append(f"{_subject(found, 'is', 'are')} fooled by both")
    if not clauses:
        return ""
    decided = [row for found in groups.values() for row in found]
    return (f"By the paper's test{_read_at(decided)} in these two runs, " + "; ".join(clauses)
            + _undecided(rows) + ": look at those curves, solid (A) against dashed (B).")
