"""A comparison's figure, as a pure function (a plotly JSON dict, as `verdict.plots` makes
them): `pair_figure`, one small chart per score, both runs' curves on it, A solid and B dashed
in the score's one colour (`plots.METRIC_COLOURS`; the references black and grey), each the
range-scaled change since the input that the run's own chart draws (`plots.scaled_curve`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..verdict.history import History
from ..verdict.plots import (
    FONT_PX,
    METRIC_COLOURS,
    REFERENCE_COLOURS,
    Figure,
    _grid_layout,
    _marker_line,
    display_name,
    scaled_curve,
)

SIDE_DASHES = {"A": "solid", "B": "dash"}
LEGEND_PER_LINE = 6  # legend entries a line holds at the narrowest width the tab is drawn
PAIR_TITLE = "Change vs the input, one chart per score: A solid, B dashed (below 0 = worse)"


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
                "legendgroup": side,
                "line": {"color": colour, "width": 3, "dash": SIDE_DASHES[side]},
                "marker": {"size": 5}, "xaxis": f"x{axis}", "yaxis": f"y{axis}",
                "hovertemplate": f"{side} · {name}<br>step %{{x}}<br>%{{y:.0%}} of its range"
                                 "<extra></extra>"})
    layout = dict(_grid_layout(titles, 2))
    layout["title"] = {"text": PAIR_TITLE, "font": {"size": FONT_PX + 2}, "x": 0.01}
    layout["margin"] = {**layout["margin"], "t": 90}
    # Every curve in the legend, by side (A's scores, then B's): each panel's title names
    # its score, the legend which line is which side.
    layout["legend"] = {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1,
                        "xanchor": "right", "font": {"size": FONT_PX - 2}}
    layout["margin"]["t"] = 90 + 22 * math.ceil(len(traces) / LEGEND_PER_LINE)
    # Each panel's axis in % of its score's range, as the Run tab's curves.
    for key in [key for key in layout if key.startswith("yaxis")]:
        layout[key] = {**layout[key], "tickformat": ".0%"}
    last = max(h.last_step for h in sides.values())
    if marked is not None and 0 <= marked <= last:
        layout["shapes"] = [_marker_line(marked, "" if i == 0 else str(i + 1))
                            for i in range(len(names))]
    return {"data": traces, "layout": layout}
