"""Plot building is pure: a History in, a plotly figure spec out, one that plotly accepts."""

from __future__ import annotations

import json
import math

import plotly.graph_objects as go

from banana_space.analysis import History
from banana_space.metrics import ScoreInfo
from banana_space.plots import delta_figure, raw_figure


def chain_history() -> History:
    """PSNR falls (the truth), BRISQUE says 'better' (fooled), NIQE says 'worse' (detects)."""
    history = History([ScoreInfo("psnr", "fidelity", False), ScoreInfo("brisque", "metric", True),
                       ScoreInfo("niqe", "metric", True)])
    for step in range(21):
        history.add(step, {"psnr": 40.0 - step, "brisque": 30.0 - step,
                           "niqe": math.nan if step == 7 else 5.0 + step})
    return history


def test_delta_figure_is_valid_for_plotly_and_shows_each_verdict() -> None:
    spec = delta_figure(chain_history(), "a run")
    figure = go.Figure(spec)  # raises on any property plotly does not know
    assert [t.name for t in figure.data] == [
        "psnr (higher is better) · reference", "brisque (lower is better) · fooled",
        "niqe (lower is better) · detects"]
    assert figure.data[1].line.dash == "dash" and figure.data[2].line.dash is None
    assert figure.layout.title.text == "a run" and figure.layout.template.layout.font
    assert spec["data"][2]["y"][7] is None  # a missing score is a gap, never NaN in the JSON
    assert spec["data"][1]["y"][20] == 1.0 and spec["data"][0]["y"][20] == -1.0
    json.dumps(spec, allow_nan=False)


def test_raw_figure_puts_each_column_on_its_own_axes() -> None:
    spec = raw_figure(chain_history())
    figure = go.Figure(spec)
    assert [(t.xaxis, t.yaxis) for t in figure.data] == [("x", "y"), ("x2", "y2"), ("x3", "y3")]
    assert [a.text for a in figure.layout.annotations] == [
        "psnr (higher is better)", "brisque (lower is better)", "niqe (lower is better)"]
    assert spec["data"][0]["y"][:2] == [40.0, 39.0]
    json.dumps(spec, allow_nan=False)
