"""The "Why is it fooled?" panel and the `why` command (banana_space/explain/why.py).

Its MSCN numbers are pyiqa's: α and σ² of each frame's MSCN coefficients equal BRISQUE's first
two features from pyiqa's own `natural_scene_statistics`. Its explanation adds up: on held-out
chains (starts the simulated profiles were not calibrated on: smooth ones, as the paper's
generated starts were, an upscaled photograph and rough photographs, under the Nano Banana
Pro-like profile and the white-noise control) the decomposition of BRISQUE's and NIQE's change
from step 1 sums to the run's own recorded change, and its sentence names the direction the
score moved by the metric's orientation, never the other. The regression it guards: a sentence
read from α alone that called a BRISQUE which fell 31 -> 6 "less natural"."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES
from PIL import Image
from pyiqa.archs.brisque_arch import natural_scene_statistics
from pyiqa.utils.color_util import to_y_channel
from tolerance import FLOAT64_RELATIVE

from banana_space.backends.simulate import SimulateBackend
from banana_space.chain.runs import start_run
from banana_space.chain.sides import smooth_start
from banana_space.chain.spec import RunSpec
from banana_space.cli import main as cli
from banana_space.explain.plots import SUM_LABEL, contribution_figure
from banana_space.explain.shapley import EXPLAINED, FEATURE_GROUPS, Decomposition
from banana_space.explain.why import (
    Explanation,
    bin_centres,
    explain_sides,
    explain_step,
    ggd_density,
    read_frame,
    why_text,
)
from banana_space.scores.catalog import metric_info, to_tensor


def chain(profile: str, steps: int) -> list[Image.Image]:
    """Frame 0 (a crop of the default example) and its simulated copies."""
    with Image.open(EXAMPLES / "photo-moss.png") as image:
        frames = [image.convert("RGB").crop((0, 0, 320, 240))]
    backend = SimulateBackend(profile=profile)
    for step in range(1, steps + 1):
        frames.append(backend.edit(frames[-1], "replica", seed=3, step=step).image)
    return frames


def pyiqa_features(image: Image.Image) -> np.ndarray:
    """BRISQUE's first-scale features as pyiqa's `brisque` computes them (version 'original':
    YIQ luma x 255, then `natural_scene_statistics` with its 7 x 7, σ 7/6 window)."""
    luma = to_y_channel(to_tensor(image), 255.0)
    return natural_scene_statistics(luma, 7, 7.0 / 6)[0].numpy()


@pytest.mark.parametrize("profile", ["nano-banana-pro", "white-noise"])
def test_alpha_and_variance_per_step_are_brisques_first_features(profile: str) -> None:
    frames = chain(profile, 4)
    ours = [read_frame(frame) for frame in frames]
    theirs = [pyiqa_features(frame) for frame in frames]
    assert [r.alpha for r in ours] == [float(f[0]) for f in theirs]
    assert [r.variance for r in ours] == pytest.approx([float(f[1]) for f in theirs],
                                                       rel=1e-6)  # σ, squared once more
    assert len({r.alpha for r in ours}) > 1  # the chain moves α: a real comparison


def test_the_histogram_is_a_density_and_the_fit_describes_it() -> None:
    reading = read_frame(chain("white-noise", 1)[1])
    width = bin_centres()[1] - bin_centres()[0]
    assert sum(reading.density) * width == pytest.approx(1, abs=0.02)  # ±3 holds nearly all
    fitted = ggd_density(bin_centres(), reading.alpha, reading.variance)
    assert fitted.sum() * width == pytest.approx(1, abs=0.03)
    # the fitted curve lies near the histogram: the fit is of these coefficients
    assert np.abs(fitted - np.array(reading.density)).sum() * width < 0.2


def test_a_gaussian_of_shape_two_is_the_normal_density() -> None:
    x = np.linspace(-2, 2, 9)
    normal = np.exp(-x**2 / 2) / math.sqrt(2 * math.pi)
    assert ggd_density(x, 2.0, 1.0) == pytest.approx(normal)


# ---- the explanation that adds up ----------------------------------------------------------------

STEPS = 5  # the paper's first checkpoint: Δ5


def start_of(kind: str) -> Image.Image:
    """Held-out starts (the profiles were calibrated on the photo-* examples), 450-640 px."""
    if kind == "smooth render":  # a clean render, like the paper's generated starts
        with Image.open(EXAMPLES / "clean-feathers.png") as image:
            return image.convert("RGB").crop((448, 272, 1088, 752))
    if kind == "smoothed photo":
        with Image.open(EXAMPLES / "astronaut.png") as image:
            return smooth_start(image.convert("RGB"))
    if kind == "upscaled photo":  # a small photograph blown up 1.5 times, as the audit's was
        with Image.open(EXAMPLES / "chelsea.png") as image:
            return image.convert("RGB").resize((676, 450), Image.Resampling.BICUBIC)
    with Image.open(EXAMPLES / "coffee.png") as image:  # "rough photo": as it is
        return image.convert("RGB")


CASES = [("smooth render", "nano-banana-pro"), ("smoothed photo", "nano-banana-pro"),
         ("upscaled photo", "nano-banana-pro"), ("upscaled photo", "white-noise"),
         ("rough photo", "nano-banana-pro"), ("rough photo", "white-noise")]


@pytest.fixture(scope="module")
def runs(weights_dir, tmp_path_factory) -> dict[tuple[str, str], Path]:
    """Each case's run of `STEPS` copies, scored by BRISQUE and NIQE, as the app runs one."""
    root = tmp_path_factory.mktemp("why-runs")
    made = {}
    for number, (kind, profile) in enumerate(CASES):
        spec = RunSpec(start_of(kind), STEPS, backend_options={"profile": profile},
                       metrics=list(EXPLAINED), seed=number)
        events = list(start_run(spec, root, run_id=f"case-{number}"))
        assert events[-1].status == "completed", events[-1]
        made[kind, profile] = root / f"case-{number}"
    return made


@pytest.mark.parametrize("metric", sorted(EXPLAINED))
def test_the_explanation_adds_up_and_reads_the_score_as_the_metric_does(runs,
                                                                        metric: str) -> None:
    lower_better = metric_info(metric).lower_better
    for case, run_dir in runs.items():
        for step in (2, STEPS):
            explanation = explain_step(run_dir, metric, step)
            found = explanation.decomposition
            # the parts add up to the change (float64 sums of the scores' size)...
            assert math.fsum(found.contributions.values()) == pytest.approx(
                found.delta, rel=FLOAT64_RELATIVE, abs=FLOAT64_RELATIVE * abs(found.before))
            # ...which is the run's own: its scores.csv, by the same pyiqa model
            assert found.delta == pytest.approx(explanation.recorded_delta, rel=1e-6,
                                                abs=1e-6 * abs(found.before)), case
            reads = "better" if (found.delta < 0) == lower_better else "worse"
            assert explanation.reads_as == reads, case
            sentence = explanation.sentence()
            assert f"reads as {reads}." in sentence and f"towards {reads};" in sentence, case
            assert OTHER[reads] not in sentence, (case, sentence)
            assert (" fell " if found.delta < 0 else " rose ") in sentence, case


OTHER = {"better": "worse", "worse": "better"}


def decomposition(before: float, after: float, *shares: float) -> Decomposition:
    return Decomposition("brisque", before, after, dict(zip(FEATURE_GROUPS, shares, strict=True)))


def test_the_sentence_is_written_from_the_numbers() -> None:
    fell = decomposition(31.0, 6.0, -20.0, 8.0, -6.0, -4.0, -1.5, -1.5)
    better = Explanation(fell, 5, lower_better=True, recorded_delta=math.nan)
    assert better.reads_as == "better"
    assert better.sentence() == (
        "BRISQUE fell from 31 at step 1 to 6 at step 5 (-25), which BRISQUE reads as better. "
        "In our decomposition of pyiqa's BRISQUE over its model's feature groups, the MSCN "
        "shape α (-20) and the horizontal pair products (-6) moved it most towards better; the "
        "MSCN spread (+8) pushed the other way; the other 3 groups add -7.")
    # the same numbers for a score where higher is better read the other way
    worse = Explanation(fell, 5, lower_better=False, recorded_delta=math.nan)
    assert worse.reads_as == "worse" and "reads as worse" in worse.sentence()
    assert "better" not in worse.sentence()
    still = Explanation(decomposition(4.0, 4.0, *[0.0] * 6), 3, True, math.nan)
    assert still.reads_as == "unchanged" and "did not move" in still.sentence()
    assert still.as_json()["recorded_delta"] is None


def test_the_why_command_prints_the_decomposition_or_refuses_in_one_line(runs, capsys) -> None:
    run = runs["upscaled photo", "white-noise"]
    assert cli(["why", str(run), "--metric", "brisque", "--step", str(STEPS), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["metric"], answer["step"]) == ("brisque", STEPS)
    assert list(answer["contributions"]) == list(FEATURE_GROUPS)
    assert math.fsum(answer["contributions"].values()) == pytest.approx(
        answer["delta"], rel=FLOAT64_RELATIVE, abs=FLOAT64_RELATIVE * answer["score_at_1"])
    assert answer["delta"] == answer[f"score_at_{STEPS}"] - answer["score_at_1"]
    assert answer["reads_as"] == ("better" if answer["delta"] < 0 else "worse")
    assert f"reads as {answer['reads_as']}" in answer["sentence"]
    assert cli(["why", str(run), "--metric", "niqe", "--step", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("NIQE ") and lines[-1].startswith("Ours, not the paper's")
    assert [line.split()[0] for line in lines[1:-1]] == [
        *(group.split()[0] for group in FEATURE_GROUPS), "sum:"]
    for arguments, refusal in ((["--metric", "piqe", "--step", "3"], "piqe has no decomp"),
                               (["--metric", "niqe", "--step", "9"], "has no step 9"),
                               (["--metric", "niqe", "--step", "1"], "2 or later")):
        assert cli(["why", str(run), *arguments]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and refusal in error, error


def test_the_panel_draws_bars_that_add_up_to_each_sides_change(runs) -> None:
    sides = {"A": runs["smooth render", "nano-banana-pro"], "B": runs["rough photo", "white-noise"]}
    scored = {"A": ["brisque", "niqe", "psnr"], "B": ["brisque"]}
    explained = explain_sides(sides, scored, 3)
    assert {side: list(found) for side, found in explained.items()} == {
        "A": ["brisque", "niqe"], "B": ["brisque"]}
    figure = contribution_figure(explained, 3)
    assert len(figure["data"]) == 3  # A's two scores, B's one
    for trace in figure["data"]:
        assert trace["y"] == [*FEATURE_GROUPS, SUM_LABEL]
        assert math.fsum(trace["x"][:-1]) == pytest.approx(trace["x"][-1], rel=1e-9)
    text = why_text(explained, 3)
    assert text.count("reads as") == 3 and "Ours, not the paper's" in text
    assert "choose step 2 or later" in why_text(explain_sides(sides, scored, 1), 1)
    beyond = explain_sides(sides, scored, 9)
    assert "has no step 9" in beyond["B"]["brisque"]
    assert contribution_figure(beyond, 9) is None
    assert "nothing to decompose" in why_text(explain_sides(sides, {"A": [], "B": []}, 3), 3)
