"""A comparison's figures, as pure functions (plotly JSON dicts, as `plots` makes them).

`pair_figure`: one small chart per score, both runs' curves on it, A solid and B dashed in the
score's one colour (`plots.METRIC_COLOURS`; the references black and grey), each the
range-scaled change since the input that the run's own chart draws (`plots.scaled_curve`).
`mscn_figure` and `alpha_figure`: the "Why is it fooled?" panel (`why.py`): the MSCN
histograms of the input, step 1 and step i against their fitted generalised Gaussians, and the
fitted shape α per step on both sides.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..verdict.history import History
from ..verdict.plots import (
    FONT_PX,
    METRIC_COLOURS,
    REFERENCE_COLOURS,
    TEMPLATE,
    Figure,
    _grid_layout,
    _marker_line,
    display_name,
    scaled_curve,
)
from .why import GAUSSIAN_ALPHA, NssReading, bin_centres, ggd_density

SIDE_DASHES = {"A": "solid", "B": "dash"}
PAIR_TITLE = "Change vs the input, one chart per score: A solid, B dashed (below 0 = worse)"
# The three frames of the MSCN panel, each its own colour (Okabe-Ito).
FRAME_COLOURS = ("#000000", "#0072B2", "#D55E00", "#009E73")
# The density axis (log10): the histogram's rarest bins (one coefficient in ~a million) and
# the top of a unit-variance density; the fitted curve's tails below it are not drawn off-scale.
DENSITY_RANGE = [-5, 0.3]


def _colour(history: History, name: str, index: dict[str, int]) -> str:
    """One colour per score: the references' black and greys, a metric's palette colour."""
    role = history.infos[name].role
    order = index.setdefault(role, -1) + 1
    index[role] = order
    palette = REFERENCE_COLOURS.get(role, METRIC_COLOURS)
    return palette[order % len(palette)]


def _clean(values: Sequence[float]) -> list[float | None]:
    return [v if math.isfinite(v) else None for v in values]


def pair_figure(a: History, b: History | None, marked: int | None = None) -> Figure:
    """Small multiples, one per score of A (and B's others after): A's curve solid, B's dashed,
    one colour per score; a vertical line at step `marked` on each, if given."""
    sides = {"A": a, **({"B": b} if b is not None else {})}
    names = list(dict.fromkeys([*a.infos, *(b.infos if b is not None else [])]))
    owner = {name: a if name in a.infos else b for name in names}
    titles = tuple(display_name(owner[n].infos[n]) for n in names)
    index: dict[str, int] = {}
    traces = []
    for i, name in enumerate(names):
        colour = _colour(owner[name], name, index)
        axis = "" if i == 0 else str(i + 1)
        for side, history in sides.items():
            if name not in history.infos:
                continue
            curve, _ = scaled_curve(history, name)
            traces.append({
                "type": "scatter", "x": list(range(len(curve))), "y": _clean(curve),
                "mode": "lines+markers", "connectgaps": True, "name": f"{side} · {name}",
                "legendgroup": side, "showlegend": i == 0,
                "line": {"color": colour, "width": 3, "dash": SIDE_DASHES[side]},
                "marker": {"size": 5}, "xaxis": f"x{axis}", "yaxis": f"y{axis}",
                "hovertemplate": f"{side} · {name}<br>step %{{x}}<br>%{{y:.0%}} of its range"
                                 "<extra></extra>"})
    layout = dict(_grid_layout(titles, 2))
    layout["title"] = {"text": PAIR_TITLE, "font": {"size": FONT_PX + 2}, "x": 0.01}
    layout["margin"] = {**layout["margin"], "t": 90}
    layout["legend"] = {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1,
                        "xanchor": "right", "font": {"size": FONT_PX}}
    last = max(h.last_step for h in sides.values())
    if marked is not None and 0 <= marked <= last:
        layout["shapes"] = [_marker_line(marked, "" if i == 0 else str(i + 1))
                            for i in range(len(names))]
    return {"data": traces, "layout": layout}


def mscn_figure(readings: Mapping[str, NssReading], title: str) -> Figure:
    """Each labelled frame's MSCN histogram (its density, markers) and the generalised
    Gaussian fitted to it (a line of the same colour), on a log axis, where the tails that
    the shape α describes can be seen."""
    x = bin_centres()
    traces = []
    for (label, reading), colour in zip(readings.items(), FRAME_COLOURS, strict=False):
        traces.append({"type": "scatter", "x": x.tolist(), "y": list(reading.density),
                       "mode": "markers", "name": f"{label}: histogram",
                       "marker": {"color": colour, "size": 6}})
        fitted = ggd_density(x, reading.alpha, reading.variance)
        traces.append({"type": "scatter", "x": x.tolist(), "y": fitted.tolist(),
                       "mode": "lines", "name": f"{label}: fitted GGD, α {reading.alpha:.2f}",
                       "line": {"color": colour, "width": 2}})
    layout = {"template": TEMPLATE, "font": {"size": FONT_PX}, "height": 360,
              "title": {"text": title, "font": {"size": FONT_PX + 1}, "x": 0.01},
              "xaxis": {"title": {"text": "MSCN coefficient"}},
              "yaxis": {"title": {"text": "density"}, "type": "log", "range": DENSITY_RANGE},
              "legend": {"orientation": "h", "y": -0.25},
              "margin": {"l": 64, "r": 10, "t": 50, "b": 40}}
    return {"data": traces, "layout": layout}


def alpha_figure(alphas: Mapping[str, Sequence[float]], marked: int | None = None) -> Figure:
    """The fitted shape α per step on each side (A solid, B dashed), with the Gaussian's
    α = 2 as a grey line."""
    traces = [{"type": "scatter", "x": list(range(len(values))), "y": _clean(values),
               "mode": "lines+markers", "name": f"{side}: α",
               "line": {"color": "#0072B2", "width": 3, "dash": SIDE_DASHES[side]}}
              for side, values in alphas.items()]
    shapes = [{"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y",
               "y0": GAUSSIAN_ALPHA, "y1": GAUSSIAN_ALPHA,
               "line": {"color": "#6b6b6b", "width": 1, "dash": "dot"}}]
    if marked is not None:
        shapes.append(_marker_line(marked))
    layout = {"template": TEMPLATE, "font": {"size": FONT_PX}, "height": 260, "shapes": shapes,
              "title": {"text": "Fitted shape α per step (2 = Gaussian)",
                        "font": {"size": FONT_PX + 1}, "x": 0.01},
              "xaxis": {"title": {"text": "step"}, "dtick": 1},
              "yaxis": {"title": {"text": "α"}},
              "margin": {"l": 64, "r": 10, "t": 50, "b": 40}}
    return {"data": traces, "layout": layout}
