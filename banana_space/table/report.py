"""report.html: the table, a chains x metrics heat map of the verdicts, and each metric's
median normalised oriented Δ across chains with its spread, in one self-contained page
(plotly.js is inlined: it opens offline and can be mailed).

Curves use the app's own arithmetic (`History.deltas`, `normalised`): the paper's Δ from step
1, negative is worse, each chain's curve divided by its largest |Δ|, so chains of different
scales share one axis. The band is the 25th to 75th percentile across chains at each step.
"""

from __future__ import annotations

import html
import math
import warnings
from collections.abc import Sequence

import numpy as np

from ..events import ScoreInfo
from ..verdict.analysis import Verdict, normalised
from ..verdict.history import History, VerdictRow

HEAT_COLOURS = [[0.0, "#d32f2f"], [0.5, "#e0e0e0"], [1.0, "#1b7f3b"]]


def heat_map(verdicts: dict[str, list[VerdictRow]], metrics: Sequence[str]) -> dict:
    chains = list(verdicts)
    by_chain = {name: {row.metric: row.detects for row in rows}
                for name, rows in verdicts.items()}
    z = [[Verdict(by_chain[c][m]).words.code if m in by_chain[c] else None for m in metrics]
         for c in chains]
    words = {v.words.code: v.words.word for v in Verdict} | {None: "not scored"}
    text = [[words[v] for v in row] for row in z]
    return {"data": [{"type": "heatmap", "z": z, "x": list(metrics), "y": chains, "text": text,
                      "hovertemplate": "%{y}<br>%{x}: %{text}<extra></extra>",
                      "colorscale": HEAT_COLOURS, "zmin": -1, "zmax": 1, "showscale": False}],
            "layout": {"title": {"text": "Verdict per chain (green detects, red fooled, grey "
                                         "undecided)"},
                       "height": 200 + 22 * len(chains), "margin": {"l": 220},
                       "yaxis": {"autorange": "reversed"}, "template": "plotly_white"}}


def curves(histories: dict[str, History], infos: dict[str, ScoreInfo]) -> dict:
    """Median normalised Δ from step 1 per step across chains, with the 25-75 % band."""
    data = []
    for index, (metric, info) in enumerate(infos.items()):
        series = [normalised(h.deltas(metric)) for h in histories.values() if metric in h.scores]
        length = max((len(s) for s in series), default=0)
        grid = np.full((len(series), length), np.nan)
        for row, values in enumerate(series):
            grid[row, :len(values)] = values
        steps = list(range(length))
        with warnings.catch_warnings():  # a step no chain has a score for is simply empty
            warnings.simplefilter("ignore", RuntimeWarning)
            counts = np.sum(np.isfinite(grid), axis=0)
            low, median, high = (np.nanpercentile(grid, q, axis=0) if length else []
                                 for q in (25, 50, 75))
        median, low, high = (_clean(v, counts) for v in (median, low, high))
        group, colour = f"g{index}", _colour(index, info.role)
        data += [
            {"type": "scatter", "x": steps + steps[::-1], "y": high + low[::-1],
             "fill": "toself", "fillcolor": colour, "opacity": 0.15, "line": {"width": 0},
             "legendgroup": group, "showlegend": False, "hoverinfo": "skip", "name": metric},
            {"type": "scatter", "x": steps, "y": median, "mode": "lines", "name": metric,
             "legendgroup": group,
             "line": {"color": colour, "width": 4 if info.role != "metric" else 2}}]
    return {"data": data, "layout": {
        "title": {"text": "Median normalised Δ from step 1 across chains (negative = worse; "
                          "band: 25-75 %)"},
        "xaxis": {"title": {"text": "step"}}, "yaxis": {"range": [-1.05, 1.05]},
        "height": 520, "template": "plotly_white"}}


def _clean(values: Sequence[float], counts: Sequence[int]) -> list[float | None]:
    return [float(v) if n and math.isfinite(v) else None for v, n in zip(values, counts,
                                                                        strict=True)]


def _colour(index: int, role: str) -> str:
    if role != "metric":
        return ["#111111", "#555555", "#6a1b9a"][index % 3]
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf"]
    return palette[index % len(palette)]


def table_html(rows: list[list[object]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("metric", "chains", "detects", "fooled",
                                              "undecided", "beyond floor",
                                              "worse than the input"))
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def report_html(rows: list[list[object]], verdicts: dict[str, list[VerdictRow]],
                histories: dict[str, History], infos: dict[str, ScoreInfo],
                notes: Sequence[str]) -> str:
    import plotly.io as pio

    figures = [heat_map(verdicts, list(infos)), curves(histories, infos)]
    divs = [pio.to_html(figure, full_html=False, include_plotlyjs=index == 0,
                        div_id=f"figure-{index}", config={"responsive": True})
            for index, figure in enumerate(figures)]
    items = "".join(f"<li>{html.escape(note)}</li>" for note in notes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Banana Space: dataset table</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 10px;text-align:right}}
td:first-child,th:first-child{{text-align:left}}</style></head><body>
<h1>Does each metric detect the degradation?</h1>
<p>{len(histories)} chain(s). A metric <em>detects</em> it in a chain when its oriented Δ from
step 1, the first copy (negative = worse), is negative at steps 5, 10 and 20 (Banana100, arXiv
2604.03400); <em>beyond floor</em> (ours) when it is below minus the score's noise floor there
(its largest move on chains with no damage a person would name: an identical copy, a half-pixel
shift, a lossless re-save, one JPEG pass at quality 95). <em>Worse than the input</em> (ours):
the same checkpoints measured from step 0, the input, instead. psnr and ssim are fidelity to
frame 0: the reference.</p>
{table_html(rows)}
<ul>{items}</ul>
{divs[0]}
{divs[1]}
</body></html>
"""
