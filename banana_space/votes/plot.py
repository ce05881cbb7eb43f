"""The people line on the curves chart (`plots.delta_figure`'s `also`): for each pair (1, k)
voted on, the share of voters who preferred the later copy k minus one half, with its 95 %
Wilson interval as error bars. Like every other line, down is worse: where most preferred step 1,
the first copy, the line falls below 0; a coin toss sits on 0. It starts at step 1 (the base of
the pair, as the paper's Δ), not at the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..verdict.analysis import FIRST_COPY, Verdict
from ..verdict.history import VerdictRow
from ..verdict.plots import FONT_PX
from .tally import PairTally

# Tol's bright purple (5.9:1 on white, past WCAG's 3:1 for graphical objects), apart from the
# metrics' Okabe-Ito colours and the references' black and greys.
PEOPLE_COLOUR = "#AA3377"


def people_traces(pairs: Sequence[PairTally], row: VerdictRow | None) -> list[dict[str, Any]]:
    """The people line: one trace, or none where nobody voted on a pair (1, k)."""
    from_first = sorted((pair for pair in pairs if pair.a == FIRST_COPY and pair.n),
                        key=lambda pair: pair.b)
    if not from_first:
        return []
    xs, ys, above, below, said = [FIRST_COPY], [0.0], [0.0], [0.0], ["the base of each pair"]
    for pair in from_first:
        low, high = pair.interval
        share = pair.share_a
        xs.append(pair.b)
        ys.append(0.5 - share)
        above.append(share - low)
        below.append(high - share)
        said.append(f"{pair.prefer_a} of {pair.n} preferred step 1 to step {pair.b} "
                    f"(95% CI {low:.0%}–{high:.0%})")
    votes = max(pair.n for pair in from_first)
    verdict = Verdict(row.detects if row is not None else None).words.word
    return [{
        "type": "scatter", "x": xs, "y": ys, "mode": "lines+markers",
        "name": f"people ({votes} vote{'' if votes == 1 else 's'}; higher = later copy "
                f"preferred) · {verdict}",
        "line": {"color": PEOPLE_COLOUR, "width": 4},
        "marker": {"size": 11, "symbol": "square"},
        "error_y": {"type": "data", "symmetric": False, "array": above, "arrayminus": below,
                    "color": PEOPLE_COLOUR, "thickness": 2, "width": 8},
        "customdata": said,
        "hovertemplate": "<b>people</b><br>step %{x}<br>%{customdata}<extra></extra>",
        "legendrank": 1, "hoverlabel": {"font": {"size": FONT_PX}}}]
