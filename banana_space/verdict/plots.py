"""History -> plotly figure, as pure functions.

One shared axis: each curve is its oriented delta against the input (negative = worse) as a
share of the score's nominal range (pyiqa's `score_range`; judges 1-5), so a metric moving
within its noise stays near 0 and PSNR losing 20 of its ~40 dB drops half the scale. Fidelity
is held inside its range first (frame 0 against itself is capped at 80 dB by pyiqa), so its
curve falls as the damage piles up, not at step 1. A score with no range falls back to its own
largest |delta| so far and says so in the legend ("own scale"). The references (fidelity to
the input, VLM judges) are drawn bold, black and dark grey, each its own dash; every metric has
its own colour from the Okabe-Ito palette (colour-blind safe; Wong, Nature Methods 8:441, 2011),
extended by Paul Tol's muted scheme, and its verdict (the paper's test: Δ from step 1, not the
plotted change since the input) is the line's dash: detects solid, fooled dashed, undecided
dotted. Our own measures (family "ours") carry "(ours)" and diamond markers.
Every line reads at >= 3:1 on white (WCAG 1.4.11, graphical objects); text is at least 14 px,
to be read from the back of a lecture hall. A vertical line marks the frame being compared.
Hover shows the score itself (fidelity in its unit: dB, SSIM 0-1) and its change since
the input. A run with no input (a real chain numbered from 1 with no start) draws every curve
from step 1 instead, and says so (`History.drawn`).

A figure is a plain dict in plotly's JSON figure format, not a `go.Figure`: the app redraws it
after every frame, and at 25 curves x 100 steps plotly's validation of a `go.Figure` costs about
ten times what building the dict and its JSON does (bench/streaming.py). `go.Figure(spec)`
validates a spec and gives the object back.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..events import ScoreInfo
from .analysis import Verdict, detects_degradation, normalised, range_scaled
from .history import History

Figure = dict[str, Any]  # {"data": [trace, ...], "layout": {...}}, as plotly.js takes it

TEMPLATE = "plotly_white"
DELTA_TITLE = "Change vs the input (below 0 = worse)"
RAW_TITLE = "Raw scores, one chart per score (as each metric reports it)"
# PSNR black and solid, SSIM grey and dashed (their curves often lie on each other), judges
# a darker grey.
REFERENCE_COLOURS = {"fidelity": ["#000000", "#6b6b6b"], "judge": ["#404040", "#595959"]}
REFERENCE_DASHES = ["solid", "dash", "dashdot"]
# Okabe-Ito without its black (the references'), yellow and the two light ones (under 3:1 on
# white), then Tol's muted olive, indigo and wine.
METRIC_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#999933", "#332288", "#882255"]
VERDICT_DASHES = {True: "solid", False: "dash", None: "dot"}
FONT_PX = 14  # the smallest text on the chart: legend, ticks and axis titles
SHORT_RUN = 6  # steps: a tick at every step; plotly might pick half steps on so short an axis
MAX_STEP_TICKS = 8
MARK_COLOUR = "#374151"
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
    change = history.drawn(name)
    on_range = range_scaled(change, history.infos[name])
    return (on_range, True) if on_range is not None else (normalised(change), False)


def _style(role: str, detects: bool | None, index: int) -> dict:
    """Line colour, width and dash: references bold in black or grey, each its own dash; a
    metric in its own colour (by its place among the metrics), dashed by its verdict."""
    if role in REFERENCE_COLOURS:
        colours = REFERENCE_COLOURS[role]
        return {"color": colours[index % len(colours)], "width": 5 if index == 0 else 4,
                "dash": REFERENCE_DASHES[index % len(REFERENCE_DASHES)]}
    return {"color": METRIC_COLOURS[index % len(METRIC_COLOURS)], "width": 3,
            "dash": VERDICT_DASHES[detects]}


def _marker_line(step: int, axis: str = "") -> dict:
    """The vertical line at the compared frame, on the axes named by `axis` ("", "2", …)."""
    return {"type": "line", "xref": f"x{axis}", "x0": step, "x1": step,
            "yref": f"y{axis} domain", "y0": 0, "y1": 1,
            "line": {"color": MARK_COLOUR, "width": 2, "dash": "dot"}}


def _marker_label(step: int) -> dict:
    return {"xref": "x", "x": step, "yref": "paper", "y": 1, "yanchor": "bottom",
            "text": f"compared: step {step}", "showarrow": False,
            "font": {"size": FONT_PX, "color": MARK_COLOUR}}


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


def plot_page(history: History, title: str, also: Sequence[dict[str, Any]] = ()) -> str:
    """`delta_figure` (with the traces `also`) as a whole HTML page titled `title` that opens
    in any browser, offline (plotly's JavaScript is inside): a run's zip keeps it as
    plot.html."""
    from plotly.io import to_html

    return to_html(delta_figure(history, title=f"{title}: {DELTA_TITLE}", also=also),
                   include_plotlyjs=True, full_html=True).replace(
        "<head>", f"<head><title>{html.escape(title)}</title>", 1)


def delta_figure(history: History, title: str = DELTA_TITLE,
                 marked: int | None = None, also: Sequence[dict[str, Any]] = ()) -> Figure:
    """Every column's range-scaled change since the input against step, dashed by the paper's
    verdict (Δ from step 1); references first and bold; a vertical line at step `marked` (the
    compared frame), if given; then the traces `also` on the same axis (the room's votes,
    `votes.plot`)."""
    traces = []
    counters: dict[str, int] = {}
    extent = MIN_HALF_RANGE
    for name, info in history.infos.items():
        deltas = history.drawn(name)
        detects = detects_degradation(history.deltas(name))
        index = counters[info.role] = counters.get(info.role, -1) + 1
        kind = "reference" if info.role != "metric" else Verdict(detects).words.word
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
                             f"score %{{customdata[0]}} (Δ since {history.drawn_from} "
                             "%{customdata[1]})"
                             f"<br>{'share of its range' if on_range else 'own scale'} "
                             "%{y:.0%}<extra></extra>"})
    for trace in also:
        traces.append(dict(trace))
        extent = max([extent, *(abs(v) for v in trace["y"] if v is not None)])
    half = round(extent * 1.1, 3)
    shown = marked is not None and 0 <= marked <= history.last_step
    layout = {
        "template": _template(), "font": {"size": FONT_PX},
        "shapes": [ZERO_LINE, *([_marker_line(marked)] if shown else [])],
        "annotations": [_marker_label(marked)] if shown else [],
        "title": {"text": title, "font": {"size": FONT_PX + 2}, "x": 0.01} if title else {},
        "height": 440, "margin": {"l": 64, "r": 10, "t": 56 if title else 26, "b": 40},
        # Whole steps only: one a tick on a short run; else at most 8 ticks, upright, which
        # plotly spaces by the width it draws at (a phone's too: tilted labels ran into the
        # legend there).
        "xaxis": {"title": {"text": "step"}, "rangemode": "tozero", "tick0": 0,
                  "tickangle": 0, **({"dtick": 1} if history.last_step <= SHORT_RUN
                                     else {"nticks": MAX_STEP_TICKS})},
        "yaxis": {"title": {"text": ("Δ" if history.has_input else "Δ since step 1 (no input)")
                            + ", share of the score's range"}, "range": [-half, half],
                  "tickformat": ".0%"},
        # Under the chart, wherever its tick labels end: plotly makes room for a legend placed
        # in the figure (its container) but not for one placed against the axes.
        "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom",
                   "font": {"size": FONT_PX}},
        "hovermode": "closest"}
    return {"data": traces, "layout": layout}


@lru_cache(maxsize=8)
def _grid_layout(titles: tuple[str, ...], columns: int) -> dict:
    """The small multiples' axes and titles: plotly's make_subplots, once per set of columns."""
    from plotly.subplots import make_subplots

    rows = max(1, math.ceil(len(titles) / columns))
    grid = make_subplots(rows=rows, cols=columns, shared_xaxes=True, subplot_titles=titles,
                         vertical_spacing=min(0.12, 0.6 / rows))
    grid.update_layout(template=TEMPLATE, height=240 * rows, font={"size": FONT_PX},
                       margin={"l": 56, "r": 10, "t": 40, "b": 30})
    grid.update_annotations(font={"size": FONT_PX})  # the subplot titles
    return grid.to_plotly_json()["layout"]


def raw_figure(history: History, marked: int | None = None) -> Figure:
    """Small multiples: each column's raw score against step, on its own axis; a vertical
    line at step `marked` on each, if given."""
    names = list(history.infos)
    # Two lines each, so that neighbouring titles never run into each other on a phone.
    titles = tuple(f"{display_name(history.infos[n])}<br>{history.infos[n].direction}"
                   for n in names)
    traces = []
    counters: dict[str, int] = {}
    for i, name in enumerate(names):
        info = history.infos[name]
        detects = detects_degradation(history.deltas(name))
        index = counters[info.role] = counters.get(info.role, -1) + 1
        # Fidelity at step 0 is the input against itself: no measurement (pyiqa writes PSNR's
        # infinity as 80 dB, which would stretch its axis far above every real frame).
        series = history.scores[name]
        if info.role == "fidelity":
            series = [math.nan] * min(1, len(series)) + series[1:]
        axis = "" if i == 0 else str(i + 1)
        traces.append({
            "type": "scatter", "x": list(range(len(series))), "y": _clean(series),
            "mode": _mode(info, series), "connectgaps": True, "name": name,
            "line": _style(info.role, detects, index),
            "showlegend": False, "xaxis": f"x{axis}", "yaxis": f"y{axis}",
            "hovertemplate": f"{name}<br>step %{{x}}<br>%{{y:.4g}}{UNITS.get(name, '')}"
                             "<extra></extra>"})
    layout = dict(_grid_layout(titles, 2))
    layout["title"] = {"text": RAW_TITLE, "font": {"size": FONT_PX + 2}, "x": 0.01}
    layout["margin"] = {**layout["margin"], "t": 90}
    if marked is not None and 0 <= marked <= history.last_step:
        layout["shapes"] = [_marker_line(marked, "" if i == 0 else str(i + 1))
                            for i in range(len(names))]
    return {"data": traces, "layout": layout}
