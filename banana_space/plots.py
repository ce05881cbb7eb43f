"""History -> plotly figure, as pure functions.

One shared axis: each curve is its oriented delta against the input (negative = worse) as a
share of the score's nominal range (pyiqa's `score_range`; judges 1-5), so a metric moving
within its noise stays near 0 and PSNR losing 20 of its ~40 dB drops half the scale. Fidelity
is held inside its range first (frame 0 against itself is capped at 80 dB by pyiqa), so its
curve falls as the damage piles up, not at step 1. A score with no range falls back to its own
largest |delta| so far and says so in the legend ("own scale"). The references (fidelity to
the input, VLM judges) are drawn bold and dark; metrics that detect the degradation are solid
greens, those it fools dashed reds, undecided ones dotted grey; our own measures (family
"ours") carry "(ours)" and diamond markers. Every colour reads at >= 4.5:1 on white. Hover
shows the score itself (fidelity in its unit: dB, SSIM 0-1) and its delta.

A figure is a plain dict in plotly's JSON figure format, not a `go.Figure`: the app redraws it
after every frame, and at 25 curves x 100 steps plotly's validation of a `go.Figure` costs about
ten times what building the dict and its JSON does (bench/streaming.py). `go.Figure(spec)`
validates a spec and gives the object back.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from .analysis import History, detects_degradation, normalised, range_scaled
from .metrics import ScoreInfo

Figure = dict[str, Any]  # {"data": [trace, ...], "layout": {...}}, as plotly.js takes it

TEMPLATE = "plotly_white"
DELTA_TITLE = "Change vs the input (below 0 = worse)"
RAW_TITLE = "Raw scores, one chart per score (as each metric reports it)"
REFERENCE_COLOURS = {"fidelity": ["#111111", "#555555"], "judge": ["#6a1b9a", "#4527a0"]}
DETECTS_COLOURS = ["#1b7f3b", "#00695c", "#33691e", "#1b5e20", "#2f7d6d", "#00796b"]
FOOLED_COLOURS = ["#d32f2f", "#bf360c", "#c2185b", "#b71c1c", "#a0522d", "#c43e00"]
UNDECIDED_COLOUR = "#6b6b6b"
# How a value reads where it has a unit; any other score is shown as a plain number.
UNITS = {"psnr": " dB"}
MIN_HALF_RANGE = 0.2  # the axis shows at least ±20% of a range, so small moves look small
ZERO_LINE = {"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": 0,
             "y1": 0, "line": {"color": "#bbbbbb", "width": 1}}


def value_text(name: str, value: float) -> str:
    """A score as a reader wants it: "27.8 dB", "0.831"; "" when missing."""
    return "" if not math.isfinite(value) else f"{value:.3g}{UNITS.get(name, '')}"


def display_name(info: ScoreInfo) -> str:
    """The label, with "(ours)" on our own measures so they never pass for pyiqa's."""
    return (info.label or info.name) + (" (ours)" if info.family == "ours" else "")


def scaled_curve(history: History, name: str) -> tuple[list[float], bool]:
    """(the plotted curve, whether it is on the score's range); False: its own scale."""
    on_range = range_scaled(history.scores[name], history.infos[name])
    return (on_range, True) if on_range is not None else (normalised(history.deltas(name)), False)


def _verdict_word(detects: bool | None) -> str:
    return {True: "detects", False: "fooled", None: "undecided"}[detects]


def _style(role: str, detects: bool | None, index: int) -> dict:
    """Line colour, width and dash: references bold, detects solid, fooled dashed."""
    if role in REFERENCE_COLOURS:
        palette = REFERENCE_COLOURS[role]
        return {"color": palette[index % len(palette)], "width": 5}
    if detects:
        return {"color": DETECTS_COLOURS[index % len(DETECTS_COLOURS)], "width": 2}
    if detects is False:
        return {"color": FOOLED_COLOURS[index % len(FOOLED_COLOURS)], "width": 2, "dash": "dash"}
    return {"color": UNDECIDED_COLOUR, "width": 2, "dash": "dot"}


def _mode(info: ScoreInfo, values: list[float]) -> str:
    """A judge that rated only some frames (the checkpoints, on ZeroGPU) is drawn as its
    points: a line would join ratings across the frames it never saw."""
    sparse = info.role == "judge" and any(not math.isfinite(v) for v in values)
    return "markers" if sparse else "lines+markers"


def _clean(values: list[float]) -> list[float | None]:
    return [v if math.isfinite(v) else None for v in values]


@lru_cache(maxsize=1)
def _template() -> dict:
    import plotly.io as pio

    return pio.templates[TEMPLATE].to_plotly_json()


def delta_figure(history: History, title: str = DELTA_TITLE) -> Figure:
    """Every column's range-scaled oriented delta against step; references first and bold."""
    traces = []
    counters: dict[object, int] = {}
    extent = MIN_HALF_RANGE
    for name, info in history.infos.items():
        deltas = history.deltas(name)
        detects = detects_degradation(deltas)
        key = info.role if info.role != "metric" else detects
        index = counters[key] = counters.get(key, -1) + 1
        kind = "reference" if info.role != "metric" else _verdict_word(detects)
        curve, on_range = scaled_curve(history, name)
        extent = max([extent, *(abs(v) for v in curve if math.isfinite(v))])
        scale = "" if on_range else " · own scale"
        traces.append({
            "type": "scatter", "x": list(range(len(deltas))), "y": _clean(curve),
            "mode": _mode(info, curve), "connectgaps": True,  # a sampled chain's steps between
            "name": f"{display_name(info)} ({info.direction}) · {kind}{scale}",
            "line": _style(info.role, detects, index),
            "marker": {"size": 7 if info.family == "ours" else 5,
                       "symbol": "diamond" if info.family == "ours" else "circle"},
            "customdata": [[value_text(name, v), "" if not math.isfinite(d) else f"{d:+.3g}"]
                           for v, d in zip(history.scores[name], deltas, strict=True)],
            "hovertemplate": f"<b>{display_name(info)}</b><br>step %{{x}}<br>"
                             "score %{customdata[0]} (Δ %{customdata[1]})"
                             f"<br>{'share of its range' if on_range else 'own scale'} "
                             "%{y:.0%}<extra></extra>"})
    half = round(extent * 1.1, 3)
    layout = {
        "template": _template(), "shapes": [ZERO_LINE],
        "title": {"text": title, "font": {"size": 14}, "x": 0.01} if title else {},
        "height": 380, "margin": {"l": 50, "r": 10, "t": 36 if title else 10, "b": 40},
        "xaxis": {"title": {"text": "step"}, "rangemode": "tozero", "tick0": 0,
                  "dtick": max(1, math.ceil(history.last_step / 10))},  # whole steps only
        "yaxis": {"title": {"text": "Δ as a share of the score's range"}, "range": [-half, half],
                  "tickformat": ".0%"},
        "legend": {"orientation": "h", "y": -0.2, "font": {"size": 11}},
        "hovermode": "closest"}
    return {"data": traces, "layout": layout}


@lru_cache(maxsize=8)
def _grid_layout(titles: tuple[str, ...], columns: int) -> dict:
    """The small multiples' axes and titles: plotly's make_subplots, once per set of columns."""
    from plotly.subplots import make_subplots

    rows = max(1, math.ceil(len(titles) / columns))
    grid = make_subplots(rows=rows, cols=columns, shared_xaxes=True, subplot_titles=titles,
                         vertical_spacing=min(0.12, 0.6 / rows))
    grid.update_layout(template=TEMPLATE, height=220 * rows,
                       margin={"l": 40, "r": 10, "t": 40, "b": 30})
    return grid.to_plotly_json()["layout"]


def raw_figure(history: History) -> Figure:
    """Small multiples: each column's raw score against step, on its own axis."""
    names = list(history.infos)
    titles = tuple(f"{display_name(history.infos[n])} ({history.infos[n].direction})"
                   for n in names)
    traces = []
    for i, name in enumerate(names):
        info = history.infos[name]
        detects = detects_degradation(history.deltas(name))
        # Fidelity at step 0 is the input against itself: no measurement (pyiqa writes PSNR's
        # infinity as 80 dB, which would stretch its axis far above every real frame).
        series = history.scores[name]
        if info.role == "fidelity":
            series = [math.nan] * min(1, len(series)) + series[1:]
        axis = "" if i == 0 else str(i + 1)
        traces.append({
            "type": "scatter", "x": list(range(len(series))), "y": _clean(series),
            "mode": _mode(info, series), "connectgaps": True, "name": name,
            "line": _style(info.role, detects, 0),
            "showlegend": False, "xaxis": f"x{axis}", "yaxis": f"y{axis}",
            "hovertemplate": f"{name}<br>step %{{x}}<br>%{{y:.4g}}{UNITS.get(name, '')}"
                             "<extra></extra>"})
    layout = dict(_grid_layout(titles, 3))
    layout["title"] = {"text": RAW_TITLE, "font": {"size": 14}, "x": 0.01}
    layout["margin"] = {**layout["margin"], "t": 70}
    return {"data": traces, "layout": layout}
