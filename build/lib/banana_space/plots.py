"""History -> plotly figure, as pure functions.

One shared axis: each curve is its oriented delta against the input (negative = worse),
divided by its own largest |delta| so far, so every metric spans -1..1 and only the direction
and timing of its moves are compared. The references (fidelity to the input, VLM judges) are
drawn bold and dark; metrics that detect the degradation are solid greens, those it fools are
dashed reds, undecided ones dotted grey. Hover shows the raw score.

A figure is a plain dict in plotly's JSON figure format, not a `go.Figure`: the app redraws it
after every frame, and at 25 curves x 100 steps plotly's validation of a `go.Figure` costs about
ten times what building the dict and its JSON does (bench/streaming.py). `go.Figure(spec)`
validates a spec and gives the object back.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from .analysis import History, detects_degradation, normalised

Figure = dict[str, Any]  # {"data": [trace, ...], "layout": {...}}, as plotly.js takes it

TEMPLATE = "plotly_white"
REFERENCE_COLOURS = {"fidelity": ["#111111", "#555555"], "judge": ["#6a1b9a", "#ad1457"]}
DETECTS_COLOURS = ["#1b7f3b", "#2e9e57", "#4caf50", "#66bb6a", "#2f7d6d", "#7cb342"]
FOOLED_COLOURS = ["#d32f2f", "#f57c00", "#c2185b", "#e64a19", "#ff7043", "#b71c1c"]
ZERO_LINE = {"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": 0,
             "y1": 0, "line": {"color": "#bbbbbb", "width": 1}}


def _verdict_word(detects: bool | None) -> str:
    return {True: "detects", False: "fooled", None: "undecided"}[detects]


def _style(role: str, detects: bool | None, index: int) -> dict:
    if role in REFERENCE_COLOURS:
        palette = REFERENCE_COLOURS[role]
        return {"color": palette[index % len(palette)], "width": 5}
    if detects:
        return {"color": DETECTS_COLOURS[index % len(DETECTS_COLOURS)], "width": 2}
    if detects is False:
        return {"color": FOOLED_COLOURS[index % len(FOOLED_COLOURS)], "width": 2, "dash": "dash"}
    return {"color": "#9e9e9e", "width": 2, "dash": "dot"}


def _clean(values: list[float]) -> list[float | None]:
    return [v if math.isfinite(v) else None for v in values]


@lru_cache(maxsize=1)
def _template() -> dict:
    import plotly.io as pio

    return pio.templates[TEMPLATE].to_plotly_json()


def delta_figure(history: History, title: str = "") -> Figure:
    """Every column's normalised oriented delta against step; references first and bold."""
    traces = []
    counters: dict[object, int] = {}
    for name, info in history.infos.items():
        deltas = history.deltas(name)
        detects = detects_degradation(deltas)
        key = info.role if info.role != "metric" else detects
        index = counters[key] = counters.get(key, -1) + 1
        kind = "reference" if info.role != "metric" else _verdict_word(detects)
        traces.append({
            "type": "scatter", "x": list(range(len(deltas))), "y": _clean(normalised(deltas)),
            "mode": "lines+markers", "name": f"{info.label or name} ({info.direction}) · {kind}",
            "line": _style(info.role, detects, index), "marker": {"size": 5},
            "customdata": _clean(history.scores[name]),
            "hovertemplate": f"<b>{name}</b><br>step %{{x}}<br>raw score %{{customdata:.4g}}"
                             "<br>normalised Δ %{y:.2f}<extra></extra>"})
    layout = {
        "template": _template(), "shapes": [ZERO_LINE], "title": {"text": title} if title else {},
        "height": 460, "margin": {"l": 50, "r": 10, "t": 40 if title else 10, "b": 40},
        "xaxis": {"title": {"text": "step"}, "rangemode": "tozero", "tick0": 0,
                  "dtick": max(1, math.ceil(history.last_step / 10))},  # whole steps only
        "yaxis": {"title": {"text": "normalised Δ (negative = worse)"}, "range": [-1.1, 1.1]},
        "legend": {"orientation": "h", "y": -0.18, "font": {"size": 11}},
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
    titles = tuple(f"{n} ({history.infos[n].direction})" for n in names)
    traces = []
    for i, name in enumerate(names):
        info = history.infos[name]
        detects = detects_degradation(history.deltas(name))
        series = history.scores[name]
        axis = "" if i == 0 else str(i + 1)
        traces.append({
            "type": "scatter", "x": list(range(len(series))), "y": _clean(series),
            "mode": "lines+markers", "name": name, "line": _style(info.role, detects, 0),
            "showlegend": False, "xaxis": f"x{axis}", "yaxis": f"y{axis}",
            "hovertemplate": f"{name}<br>step %{{x}}<br>%{{y:.4g}}<extra></extra>"})
    return {"data": traces, "layout": dict(_grid_layout(titles, 3))}
