"""A run's votes as `banana-space votes RUN` prints them: one line per pair, or with `--json`
`{"pairs": [{"a": 1, "b": 5, "n": …, "prefer_a": …, "low": …, "high": …}, …]}`, where
`low`/`high` is the 95 % Wilson interval of `prefer_a / n` (`tally.wilson`)."""

from __future__ import annotations

from typing import Any

from .tally import PairTally


def as_json(pairs: list[PairTally]) -> dict[str, Any]:
    return {"pairs": [pair.as_record() for pair in pairs]}


def as_lines(pairs: list[PairTally]) -> str:
    """One line per pair: "step 1 vs 5: 10 of 12 preferred step 1 (83%, 95% CI 55–95%)"."""
    if not pairs:
        return "no votes yet"
    lines = []
    for pair in pairs:
        low, high = pair.interval
        lines.append(f"step {pair.a} vs {pair.b}: {pair.prefer_a} of {pair.n} preferred step "
                     f"{pair.a} ({pair.share_a:.0%}, 95% CI {low:.0%}–{high:.0%})")
    return "\n".join(lines)
