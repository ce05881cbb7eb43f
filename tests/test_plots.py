"""Plot building is pure: a History in, a plotly figure spec out, one that plotly accepts."""

from __future__ import annotations

import json
import math

import plotly.graph_objects as go
import pytest

from banana_space.events import ScoreInfo
from banana_space.scores.catalog import parse_score_range
from banana_space.verdict.analysis import range_scaled, since_input
from banana_space.verdict.history import History
from banana_space.verdict.plots import (
    FONT_PX,
    METRIC_COLOURS,
    REFERENCE_COLOURS,
    delta_figure,
    raw_figure,
)


def chain_history() -> History:
    """PSNR falls (the truth), BRISQUE says 'better' (fooled), NIQE says 'worse' (detects).
    Frame 0 against itself is capped at 80 dB, as pyiqa writes it."""
    history = History([ScoreInfo("psnr", "fidelity", False, score_range=(0.0, 40.0)),
                       ScoreInfo("brisque", "metric", True, score_range=(0.0, 150.0)),
                       ScoreInfo("niqe", "metric", True)])
    for step in range(21):
        history.add(step, {"psnr": 80.0 if step == 0 else 40.0 - step, "brisque": 30.0 - step,
                           "niqe": math.nan if step == 7 else 5.0 + step})
    return history


def test_delta_figure_is_valid_for_plotly_and_shows_each_verdict() -> None:
    spec = delta_figure(chain_history(), "a run")
    figure = go.Figure(spec)  # raises on any property plotly does not know
    assert [t.name for t in figure.data] == [
        "psnr (higher is better) · reference", "brisque (lower is better) · fooled",
        "niqe (lower is better) · detects · own scale"]
    assert figure.data[1].line.dash == "dash" and figure.data[2].line.dash == "solid"
    # Each metric its own colour; the reference bold black, unlike any metric.
    colours = [t.line.color for t in figure.data]
    assert len(set(colours)) == 3 and colours[0] == REFERENCE_COLOURS["fidelity"][0]
    assert figure.data[0].line.width > figure.data[1].line.width
    assert figure.layout.title.text == "a run" and figure.layout.template.layout.font
    assert spec["data"][2]["y"][7] is None  # a missing score is a gap, never NaN in the JSON
    json.dumps(spec, allow_nan=False)


def test_curves_are_scaled_by_the_score_range_so_noise_stays_small() -> None:
    psnr, brisque, niqe = delta_figure(chain_history())["data"]
    # PSNR is held inside its range: the 80 dB cap of frame 0 does not make step 1 a cliff;
    # each lost dB is 1/40 of the axis, step after step.
    assert psnr["y"][:3] == [0.0, pytest.approx(-1 / 40), pytest.approx(-2 / 40)]
    assert psnr["y"][20] == pytest.approx(-20 / 40)
    # BRISQUE falling 20 points says "better" by 20/150 of its range, not by the full axis.
    assert brisque["y"][20] == pytest.approx(20 / 150)
    # NIQE has no range here: its own largest move, flagged "own scale" in its name.
    assert niqe["y"][20] == -1.0
    # Hover shows fidelity by its value in dB, never a delta from the 80 dB cap.
    assert psnr["customdata"][20][0] == "20 dB" and "dB" not in brisque["customdata"][20][0]
    # A 0.01 wobble of an 8-bit entropy is under 1% of the axis, not a full-scale swing.
    entropy = ScoreInfo("entropy", "metric", False, score_range=(0.0, 8.0))
    wobble = range_scaled(since_input([7.50, 7.51, 7.49], entropy), entropy)
    assert max(abs(v) for v in wobble) < 0.01


def test_a_chain_with_no_input_is_drawn_from_step_1_and_says_so() -> None:
    """A real chain numbered from 1 with no start has no step 0 (`runs.play_existing`:
    no scores there, and fidelity at step 1, against itself, unscored): its curves are drawn
    from step 1, every column alike, rather than left empty."""
    history = History([ScoreInfo("psnr", "fidelity", False, score_range=(0.0, 40.0)),
                       ScoreInfo("brisque", "metric", True, score_range=(0.0, 150.0))])
    for step in range(1, 6):
        history.add(step, {"psnr": math.nan if step == 1 else 40.0 - step,
                           "brisque": 30.0 - step})
    assert not history.has_input and chain_history().has_input
    spec = delta_figure(history)
    psnr, brisque = spec["data"]
    assert psnr["y"][0] is None and brisque["y"][0] is None  # no step 0 to draw
    assert psnr["y"][1] == 0.0 and psnr["y"][5] == pytest.approx(-5 / 40)  # from "identical"
    assert brisque["y"][1] == 0.0 and brisque["y"][5] == pytest.approx(4 / 150)
    assert "since step 1" in spec["layout"]["yaxis"]["title"]["text"]
    assert "Δ since step 1" in brisque["hovertemplate"]
    assert all(math.isnan(d) for d in history.since_input("brisque"))  # the files' column: none
    assert "since step 1" not in delta_figure(chain_history())["layout"]["yaxis"]["title"]["text"]


def test_our_own_measures_are_told_apart() -> None:
    history = History([ScoreInfo("grain", "metric", True, family="ours",
                                 score_range=(0.0, 1.0)),
                       ScoreInfo("piqe", "metric", True, score_range=(0.0, 100.0))])
    for step in range(3):
        history.add(step, {"grain": 0.1 * step, "piqe": 20.0})
    ours, theirs = delta_figure(history)["data"]
    assert ours["name"].startswith("grain (ours)") and "(ours)" not in theirs["name"]
    assert ours["marker"]["symbol"] != theirs["marker"]["symbol"]
    assert raw_figure(history)["layout"]["annotations"][0]["text"].startswith("grain (ours)")


def test_raw_figure_puts_each_column_on_its_own_axes_under_its_own_title() -> None:
    spec = raw_figure(chain_history())
    figure = go.Figure(spec)
    assert [(t.xaxis, t.yaxis) for t in figure.data] == [("x", "y"), ("x2", "y2"), ("x3", "y3")]
    assert [a.text for a in figure.layout.annotations] == [
        "psnr<br>higher is better", "brisque<br>lower is better", "niqe<br>lower is better"]
    assert all(a.font.size >= FONT_PX for a in figure.layout.annotations)
    assert figure.layout.title.text.startswith("Raw scores")
    # Fidelity starts at step 1: frame 0 against itself is no measurement (and no 80 dB axis).
    assert spec["data"][0]["y"][:3] == [None, 39.0, 38.0]
    assert spec["data"][1]["y"][:2] == [30.0, 29.0]
    json.dumps(spec, allow_nan=False)


def contrast_on_white(colour: str) -> float:
    """WCAG 2 contrast ratio of a #rrggbb colour against white."""
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return 1.05 / (luminance + 0.05)


def test_every_curve_colour_reads_on_white() -> None:
    """WCAG 1.4.11: a graphical object needs 3:1 against its background."""
    colours = [*METRIC_COLOURS, *(c for palette in REFERENCE_COLOURS.values() for c in palette)]
    assert {c: round(contrast_on_white(c), 2) for c in colours if contrast_on_white(c) < 3} \
        == {}
    assert contrast_on_white("#E69F00") < 3  # the check itself fails Okabe-Ito's orange


def test_text_reads_from_the_back_row_and_the_compared_frame_is_marked() -> None:
    spec = delta_figure(chain_history(), "a run", marked=7)
    figure = go.Figure(spec)
    assert figure.layout.font.size >= FONT_PX and figure.layout.legend.font.size >= FONT_PX
    assert figure.layout.title.font.size >= FONT_PX
    marks = [s for s in figure.layout.shapes if s.x0 == 7 and s.x1 == 7]
    assert len(marks) == 1 and marks[0].yref == "y domain"
    assert [a.text for a in figure.layout.annotations] == ["compared: step 7"]
    assert not [s for s in go.Figure(delta_figure(chain_history())).layout.shapes if s.x0 == 7]
    raw = go.Figure(raw_figure(chain_history(), marked=3))
    assert [(s.xref, s.x0) for s in raw.layout.shapes] == [("x", 3), ("x2", 3), ("x3", 3)]


@pytest.mark.parametrize(("text", "expected"), [
    ("0, 1", (0.0, 1.0)), ("~0, ~150", (0.0, 150.0)), ("~-1, ~0.1", (-1.0, 0.1)),
    ("0, ~", None), ("~, 2", None), ("quality: 0, 1; rank: 0, 2; rank_prob: 0, 1", None),
    (None, None)])
def test_pyiqa_score_ranges_are_read_from_its_text(text: str | None, expected: tuple | None):
    assert parse_score_range(text) == expected
