"""Unit tests of the pure arithmetic: oriented deltas from step 1 (the paper's base) and from the
input, normalisation, the paper's verdict and ours."""

from __future__ import annotations

import math

import pytest

from banana_space.events import ScoreInfo
from banana_space.verdict.analysis import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_HEADERS,
    PAPER_TEST,
    Verdict,
    beyond_floor,
    checkpoints,
    detects_degradation,
    fewer_checkpoints,
    normalised,
    oriented_deltas,
    paper_test,
    provisional,
    spearman,
    undecided_because,
)
from banana_space.verdict.columns import VERDICT_FIELDS, api_cells, file_cells
from banana_space.verdict.history import History, VerdictRow

NAN = math.nan


def test_oriented_delta_flips_sign_for_lower_is_better() -> None:
    assert oriented_deltas([30.0, 35.0, 20.0], lower_better=True, base=0) == [0.0, -5.0, 10.0]
    assert oriented_deltas([30.0, 35.0, 20.0], lower_better=False, base=0) == [0.0, 5.0, -10.0]


def test_the_papers_delta_is_from_step_1_and_the_input_is_not_on_its_chain() -> None:
    deltas = oriented_deltas([30.0, 35.0, 20.0], lower_better=False)
    assert math.isnan(deltas[0]) and deltas[1:] == [0.0, -15.0]
    assert all(math.isnan(d) for d in oriented_deltas([30.0], lower_better=False))  # no step 1
    assert all(math.isnan(d) for d in oriented_deltas([30.0, NAN, 2.0], lower_better=False))


def test_oriented_delta_has_no_negative_zero() -> None:
    assert str(oriented_deltas([3.0, 3.0], lower_better=True, base=0)[1]) == "0.0"
    assert str(oriented_deltas([1.0, 3.0, 3.0], lower_better=True)[2]) == "0.0"


def test_normalised_spans_minus_one_to_one_and_keeps_nan() -> None:
    assert normalised([0.0, -2.0, 4.0, NAN]) == [0.0, -0.5, 1.0, pytest.approx(NAN, nan_ok=True)]
    assert normalised([0.0, 0.0]) == [0.0, 0.0]


@pytest.mark.parametrize(("last", "expected"), [
    (0, ()), (1, ()), (2, (2,)), (4, (4,)), (5, (5,)), (9, (5,)), (10, (5, 10)),
    (100, (5, 10, 20))])
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


def test_why_a_verdict_is_undecided_is_said() -> None:
    assert undecided_because(oriented_deltas([3.0], False)).startswith("no step 1 yet")
    assert undecided_because(oriented_deltas([3.0, NAN, 2.0, 1.0], False)).startswith(
        "no score at step 1")
    assert undecided_because(oriented_deltas([3.0, 2.0], False)) == \
        "no step after the first copy yet"
    gap = oriented_deltas([3.0, 2.0, 1.0, 1.0, 1.0, NAN], False)
    assert detects_degradation(gap) is None and undecided_because(gap) == "no score at step 5"
    assert undecided_because(oriented_deltas([3.0, 2.0, 1.0], False)) == ""


def known_answer_history() -> History:
    """The issue's known answers: BRISQUE (lower is better) jumps at step 1 and improves after,
    NIQE (lower is better) gets worse with every copy; PSNR falls 49.4 -> 40.0 -> 33.7 dB at
    steps 1, 5 and 20, a smooth start's blur control."""
    history = History([ScoreInfo("psnr", "fidelity", False, score_range=(0.0, 40.0)),
                       ScoreInfo("brisque", "metric", True), ScoreInfo("niqe", "metric", True)])
    psnr = {0: 80.0, 1: 49.4, 5: 40.0, 10: 37.0, 20: 33.7}
    for step in range(21):
        history.add(step, {"psnr": psnr.get(step, math.nan),
                           "brisque": 20.0 if step == 0 else 50.0 - 0.5 * step,
                           "niqe": 3.0 + 0.1 * step})
    return history


def test_the_known_answers_under_the_papers_base() -> None:
    rows = {row.metric: row for row in known_answer_history().verdict()}
    # Falls at step 1, rises after: fooled, though worse than the input at every checkpoint.
    assert rows["brisque"].detects is False and rows["brisque"].worse_than_input is True
    assert rows["brisque"].delta_at(5) == pytest.approx(2.0)
    assert rows["brisque"].delta_since_input == pytest.approx(-20.0)
    assert rows["brisque"].input_contrast.startswith("step 1 scored worse than the input")
    # Keeps falling: detects, and no other story since the input.
    assert rows["niqe"].detects is True and rows["niqe"].worse_than_input is True
    assert rows["niqe"].input_contrast == ""
    # The reference from step 1 has no cap to clip: 40.0 - 49.4 at step 5.
    assert rows["psnr"].detects is True
    assert [rows["psnr"].delta_at(s) for s in (5, 10, 20)] == pytest.approx([-9.4, -12.4, -15.7])
    assert rows["psnr"].worse_than_input is None  # the input against itself is no measurement


def test_a_chain_without_a_step_1_says_why_it_has_no_verdict() -> None:
    history = History([ScoreInfo("niqe", "metric", True)])
    for step in (0, 2, 5, 10, 20):  # sampled, step 1 not among them
        history.add(step, {"niqe": 3.0 + step})
    row = history.verdict()[0]
    assert row.detects is None and row.detects_robust is None
    assert row.undecided_because.startswith("no score at step 1")
    assert row.worse_than_input is True  # the change since the input can still be read
    assert Verdict(row.detects).words.plain == "undecided"


def test_metric_that_improves_while_psnr_falls_is_fooled() -> None:
    """The paper's BRISQUE case: the image degrades (PSNR falls), the score says 'better'."""
    history = History([ScoreInfo("psnr", "fidelity", False), ScoreInfo("brisque", "metric", True)])
    for step in range(21):
        history.add(step, {"psnr": 80.0 if step == 0 else 35.0 - step,
                           "brisque": 34.1 - 2.2 * step})  # lower is "better": it keeps falling
    rows = {row.metric: row for row in history.verdict()}
    assert rows["psnr"].detects is True
    assert rows["brisque"].detects is False
    assert rows["brisque"].delta_at(20) == pytest.approx(2.2 * 19)
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
    from banana_space.scores.catalog import parse_score_range

    assert parse_score_range("0, 1") == (0.0, 1.0)
    assert parse_score_range("~0, ~100") == (0.0, 100.0)
    assert parse_score_range("~-1, ~0.1") == (-1.0, 0.1)
    for open_or_odd in ("0, ~", "~, 2", "quality: 0, 1; rank: 0, 2", "", None):
        assert parse_score_range(open_or_odd) is None


def test_detects_robust_needs_every_checkpoint_below_the_floor() -> None:
    worse = [NAN, 0.0] + [-1.0] * 19
    assert detects_degradation(worse, floor=0.5) is True
    assert detects_degradation(worse, floor=1.0) is False  # -1 is not below -1: inside the floor
    assert detects_degradation(worse, floor=None) is None  # no floor measured: undecided
    tiny = [NAN, 0.0] + [-1e-13] * 19  # float noise: the paper's verdict fires, the robust one not
    assert detects_degradation(tiny) is True
    assert detects_degradation(tiny, floor=1e-6) is False
    gap = [NAN, 0.0] + [-1.0] * 8 + [math.nan] + [-1.0] * 10
    assert detects_degradation(gap, floor=0.1) is None
    assert detects_degradation([NAN, 0.0], floor=0.1) is None


def first_step_history() -> History:
    """Issue 23's BRISQUE on a smooth start: one dose of static makes the first copy score far
    better (50.6 -> 28.3), then it gets worse with every copy (-> 43.5 at step 20), while PSNR
    falls throughout. The paper's other case, a score that keeps improving, beside it."""
    history = History([ScoreInfo("psnr", "fidelity", False), ScoreInfo("brisque", "metric", True),
                       ScoreInfo("piqe", "metric", True)])
    for step in range(21):
        history.add(step, {"psnr": 80.0 if step == 0 else 45.0 - step,
                           "brisque": 50.6 if step == 0 else 28.3 + 0.8 * (step - 1),
                           "piqe": 60.0 - step})
    return history


def test_a_score_better_at_step_1_than_the_input_then_worse_detects_and_says_so() -> None:
    rows = {row.metric: row for row in first_step_history().verdict()}
    brisque, piqe = rows["brisque"], rows["piqe"]
    assert brisque.detects is True and brisque.worse_than_input is False
    assert brisque.input_contrast.startswith("step 1 scored better than the input")
    assert brisque.spearman_from_first == pytest.approx(1.0)
    assert piqe.detects is False and piqe.worse_than_input is False
    assert piqe.input_contrast == "" and piqe.spearman_from_first == pytest.approx(-1.0)


def test_a_verdict_owns_every_word_each_surface_writes() -> None:
    assert [Verdict(v).words.plain for v in (True, False, None)] == ["yes", "no", "undecided"]
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
    assert api_cells(row)["delta_10"] == -2.0 and row.delta_at(5) == -1.0
    assert file_cells(row)[:5] == ["niqe", -1.0, -2.0, row.at_checkpoints[2], "no"]
    assert len(file_cells(row)) == len(VERDICT_FIELDS)
    assert (dict(zip(VERDICT_FIELDS, file_cells(row), strict=True))["worse_than_input"]
            == "undecided")


def test_beyond_floor_is_the_rule_every_verdict_applies() -> None:
    assert beyond_floor(-1.0, 0.5) is True
    assert beyond_floor(-1.0, 1.0) is False  # -1 is not below -1
    assert beyond_floor(-1e-13, 0.0) is True  # the paper's test: any negative Δ
    assert beyond_floor(math.nan, 0.1) is None


def test_a_verdict_names_the_checkpoints_it_was_read_at() -> None:
    assert paper_test() == PAPER_TEST == \
        "the paper's test (Δ from step 1 < 0 at steps 5, 10 and 20)"
    assert paper_test((5,)).startswith("the paper's test at step 5 only (Δ from step 1 < 0 ")
    assert "10" not in paper_test((5,)) and "20" not in paper_test((5,))
    assert paper_test((5, 10)).startswith("the paper's test at steps 5 and 10 only")
    assert [fewer_checkpoints(u) for u in ((), (3,), (5, 10), (5, 10, 20))] == [
        "", "at step 3 only", "at steps 5 and 10 only", ""]
    # A 9-step chain: every row, fidelity too, was read at step 5 alone, and verdict.csv says so.
    made = History([ScoreInfo("psnr", "fidelity", False), ScoreInfo("niqe", "metric", True)])
    for step in range(10):
        made.add(step, {"psnr": 40.0 - step, "niqe": 5.0 + step})
    for row in made.verdict():
        assert row.checkpoints_used == (5,)
        assert dict(zip(VERDICT_FIELDS, file_cells(row), strict=True))["checkpoints_used"] == "5"
    assert VERDICT_FIELDS.index("checkpoints_used") == VERDICT_FIELDS.index("detects_robust") + 1


def test_only_a_run_that_goes_on_towards_a_checkpoint_is_provisional() -> None:
    assert provisional(6, 20, running=True)  # steps 10 and 20 are ahead
    assert not provisional(6, 20, running=False)  # stopped at 6: final, read at step 5
    assert not provisional(7, 9, running=True)  # a 9-step run has read its last checkpoint
    assert provisional(4, 9, running=True)  # step 5 is ahead
    assert not provisional(20, 20, running=False)
    # Final verdicts read at fewer checkpoints say which; provisional ones say "so far".
    assert Verdict(True).on_page(used=(5,)) == "✅ detects (at step 5 only)"
    assert Verdict(False).on_page(provisional=True, used=(5,)) == "❌ fooled so far"
    assert Verdict(None).on_page(used=(5,)) == "… undecided"
