"""The "Why is it fooled?" panel's figures, as pure functions (plotly JSON dicts, as
`verdict.plots` makes them): `mscn_figure`, the MSCN histograms of the input, step 1 and step i
against their fitted generalised Gaussians (`why.read_frame`), and `contribution_figure`, each
decomposed score's change from step 1 to step i split over its model's feature groups (ours:
Shapley values that add up to the change, `shapley.py`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..scores.catalog import metric_info
from ..verdict.plots import FONT_PX, MARK_COLOUR, TEMPLATE, Figure
from .shapley import FEATURE_GROUPS, Decomposition
from .why import Explanation, NssReading, bin_centres, ggd_density

SIDE_COLOURS = {"A": "#0072B2", "B": "#E69F00"}  # Okabe-Ito blue and orange
SUM_LABEL = "sum: the change"
X_TITLE = "score units (ours)"
BARS_TITLE = ("What moved each score from step 1 to step {step}<br><sup>our split over its "
              "model's feature groups: the bars add up to the hatched sum</sup>")
# The three frames of the MSCN panel, each its own colour (Okabe-Ito).
FRAME_COLOURS = ("#000000", "#0072B2", "#D55E00", "#009E73")
# The density axis (log10): the histogram's rarest bins (one coefficient in ~a million) and
# the top of a unit-variance density; the fitted curve's tails below it are not drawn off-scale.
DENSITY_RANGE = [-5, 0.3]


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
    # The legend sits at the foot of the figure, in pixels, under the axis's title however
    # the page sizes the plot.
    layout = {"template": TEMPLATE, "font": {"size": FONT_PX}, "height": 460,
              "title": {"text": title, "font": {"size": FONT_PX + 1}, "x": 0.01},
              "xaxis": {"title": {"text": "MSCN coefficient"}},
              "yaxis": {"title": {"text": "density"}, "type": "log", "range": DENSITY_RANGE},
              "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
              "margin": {"l": 64, "r": 10, "t": 50, "b": 160, "autoexpand": False}}
    return {"data": traces, "layout": layout}


def contribution_figure(explained: Mapping[str, Mapping[str, Explanation | str]],
                        step: int) -> Figure | None:
    """One horizontal bar chart per decomposed score (`why.explain_sides`), one above the
    other: each feature group's share of the change from step 1 to `step`, in the score's
    units, A and B side by side, and their sum, hatched, which is the change itself. None when
    nothing was decomposed."""
    metrics = list(dict.fromkeys(metric for items in explained.values()
                                 for metric, item in items.items()
                                 if isinstance(item, Explanation)))
    if not metrics:
        return None
    from plotly.subplots import make_subplots

    titles = [f"{metric} ({metric_info(metric).direction})" for metric in metrics]
    grid = make_subplots(rows=len(metrics), cols=1, subplot_titles=titles,
                         vertical_spacing=0.3 / len(metrics))
    grid.update_annotations(font={"size": FONT_PX})
    layout = grid.to_plotly_json()["layout"]
    traces = []
    for row, metric in enumerate(metrics):
        axis = "" if row == 0 else str(row + 1)
        traces += [_bars(side, metric, items[metric].decomposition, axis, first=row == 0)
                   for side, items in explained.items()
                   if isinstance(items.get(metric), Explanation)]
        layout[f"xaxis{axis}"] = {**layout[f"xaxis{axis}"], "zeroline": True,
                                  "zerolinecolor": MARK_COLOUR}
        layout[f"yaxis{axis}"] = {**layout[f"yaxis{axis}"], "autorange": "reversed"}
    layout[f"xaxis{len(metrics) if len(metrics) > 1 else ''}"]["title"] = {"text": X_TITLE}
    layout.update({
        "template": TEMPLATE, "font": {"size": FONT_PX}, "barmode": "group",
        "height": 110 + 260 * len(metrics),
        "title": {"text": BARS_TITLE.format(step=step), "font": {"size": FONT_PX + 1},
                  "x": 0.01},
        "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1,
                   "xanchor": "right"},
        "margin": {"l": 190, "r": 10, "t": 90, "b": 50}})
    return {"data": traces, "layout": layout}


def _bars(side: str, metric: str, decomposition: Decomposition, axis: str,
          first: bool) -> dict:
    """One side's bars for one score: a bar per group, then the hatched sum."""
    return {"type": "bar", "orientation": "h", "y": [*FEATURE_GROUPS, SUM_LABEL],
            "x": [*decomposition.contributions.values(), decomposition.delta],
            "name": side, "meta": metric, "legendgroup": side, "showlegend": first,
            "xaxis": f"x{axis}", "yaxis": f"y{axis}",
            "marker": {"color": SIDE_COLOURS[side],
                       "pattern": {"shape": [""] * len(FEATURE_GROUPS) + ["/"],
                                   "fillmode": "overlay", "fgcolor": "#ffffff"}},
            "hovertemplate": f"{side} · {metric}<br>%{{y}}: %{{x:+.3g}}<extra></extra>"}
