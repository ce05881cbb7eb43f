"""The screen adapter and the magnifier are pure: known histories and images in, known words,
rows and crops out."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
from PIL import Image

from banana_space.events import Finished, Notice, ScoreInfo
from banana_space.finding import HEADLINE_WORDS, headline, summarise
from banana_space.verdict import history as verdict_history
from banana_space.verdict.columns import VERDICT_COLUMN, VERDICT_HEADERS
from banana_space.verdict.history import History
from banana_space.verdict.magnifier import (
    CROP,
    GAP,
    MARK,
    box_around,
    largest_difference_box,
    poster,
    side_by_side,
)
from banana_space.view import RunView, simulates_damage

INFOS = [ScoreInfo("psnr", "fidelity", False, score_range=(0.0, 40.0)),
         ScoreInfo("brisque", "metric", True, score_range=(0.0, 150.0)),
         ScoreInfo("niqe", "metric", True), ScoreInfo("piqe", "metric", True)]


def history(steps: int) -> History:
    """PSNR falls 41 -> 41 - steps + 1; BRISQUE and PIQE call it better, NIQE worse."""
    made = History(INFOS)
    for step in range(steps + 1):
        made.add(step, {"psnr": 80.0 if step == 0 else 42.0 - step, "brisque": 30.0 - step,
                        "niqe": 5.0 + step, "piqe": 40.0 - 0.5 * step})
    return made


def test_the_summary_says_the_finding_in_words_and_numbers() -> None:
    text = summarise(history(20), 20, running=False)
    assert text.startswith("**After 20 steps**, PSNR to the input fell 41 → 22 dB; **by the "
                           "paper's test (Δ from step 1 < 0 at steps 5, 10 and 20), 1 of 3 "
                           "standard metrics (pyiqa's, the kind the paper tests) detects the "
                           "damage (niqe), 2 are fooled (brisque, piqe)**;")
    assert "so far" not in text and "simulation" not in text  # not said of a real chain
    assert text.endswith("beyond each score's noise floor 1 of 3 standard metrics detects "
                         "it.")  # floors.csv


def test_the_summary_is_provisional_while_the_run_goes_on() -> None:
    text = summarise(history(6), 20, running=True)
    assert text.startswith("**So far, after 6 of 20 steps**, PSNR to the input fell 41 → 36 dB")
    assert "are fooled (brisque, piqe) so far**;" in text
    assert text.endswith("1 of 3 standard metrics detects it so far.")
    assert summarise(history(0), 20, running=True).startswith("Step 0 is your input")
    assert summarise(History(INFOS), 20, running=True) == ""
    assert summarise(history(1), 20, running=True).endswith(
        "the paper's test (Δ from step 1 < 0 at steps 5, 10 and 20) cannot be asked yet: no "
        "step after the first copy yet.")


def test_a_simulation_says_whether_it_reproduces_the_papers_finding() -> None:
    text = summarise(history(20), 20, running=False, simulated=True)
    assert text.endswith("; on this one chain 1 of 3 standard metrics notices this "
                         "simulation; the paper's finding is over every image, not one chain: "
                         "on Banana100's real chains none of its 21 metrics noticed the damage "
                         "on every image.")
    fooled = History(INFOS)
    for step in range(21):
        fooled.add(step, {"psnr": 80.0 if step == 0 else 42.0 - step, "brisque": 30.0 - step,
                          "niqe": 5.0 - 0.1 * step, "piqe": 40.0 - 0.5 * step})
    assert summarise(fooled, 20, running=False, simulated=True).endswith(
        "; on this one chain 0 of 3 standard metrics notice this simulation; the paper's "
        "finding is over every image, not one chain: on Banana100's real chains none of its 21 "
        "metrics noticed the damage on every image.")
    assert "; on this one chain 1 of 3 standard metrics notices this simulation so far; " \
        in summarise(history(6), 20, running=True, simulated=True)


def test_only_a_simulated_damage_is_compared_with_the_papers_finding() -> None:
    """A control (blur) or a nuisance chain is no model of a generator's damage; nor is a real
    or replayed chain a simulation."""
    assert simulates_damage({"backend": "simulate", "backend_options": {}})  # the default
    assert simulates_damage({"backend": "simulate",
                             "backend_options": {"profile": "scattered-dots"}})
    for profile in ("blur", "identical", "mild-jpeg"):
        assert not simulates_damage({"backend": "simulate",
                                     "backend_options": {"profile": profile}})
    assert not simulates_damage({"backend": "replay", "backend_options": {"source": "x.zip"}})


def rows_of(view: RunView) -> dict[str, list[str]]:
    return {row[0]: row for row in view.screen().verdict}


def test_the_table_says_what_its_numbers_are_and_early_verdicts_say_so_far() -> None:
    view = RunView(steps=20, history=history(6), last_step=6)
    rows = rows_of(view)
    span, now, since, at_5, at_10 = (VERDICT_HEADERS.index(h) for h in (
        "score: step 0 → 1 → now", "Δ now (from step 1)", "Δ since input (now)", "Δ5", "Δ10"))
    # Raw scores at steps 0, 1 and now; the paper's Δ (from step 1) and the change since the
    # input, each with its meaning (BRISQUE fell: better).
    assert rows["brisque"][span] == "30 → 29 → 24" and rows["brisque"][now] == "+5 better"
    assert rows["brisque"][since] == "+6 better"
    assert rows["niqe"][span] == "5 → 6 → 11" and rows["niqe"][now] == "-5 worse"
    # PSNR's Δ is from step 1 (41 dB): no cap enters it. It has no change since the input:
    # its score at the input is the input against itself, pyiqa's 80 dB cap.
    assert rows["psnr (reference)"][span] == "identical → 41 dB → 36 dB"
    assert rows["psnr (reference)"][now] == "-5 worse"
    assert rows["psnr (reference)"][since] == ""
    assert rows["psnr (reference)"][at_5] == "-4" and rows["psnr (reference)"][at_10] == "—"
    assert rows["brisque"][VERDICT_COLUMN] == "❌ fooled so far"
    assert rows["niqe"][VERDICT_COLUMN] == "✅ detects so far"
    view.history = history(20)
    assert rows_of(view)["niqe"][VERDICT_COLUMN] == "✅ detects"
    # Before frame 0 is scored, the table lists the columns with nothing in them yet.
    empty = rows_of(RunView(steps=20, history=History(INFOS)))
    assert empty["psnr (reference)"][at_5] == "—" and empty["brisque"][now] == ""
    first = rows_of(RunView(steps=20, history=history(0), last_step=0))
    assert first["niqe"][VERDICT_COLUMN] == \
        "… undecided (no step 1 yet (the paper's Δ is measured from the first copy))"


def test_fidelity_is_from_step_1_in_the_verdict_and_drawn_from_its_anchor() -> None:
    made = history(6)
    psnr = next(row for row in made.verdict() if row.metric == "psnr")
    assert psnr.delta_at(5) == 37.0 - 41.0 and math.isnan(made.deltas("psnr")[0])
    assert math.isnan(psnr.delta_since_input) and psnr.worse_than_input is None
    # The curve (and scores.csv) measure its change since the input from the range's top.
    assert made.since_input("psnr")[0] == 0.0 and made.since_input("psnr")[6] == 36.0 - 40.0


def test_a_notice_replaces_its_earlier_versions_and_loading_ends_with_the_start() -> None:
    from banana_space.events import Started

    view = RunView()
    assert "loading brisque 1/4" in view.apply(Notice("loading brisque 1/4…", None, "info")).status
    assert "loading niqe 2/4" in view.apply(Notice("loading niqe 2/4…", None, "info")).status
    started = view.apply(Started(Path("run"), 20, INFOS, {}, {}))
    assert "loading" not in started.status and started.status.startswith("⏳ **Running**")
    for step, height in ((8, 683), (9, 673), (10, 673)):
        view.apply(Notice(f"frame is 1024 x {height}, the input 1024 x 683: resized", step))
    view.apply(Notice("the API was slow", 10))
    status = view.screen().status
    assert status.count("frame is") == 1 and "step 10: frame is 1024 x 673" in status
    assert "the API was slow" in status


def test_a_stopped_run_drops_the_frame_it_was_scoring() -> None:
    view = RunView(steps=20, history=history(4), last_step=5, started=True)
    screen = view.apply(Finished("stopped", 4, "stopped by the user"))
    assert len(screen.strip) == 5  # frames 0-4: frame 5 was made, never scored
    assert screen.status.startswith("⏹ **Stopped** after step 4")


def test_one_step_is_one_step() -> None:
    assert summarise(history(1), 1, running=False).startswith("**After 1 step**, ")


def first_step_history() -> History:
    """Issue 23's smooth start: BRISQUE is far better at step 1 (50.6 -> 28.3), then worse with
    every copy; NIQE worse from the start; PIQE better and better."""
    made = History(INFOS)
    for step in range(21):
        # PSNR inside its range (under 40 dB) from step 1: fidelity's Δ is held in its range
        made.add(step, {"psnr": 80.0 if step == 0 else 38.0 - 0.5 * step,
                        "brisque": 50.6 if step == 0 else 28.3 + 0.8 * (step - 1),
                        "niqe": 5.0 + step, "piqe": 40.0 - 0.5 * step})
    return made


def test_a_score_better_at_step_1_than_the_input_is_said_in_words(monkeypatch) -> None:
    monkeypatch.setattr(verdict_history, "floor_of",
                        lambda name: {"niqe": 2.0, "brisque": 1.0}.get(name))
    text = summarise(first_step_history(), 20, running=False)
    assert "2 of 3 standard metrics (pyiqa's, the kind the paper tests) detect the damage " \
        "(brisque, niqe), 1 is fooled (piqe)**" in text
    # brisque: -3.2 at step 5
    assert "beyond each score's noise floor 2 of 3 standard metrics detect it" in text
    assert "since the input, brisque: step 1 scored better than the input; from there it " \
        "falls, but not below the input at every checkpoint" in text
    rows = rows_of(RunView(steps=20, history=first_step_history(), last_step=20))
    beyond = VERDICT_HEADERS.index("beyond floor")
    since = VERDICT_HEADERS.index("Δ since input (now)")
    assert rows["brisque"][VERDICT_COLUMN] == "✅ detects"
    assert rows["brisque"][since] == "+7.1 better; step 1 scored better than the input; from " \
        "there it falls, but not below the input at every checkpoint"
    assert rows["piqe"][since] == "+10 better" and rows["niqe"][since] == "-20 worse"
    assert [rows[m][beyond] for m in ("niqe", "brisque", "piqe", "psnr (reference)")] == \
        ["✅ detects", "✅ detects", "…", "…"]  # piqe and psnr: no floor, undecided
    assert all(len(row) == len(VERDICT_HEADERS) for row in rows.values())


def test_the_status_says_why_a_run_stopped_once_and_marks_notices_by_level() -> None:
    view = RunView(steps=20, history=history(4), last_step=4, started=True)
    view.apply(Notice("resumed after step 4", 4, "info"))
    view.apply(Notice("frame is 90 x 60", 4))
    screen = view.apply(Finished("stopped", 4, "stopped by the user"))
    assert screen.status.startswith("⏹ **Stopped** after step 4 by the user. Frames 0–4 ")
    assert "\n\nℹ️ resumed after step 4" in screen.status
    assert "\n\n⚠️ step 4: frame is 90 x 60" in screen.status
    failed = view.apply(Finished("failed", 4, "failed at step 5: the API said no"))
    assert failed.status.startswith("❌ **Failed** at step 5: the API said no. Frames 0–4")


def frames_with_a_planted_patch() -> tuple[Image.Image, Image.Image]:
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (200, 300, 3), dtype=np.uint8)
    damaged = pixels.copy()
    damaged[120:150, 200:230] = 255 - damaged[120:150, 200:230]  # the damage: one patch
    return Image.fromarray(pixels), Image.fromarray(damaged)


def test_the_magnifier_finds_where_the_frames_differ_most() -> None:
    clean, damaged = frames_with_a_planted_patch()
    left, top, right, bottom = largest_difference_box(clean, damaged)
    assert right - left == bottom - top == CROP
    assert left <= 200 and right >= 230 and top <= 120 and bottom >= 150
    # A frame that came back at another size is compared at the input's size.
    left, top, *_ = largest_difference_box(clean, damaged.resize((600, 400)))
    assert left <= 200 <= left + CROP and top <= 120 <= top + CROP


def test_a_click_centres_the_crop_inside_the_image() -> None:
    assert box_around((150, 100), (300, 200)) == (102, 52, 198, 148)
    assert box_around((5, 195), (300, 200)) == (0, 104, 96, 200)
    assert box_around((10, 10), (64, 48)) == (0, 0, 48, 48)


def test_side_by_side_enlarges_the_same_crop_of_both_pixel_for_pixel() -> None:
    clean, damaged = frames_with_a_planted_patch()
    box = (200, 120, 296, 216)
    shown = np.asarray(side_by_side(clean, damaged, box, zoom=3))
    assert shown.shape == (3 * CROP, 2 * 3 * CROP + GAP, 3)
    left, right = shown[:, :3 * CROP], shown[:, 3 * CROP + GAP:]
    assert (left[::3, ::3] == np.asarray(clean.crop(box))).all()
    assert (right[::3, ::3] == np.asarray(damaged.crop(box))).all()
    assert not math.isclose(float(np.abs(left.astype(int) - right).mean()), 0.0)


RULER_INFOS = [*INFOS, ScoreInfo("entropy", "metric", False),
               ScoreInfo("noise_level", "metric", True, family="ours"),
               ScoreInfo("colour_cast", "metric", True, family="ours")]


def nine_steps_with_rulers() -> History:
    """A finished 9-step chain: the history above, entropy missing at step 5 (undecided), one
    ruler that rises with the damage (detects) and one that falls (fooled)."""
    made = History(RULER_INFOS)
    for step in range(10):
        made.add(step, {"psnr": 80.0 if step == 0 else 42.0 - step, "brisque": 30.0 - step,
                        "niqe": 5.0 + step, "piqe": 40.0 - 0.5 * step,
                        "entropy": math.nan if step == 5 else 7.0 - 0.1 * step,
                        "noise_level": float(step), "colour_cast": -float(step)})
    return made


def test_a_finished_short_chain_counts_the_papers_metrics_apart_and_names_its_checkpoint(
        ) -> None:
    text = summarise(nine_steps_with_rulers(), 9, running=False, simulated=True)
    assert text.startswith("**After 9 steps**, PSNR to the input fell 41 → 33 dB; **by the "
                           "paper's test at step 5 only (Δ from step 1 < 0 there; the chain "
                           "has not reached the paper's later checkpoints), 1 of 4 standard "
                           "metrics (pyiqa's, the kind the paper tests) detects the damage "
                           "(niqe), 2 are fooled (brisque, piqe), 1 is undecided (entropy: no "
                           "score at step 5)**; counted apart, 1 of 2 rulers (ours, not among "
                           "the paper's metrics) detects the damage (noise_level), 1 is fooled "
                           "(colour_cast);"), text
    assert "so far" not in text and not re.search(r"\b(10|20)\b", text)  # no Δ10, no Δ20
    assert "on this one chain 1 of 4 standard metrics notices this simulation; the paper's " \
        "finding is over every image, not one chain" in text
    # The same chain while it runs towards step 9 of 9: step 5 is its last checkpoint, so at
    # step 7 its verdicts are final; at step 4 of 9 they are not.
    assert "so far" not in summarise(nine_steps_with_rulers(), 9, running=True).split("**", 2)[2]
    early = History(RULER_INFOS)
    for step, scores in enumerate(zip(*nine_steps_with_rulers().scores.values(), strict=True)):
        if step <= 4:
            early.add(step, dict(zip(early.scores, scores, strict=True)))
    assert "(colour_cast) so far;" in summarise(early, 9, running=True)


def test_a_finished_short_chain_says_in_its_table_which_checkpoint_its_verdict_used() -> None:
    ended = RunView(steps=9, history=nine_steps_with_rulers(), last_step=9,
                    ended=Finished("completed", 9))
    rows = rows_of(ended)
    assert rows["niqe"][VERDICT_COLUMN] == "✅ detects (at step 5 only)"
    assert rows["brisque"][VERDICT_COLUMN] == "❌ fooled (at step 5 only)"
    assert rows["entropy"][VERDICT_COLUMN] == "… undecided (no score at step 5)"
    assert "so far" not in rows["brisque"][VERDICT_HEADERS.index("beyond floor")]
    # Stopped at step 9 of 20: ended, so final, and it says which checkpoint it used.
    stopped = RunView(steps=20, history=nine_steps_with_rulers(), last_step=9,
                      ended=Finished("stopped", 9, "stopped by the user"))
    assert rows_of(stopped)["niqe"][VERDICT_COLUMN] == "✅ detects (at step 5 only)"
    assert "so far" not in stopped.screen().summary


def test_the_headline_says_what_fell_and_what_the_metrics_said_in_thirty_words() -> None:
    assert headline(history(20), 20, running=False) == (
        "**After 20 steps**, PSNR to the input fell 41 → 22 dB; by the paper's test (steps 5, "
        "10, 20), 1 of 3 standard metrics detects it.")
    assert headline(nine_steps_with_rulers(), 9, running=False) == (
        "**After 9 steps**, PSNR to the input fell 41 → 33 dB; by the paper's test (step 5), 1 "
        "of 4 standard metrics detects it.")  # the rulers are counted in the folded rest
    assert headline(history(1), 20, running=True) == (
        "**So far (step 1 of 20)**, PSNR to the input is 41 dB; the paper's test cannot be "
        "asked yet.")
    # The longest: a long run under way, every checkpoint read, two-digit counts.
    infos = [INFOS[0], *(ScoreInfo(f"metric_{k}", "metric", True) for k in range(21))]
    long = History(infos)
    for step in range(61):
        long.add(step, {"psnr": 42.0 - step / 2,
                        **{f"metric_{k}": 30.0 + (k % 2 or -1) * step for k in range(21)}})
    text = headline(long, 100, running=True)
    assert "(steps 5, 10, 20), 10 of 21 standard metrics detect it." in text, text
    assert len(text.split()) <= HEADLINE_WORDS, text


def test_the_poster_shows_both_frames_whole_with_the_crop_outlined_then_the_crop_enlarged(
        ) -> None:
    clean, damaged = frames_with_a_planted_patch()  # 300 x 200
    box = largest_difference_box(clean, damaged)
    shown = np.asarray(poster(clean, damaged, box, height=100))
    # input 150 | frame 150 | the two crops, 288 x 288 each side, at 100 tall: 202
    assert shown.shape == (100, 150 + GAP + 150 + GAP + 202, 3)
    left, top = box[0] // 2, box[1] // 2  # the outline, at the poster's scale
    for start in (0, 150 + GAP):
        edge = shown[top + 1, start + left + 10:start + left + 30]  # the outline's middle row
        assert (np.abs(edge.astype(int) - MARK).max(axis=1) < 40).all()  # amber on both
    enlarged = np.asarray(side_by_side(clean, damaged, box).resize((202, 100),
                                                                  Image.Resampling.NEAREST))
    assert (shown[:, 2 * (150 + GAP):] == enlarged).all()
