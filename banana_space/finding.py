"""The finding in words, generated from a run's verdicts: `summarise` (the whole of it: each
family of scores counted on its own by the paper's test, the noise floors, the change since the
input, a simulation beside the paper's finding) and `headline` (at most `HEADLINE_WORDS` words,
what a visitor reads in the first seconds). Pure: a `History` in, text out."""

from __future__ import annotations

import math

from .scores.catalog import FAMILY_NOUNS, PRESET_KEYS, PRESETS
from .verdict.analysis import PROVISIONAL, checkpoints, paper_test, provisional
from .verdict.history import History, VerdictRow
from .verdict.plots import display_name, value_text

HEADLINE_WORDS = 30  # what a visitor reads in the first seconds; the rest is folded
BANANA100_METRICS = PRESETS[PRESET_KEYS["banana100"]]


def _people_clause(people: VerdictRow, tail: str) -> str:
    """The room's verdict, counted apart from metrics and rulers."""
    if people.detects is None:
        return f"counted apart, the people's votes: {people.undecided_because}"
    said = "most preferred step 1 at every checkpoint" if people.detects else \
        "most did not prefer step 1 at every checkpoint"
    return f"counted apart, **the people in the room {'detect' if people.detects else 'miss'} " \
           f"it** ({said}){tail}"


def summarise(history: History, steps: int, running: bool, simulated: bool = False,
              people: VerdictRow | None = None) -> str:
    """The finding in one breath, generated from the verdicts, e.g. "After 20 steps, PSNR to the
    input fell 41 → 27 dB; by the paper's test (…), 2 of 4 standard metrics (pyiqa's, …) detect
    the damage (brisque, piqe), 2 are fooled (niqe, entropy); counted apart, 1 of 2 rulers (ours,
    …) detects it …". Fidelity is quoted from step 1 (step 0 is the input against itself). Each
    family is counted on its own (`catalog.FAMILY_NOUNS`: the paper's kind, pyiqa's, first) and
    undecided scores are named with why; the test names only the checkpoints it was read at
    (`analysis.paper_test`). Then the same test beyond each score's noise floor, where the
    change since the input tells another story, and for a simulation what this one chain shows
    beside the paper's finding over every image. "So far" only while the run goes on towards a
    checkpoint (`analysis.provisional`): a run that has ended is final."""
    last = history.last_step
    if last < 1:
        return "" if last < 0 else "Step 0 is your input; the first copy is on its way…"
    plural = "" if last == 1 else "s"
    when = f"So far, after {last} of {steps} steps" if running else f"After {last} step{plural}"
    moves = _reference_moves(history, last)
    parts = [f"**{when}**, " + (" and ".join(moves) if moves else "no reference is scored")]
    rows = [row for row in history.verdict() if row.role == "metric"]
    used = checkpoints(last)
    tail = PROVISIONAL if provisional(last, steps, running) else ""
    families = _by_family(rows, history)
    if rows and all(row.detects is None for row in rows):
        parts.append(f"{paper_test(used)} cannot be asked yet: {rows[0].undecided_because}")
    elif rows:
        tallies = [_tally(family, found, tail) for family, found in families.items()]
        parts.append(f"**by {paper_test(used)}, {tallies[0]}**")
        parts += [f"counted apart, {tally}" for tally in tallies[1:]]
    robust = [f"{[r.detects_robust for r in found].count(True)} of {len(found)} "
              f"{FAMILY_NOUNS.get(family, (family,))[0]}" for family, found in families.items()
              if any(r.detects_robust is not None for r in found)]
    if robust:
        one = len(robust) == 1 and robust[0].startswith("1 of")
        parts.append(f"beyond each score's noise floor {' and '.join(robust)} "
                     f"detect{'s' if one else ''} it{tail}")
    if people is not None:
        parts.append(_people_clause(people, tail))
    parts += [f"since the input, {row.metric}: {row.input_contrast}" for row in rows
              if row.input_contrast]
    paper_kind = families.get("pyiqa", [])
    if simulated and any(row.detects is not None for row in paper_kind):
        parts += _against_the_paper(sum(row.detects is True for row in paper_kind),
                                    len(paper_kind), tail)
    return "; ".join(parts) + "."


def headline(history: History, steps: int, running: bool) -> str:
    """The finding in at most `HEADLINE_WORDS` words: what fell (the first reference's move since
    step 1), and how many of the paper's kind of metric detect it by the paper's test, naming
    the checkpoints it was read at: "**After 20 steps**, PSNR to the input fell 41 → 22 dB; by
    the paper's test (steps 5, 10, 20), 1 of 3 standard metrics detects it." (`summarise` says
    the rest.)"""
    last = history.last_step
    if last < 1:
        return "" if last < 0 else "Step 0 is your input; the first copy is on its way…"
    plural = "" if last == 1 else "s"
    when = f"So far (step {last} of {steps})" if running else f"After {last} step{plural}"
    moves = _reference_moves(history, last)
    rows = [row for row in history.verdict() if row.role == "metric"]
    paper_kind = _by_family(rows, history).get("pyiqa") or rows
    used = checkpoints(last)
    if not paper_kind or all(row.detects is None for row in paper_kind):
        tally = "the paper's test cannot be asked yet"
    else:
        detected = sum(row.detects is True for row in paper_kind)
        family = history.infos[paper_kind[0].metric].family
        noun = FAMILY_NOUNS.get(family, (f"{family} scores",))[0]
        at = ", ".join(map(str, used))
        tally = (f"by the paper's test (step{'s' if len(used) > 1 else ''} {at}), {detected} "
                 f"of {len(paper_kind)} {noun} detect{'s' if detected == 1 else ''} it")
    return f"**{when}**, {moves[0] if moves else 'no reference is scored'}; {tally}."


def _by_family(rows: list[VerdictRow], history: History) -> dict[str, list[VerdictRow]]:
    """The rows by family, in `FAMILY_NOUNS`' order (pyiqa's, the paper's kind, first)."""
    family = {row.metric: history.infos[row.metric].family for row in rows}
    order = [*FAMILY_NOUNS, *sorted(set(family.values()) - set(FAMILY_NOUNS))]
    return {name: found for name in order
            if (found := [row for row in rows if family[row.metric] == name])}


def _tally(family: str, rows: list[VerdictRow], tail: str) -> str:
    """One family's count by the paper's test, every undecided score named with why: "2 of 4
    standard metrics (pyiqa's, …) detect the damage (brisque, niqe), 1 is fooled (piqe), 1 is
    undecided (entropy: no score at step 5)"."""
    noun, about = FAMILY_NOUNS.get(family, (f"{family} scores", ""))
    detected = [row.metric for row in rows if row.detects is True]
    fooled = [row.metric for row in rows if row.detects is False]
    undecided = [f"{row.metric}: {row.undecided_because}" for row in rows if row.detects is None]
    text = (f"{len(detected)} of {len(rows)} {noun}" + (f" ({about})" if about else "")
            + f" detect{'s' if len(detected) == 1 else ''} the damage"
            + (f" ({', '.join(detected)})" if detected else ""))
    for word, names, joint in (("fooled", fooled, ", "), ("undecided", undecided, "; ")):
        if names:
            text += f", {len(names)} {'is' if len(names) == 1 else 'are'} {word} " \
                    f"({joint.join(names)})"
    return text + tail


def _against_the_paper(noticed: int, metrics: int, tail: str) -> list[str]:
    """What this one simulated chain shows, kept apart from the paper's finding, which is a
    count over every image (its abstract: among its 21 metrics, "none of them consistently
    assign lower scores to heavily degraded images than to clean ones"); `tail` marks this
    chain's part provisional."""
    this_chain = (f"on this one chain {noticed} of {metrics} standard metrics "
                  f"notice{'s' if noticed == 1 else ''} this simulation{tail}")
    paper = (f"the paper's finding is over every image, not one chain: on Banana100's real "
             f"chains none of its {len(BANANA100_METRICS)} metrics noticed the damage on every "
             "image")
    return [this_chain, paper]


def _reference_moves(history: History, last: int) -> list[str]:
    """How each reference moved from step 1 to `last`: "PSNR to the input fell 41 → 27 dB"."""
    moves = []
    for name, info in history.infos.items():
        first, now = history.scores[name][1], history.scores[name][last]
        if info.role == "metric" or not (math.isfinite(first) and math.isfinite(now)):
            continue
        what = f"{name.upper()} to the input" if info.role == "fidelity" else display_name(info)
        if last == 1 or first == now:
            moves.append(f"{what} is {value_text(name, now)}")
        else:
            verb = "fell" if (now < first) != info.lower_better else "rose"
            moves.append(f"{what} {verb} {first:.3g} → {value_text(name, now)}")
    return moves
