"""History -> plotly figure, as pure functions.

One shared axis: each curve is its oriented delta against the input (negative = worse),
divided by its own largest |delta| so far, so every metric spans -1..1 and only the direction
and timing of its moves are compared. The references (fidelity to the input, VLM judges) are
drawn bold and dark; metrics that detect the degradation are solid greens, those it fools are
dashed reds, undecided ones dotted grey. Hover shows the raw score.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .analysis import History, detects_degradation, normalised

REFERENCE_COLOURS = {"fidelity": ["#111111", "#555555"], "judge": ["#6a1b9a", "#ad1457"]}
DETECTS_COLOURS = ["#1b7f3b", "#2e9e57", "#4caf50", "#66bb6a", "#2f7d6d", "#7cb342"]
FOOLED_COLOURS = ["#d32f2f", "#f57c00", "#c2185b", "#e64a19", "#ff7043", "#b71c1c"]


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


def delta_figure(history: History, title: str = "") -> go.Figure:
    """Every column's normalised oriented delta against step; references first and bold."""
    traces = []
    counters: dict[object, int] = {}
    for name, info in history.infos.items():
        deltas = history.deltas(name)
        detects = detects_degradation(deltas)
        key = info.role if info.role != "metric" else detects
        index = counters[key] = counters.get(key, -1) + 1
        kind = "reference" if info.role != "metric" else _verdict_word(detects)
        traces.append(go.Scatter(
            x=list(range(len(deltas))), y=_clean(normalised(deltas)), mode="lines+markers",
            name=f"{info.label or name} ({info.direction}) · {kind}",
            line=_style(info.role, detects, index), marker={"size": 5},
            customdata=_clean(history.scores[name]),
            hovertemplate=f"<b>{name}</b><br>step %{{x}}<br>raw score %{{customdata:.4g}}"
                          "<br>normalised Δ %{y:.2f}<extra></extra>"))
    figure = go.Figure(traces)
    figure.add_hline(y=0, line={"color": "#bbbbbb", "width": 1})
    figure.update_layout(
        title=title or None, template="plotly_white", height=460,
        margin={"l": 50, "r": 10, "t": 40 if title else 10, "b": 40},
        xaxis={"title": "step", "rangemode": "tozero"},
        yaxis={"title": "normalised Δ (negative = worse)", "range": [-1.1, 1.1]},
        legend={"orientation": "h", "y": -0.18, "font": {"size": 11}},
        hovermode="closest")
    return figure


def raw_figure(history: History) -> go.Figure:
    """Small multiples: each column's raw score against step, on its own axis."""
    names = list(history.infos)
    columns = 3
    rows = max(1, math.ceil(len(names) / columns))
    figure = make_subplots(rows=rows, cols=columns, shared_xaxes=True,
                           subplot_titles=[f"{n} ({history.infos[n].direction})" for n in names],
                           vertical_spacing=min(0.12, 0.6 / rows))
    for i, name in enumerate(names):
        info = history.infos[name]
        detects = detects_degradation(history.deltas(name))
        series = history.scores[name]
        figure.add_trace(go.Scatter(
            x=list(range(len(series))), y=_clean(series), mode="lines+markers", name=name,
            line=_style(info.role, detects, 0), showlegend=False,
            hovertemplate=f"{name}<br>step %{{x}}<br>%{{y:.4g}}<extra></extra>"),
            row=i // columns + 1, col=i % columns + 1)
    figure.update_layout(template="plotly_white", height=220 * rows,
                         margin={"l": 40, "r": 10, "t": 40, "b": 30})
    return figure
