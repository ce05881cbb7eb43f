"""Unit tests of the pure arithmetic: oriented deltas, normalisation, the paper's verdict."""

from __future__ import annotations

import math

import pytest

from banana_space.analysis import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_HEADERS,
    VERDICT_FIELDS,
    History,
    Verdict,
    VerdictRow,
    checkpoints,
    detects_degradation,
    detects_robust,
    normalised,
    oriented_deltas,
    plain_verdict,
    spearman,
    worse_after_first,
)
from banana_space.catalog import ScoreInfo

NAN = math.nan


def test_oriented_delta_flips_sign_for_lower_is_better() -> None:
    assert oriented_deltas([30.0, 35.0, 20.0], lower_better=True) == [0.0, -5.0, 10.0]
    assert oriented_deltas([30.0, 35.0, 20.0], lower_better=False) == [0.0, 5.0, -10.0]


def test_oriented_delta_has_no_negative_zero() -> None:
    assert str(oriented_deltas([3.0, 3.0], lower_better=True)[0]) == "0.0"


def test_normalised_spans_minus_one_to_one_and_keeps_nan() -> None:
    assert normalised([0.0, -2.0, 4.0, NAN]) == [0.0, -0.5, 1.0, pytest.approx(NAN, nan_ok=True)]
    assert normalised([0.0, 0.0]) == [0.0, 0.0]


@pytest.mark.parametrize(("last", "expected"), [
    (0, ()), (1, (1,)), (4, (4,)), (5, (5,)), (9, (5,)), (10, (5, 10)), (100, (5, 10, 20))])
def test_checkpoints_use_the_ones_that_exist(last: int, expected: tuple[int, ...]) -> None:
    assert checkpoints(last) == expected


def test_detects_only_when_every_checkpoint_is_negative() -> None:
    falling = [-0.1 * i for i in range(21)]
    assert detects_degradation(falling) is True
    recovers_at_20 = falling[:20] + [0.5]
    assert detects_degradation(recovers_at_20) is False


def test_nan_is_missing_never_a_pass() -> None:
    deltas = [0.0] + [-1.0] * 20
    deltas[10] = NAN
    assert detects_degradation(deltas) is None
    deltas[5] = 2.0  # a present non-negative checkpoint decides "fooled" even with a gap
    assert detects_degradation(deltas) is False


def test_metric_that_improves_while_psnr_falls_is_fooled() -> None:
    """The paper's BRISQUE case: the image degrades (PSNR falls), the score says 'better'."""
    history = History([ScoreInfo("psnr", "fidelity", False), ScoreInfo("brisque", "metric", True)])
    for step in range(21):
        history.add(step, {"psnr": 80.0 if step == 0 else 35.0 - step,
                           "brisque": 34.1 - 2.2 * step})  # lower is "better": it keeps falling
    rows = {row.metric: row for row in history.verdict()}
    assert rows["psnr"].detects is True
    assert rows["brisque"].detects is False
    assert rows["brisque"].delta_at(20) == pytest.approx(2.2 * 20)
    assert rows["brisque"].spearman_vs_psnr == pytest.approx(-1.0)


def test_spearman_ignores_missing_steps_and_needs_three_points() -> None:
    assert spearman([1, 2, 3, NAN], [1, 2, 3, 4]) == pytest.approx(1.0)
    assert math.isnan(spearman([1, 2], [2, 1]))
    assert spearman([3, 2, 1], [1, 2, 3]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1, 1], [1, 2, 3, 4]))  # a flat line has no ranking


def test_spearman_agrees_with_scipy_on_ties_and_missing_steps() -> None:
    import numpy as np
    from scipy.stats import spearmanr

    rng = np.random.default_rng(7)
    for trial in range(20):
        a = np.round(rng.normal(size=40), 1)  # rounding makes ties
        b = a * rng.choice([-1, 1]) + rng.normal(scale=trial / 10, size=40)
        a[rng.choice(40, 5)] = np.nan
        both = np.isfinite(a) & np.isfinite(b)
        expected = spearmanr(a[both], b[both]).statistic
        assert spearman(list(a), list(b)) == pytest.approx(expected, abs=1e-12)


def test_pyiqa_score_ranges_are_read_as_numbers_or_none() -> None:
    from banana_space.catalog import parse_score_range

    assert parse_score_range("0, 1") == (0.0, 1.0)
    assert parse_score_range("~0, ~100") == (0.0, 100.0)
    assert parse_score_range("~-1, ~0.1") == (-1.0, 0.1)
    for open_or_odd in ("0, ~", "~, 2", "quality: 0, 1; rank: 0, 2", "", None):
        assert parse_score_range(open_or_odd) is None


def test_detects_robust_needs_every_checkpoint_below_the_floor() -> None:
    worse = [0.0] + [-1.0] * 20
    assert detects_robust(worse, floor=0.5) is True
    assert detects_robust(worse, floor=1.0) is False  # -1 is not below -1: inside the floor
    assert detects_robust(worse, floor=None) is None  # no floor measured: undecided
    tiny = [0.0] + [-1e-13] * 20  # float noise: the paper's verdict fires, the robust one not
    assert detects_degradation(tiny) is True
    assert detects_robust(tiny, floor=1e-6) is False
    gap = [0.0] + [-1.0] * 9 + [math.nan] + [-1.0] * 10
    assert detects_robust(gap, floor=0.1) is None
    assert detects_robust([0.0], floor=0.1) is None


def first_step_history() -> History:
    """Issue 23's BRISQUE on a smooth start: one dose of static makes the first copy score far
    better (50.6 -> 28.3), then it gets worse with every copy (-> 44.4 at step 20), while PSNR
    falls throughout. The paper's other case, a score that keeps improving, beside it."""
    history = History([ScoreInfo("psnr", "fidelity", False), ScoreInfo("brisque", "metric", True),
                       ScoreInfo("piqe", "metric", True)])
    for step in range(21):
        history.add(step, {"psnr": 80.0 if step == 0 else 45.0 - step,
                           "brisque": 50.6 if step == 0 else 28.3 + 0.8 * (step - 1),
                           "piqe": 60.0 - step})
    return history


def test_a_fooled_verdict_from_the_first_step_alone_is_told_apart() -> None:
    rows = {row.metric: row for row in first_step_history().verdict()}
    brisque, piqe = rows["brisque"], rows["piqe"]
    assert brisque.detects is False and brisque.worse_after_first is True
    assert brisque.fooled_by_first_step
    assert brisque.spearman_from_first == pytest.approx(1.0)
    assert piqe.detects is False and piqe.worse_after_first is False
    assert not piqe.fooled_by_first_step and piqe.spearman_from_first == pytest.approx(-1.0)


def test_worse_after_first_needs_a_checkpoint_after_the_first_copy() -> None:
    assert worse_after_first([0.0, 5.0]) is None  # only the first copy so far
    assert worse_after_first([0.0, 5.0, 4.0, 3.0]) is True  # step 3 stands in for step 5
    assert worse_after_first([0.0, math.nan, 4.0, 3.0]) is None
    assert worse_after_first([0.0, 5.0] + [6.0] * 19) is False


def test_a_verdict_owns_every_word_each_surface_writes() -> None:
    assert [plain_verdict(v) for v in (True, False, None)] == ["yes", "no", "undecided"]
    assert [Verdict(v).words.terse for v in (True, False, None)] == ["yes", "no", "?"]
    assert [Verdict(v).on_page() for v in (True, False, None)] == [
        "✅ detects", "❌ fooled", "… undecided"]
    # Early in a run a decided verdict is provisional; "undecided" needs no "so far".
    assert [Verdict(v).on_page(provisional=True, robust=True) for v in (True, False, None)] == [
        "✅ detects so far", "❌ no so far", "…"]


def test_checkpoint_columns_come_from_the_checkpoints() -> None:
    assert CHECKPOINT_FIELDS == ("delta_5", "delta_10", "delta_20")
    assert CHECKPOINT_HEADERS == ("Δ5", "Δ10", "Δ20")
    row = VerdictRow("niqe", "metric", (-1.0, -2.0, math.nan), False, 0.5)
    assert row.checkpoint_fields()["delta_10"] == -2.0 and row.delta_at(5) == -1.0
    assert row.record()[:5] == ["niqe", -1.0, -2.0, row.at_checkpoints[2], "no"]
    assert len(row.record()) == len(VERDICT_FIELDS)
