"""Q-ReAlign Mini as a judge (banana_space/judges/qrealign.py), offline: a tiny random Qwen3.5-VL
checkpoint built from a config (tests/tiny_models.py), saved to a folder and loaded through
pyiqa's own `QReAlign(model=<folder>)`. The judge's score is pyiqa's for the window it shows;
the window is native pixels; without weights the judge is unavailable with the reason, never a
crash; a run streams every frame while the judge is still busy, its points arriving after; and
the leaderboard scores it as an entry where it loads."""

from __future__ import annotations

import csv
import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from tiny_models import tiny_qwen3_5_vl

from banana_space.backends.base import report_nothing
from banana_space.backends.simulate import SimulateBackend
from banana_space.chain.loop import Chain, replicate
from banana_space.chain.producers import Editing
from banana_space.chain.runs import RunSpec, start_run
from banana_space.events import Finished, FrameJudged, FrameScored, Notice, Started
from banana_space.judges import REGISTRY, create_judge
from banana_space.judges import qrealign as qr
from banana_space.scores.catalog import to_tensor
from banana_space.scores.pool import MetricPool
from banana_space.scores.scoring import Scorer
from banana_space.sources.images import load_image


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_qwen3_5_vl(tmp_path_factory.mktemp("qrealign-mini"))


@pytest.fixture()
def operator_checkpoint(checkpoint: Path, engine_env: Callable[..., None]) -> Path:
    """The operator points the judge at the tiny checkpoint, as at a local copy of Mini."""
    engine_env(**{qr.MODEL_VAR: str(checkpoint)})
    return checkpoint


@pytest.fixture()
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                engine_env: Callable[..., None]) -> Path:
    """A Hugging Face cache without the checkpoint, and no operator folder."""
    import huggingface_hub.constants

    engine_env(**{qr.MODEL_VAR: None})
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


@pytest.fixture(scope="module")
def pool() -> MetricPool:
    return MetricPool(device="cpu", load_seconds=600)


def textured(width: int, height: int, seed: int = 0) -> Image.Image:
    noise = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return Image.fromarray(noise)


def test_the_window_is_native_pixels_at_the_centre_and_256_tokens(operator_checkpoint) -> None:
    frame = textured(2048, 1280)
    window = qr.centre_window(frame)
    assert window.size == (qr.WINDOW, qr.WINDOW)
    left, top = (2048 - 512) // 2, (1280 - 512) // 2
    assert np.array_equal(np.asarray(window),
                          np.asarray(frame)[top:top + 512, left:left + 512])  # not resampled
    small = textured(300, 200)
    assert qr.centre_window(small).size == (300, 200)  # shorter than the window: shown whole
    processor = create_judge("judge_qrealign").load().processor
    assert qr.visual_tokens(processor, qr.WINDOW, qr.WINDOW) == 256
    assert qr.visual_tokens(processor, 2048, 1280) == 2560  # the whole frame, were it shown


def test_the_judge_gives_pyiqas_own_score_for_its_window(operator_checkpoint) -> None:
    from pyiqa.archs.qrealign_arch import QReAlign

    judge = create_judge("judge_qrealign")
    assert judge.unavailable_reason() is None and judge.device == "cpu"
    frames = [textured(1024, 768, seed) for seed in (1, 2)]
    verdicts = [judge.rate(frame) for frame in frames]
    reference = QReAlign(model=str(operator_checkpoint), dtype=torch.float32).eval()
    expected = [float(reference(to_tensor(qr.centre_window(f)))[0]) for f in frames]
    assert [v.score for v in verdicts] == pytest.approx(expected, rel=1e-5)
    assert all(0.0 <= v.score <= 1.0 and v.warning is None for v in verdicts)
    assert verdicts[0].score != verdicts[1].score  # it looks at the pixels


def test_on_a_cpu_it_rates_the_checkpoints_and_the_last_step(operator_checkpoint) -> None:
    judge = create_judge("judge_qrealign", device="cpu")
    assert judge.schedule(10) == {0, 1, 5, 10}
    assert judge.schedule(30) == {0, 1, 5, 10, 20, 30}
    assert create_judge("judge_qrealign", device="cuda").schedule(30) is None  # every frame


def test_label_names_the_model_and_the_scale_is_pyiqas(operator_checkpoint) -> None:
    info = REGISTRY["judge_qrealign"].info
    assert info.label == "VLM judge: Q-ReAlign Mini, via pyiqa"
    assert "reality" not in info.label.lower() and info.score_range == (0.0, 1.0)
    assert not info.needs_key and not info.needs_gpu
    assert info.options == ()  # a visitor cannot name a checkpoint


def test_the_hub_cache_copy_is_found_without_the_network(checkpoint, empty_cache) -> None:
    assert REGISTRY["judge_qrealign"].unavailable_reason() == qr.WEIGHTS_MISSING
    repo = empty_cache / "models--q-future--Q-ReAlign-Mini-0.8B"
    snapshot = repo / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    for file in checkpoint.iterdir():
        (snapshot / file.name).symlink_to(file)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    assert REGISTRY["judge_qrealign"].unavailable_reason() is None
    assert qr.checkpoint_folder() == snapshot


def test_without_weights_a_run_lists_it_unavailable(empty_cache, photo, tmp_path, pool,
                                                    weights_dir) -> None:
    spec = RunSpec.of_image(load_image(photo.resize((48, 32))), 2, "simulate", metrics=["entropy"],
                            judges=["judge_qrealign"])
    events = list(start_run(spec, tmp_path / "runs", pool=pool))
    started = next(e for e in events if isinstance(e, Started))
    assert started.unavailable["judge_qrealign"] == qr.WEIGHTS_MISSING
    assert "judge_qrealign" not in {info.name for info in started.infos}
    assert isinstance(events[-1], Finished) and events[-1].status == "completed"
    with pytest.raises(Exception, match="weights are not on this machine"):
        create_judge("judge_qrealign").rate(photo)


def test_a_run_through_the_app_path_shows_its_points(operator_checkpoint, photo, tmp_path,
                                                     pool, weights_dir) -> None:
    spec = RunSpec.of_image(load_image(photo.resize((96, 64))), 6, "simulate", metrics=["entropy"],
                            judges=["judge_qrealign"])
    events = list(start_run(spec, tmp_path / "runs", pool=pool))
    started = next(e for e in events if isinstance(e, Started))
    assert "judge_qrealign" in {info.name for info in started.infos}
    judged = {e.step: e.scores["judge_qrealign"] for e in events if isinstance(e, FrameJudged)}
    assert sorted(judged) == [0, 1, 5, 6]  # the checkpoints and the last step, on a CPU
    assert all(0.0 <= score <= 1.0 for score in judged.values())
    assert events[-1] == next(e for e in events if isinstance(e, Finished))
    assert events[-1].status == "completed"
    with (started.run_dir / "scores.csv").open() as handle:
        written = {int(r["step"]): r["score"] for r in csv.DictReader(handle)
                   if r["metric"] == "judge_qrealign"}
    assert {s: float(v) for s, v in written.items() if v} == pytest.approx(judged)
    assert written[2] == written[3] == ""  # a gap, not a made-up point


class HeldJudge(qr.QReAlignJudge):
    """The real judge, held at the door of its first rating until the test lets it in."""

    def __init__(self) -> None:
        super().__init__(device="cpu")
        self.busy, self.let_in = threading.Event(), threading.Event()

    def rate(self, image: Image.Image, report=report_nothing):
        self.busy.set()
        self.let_in.wait()
        return super().rate(image, report)


def test_frames_stream_while_the_judge_is_still_busy(operator_checkpoint, photo, pool,
                                                     weights_dir) -> None:
    judge = HeldJudge()
    scorer = Scorer(["entropy"], [judge], pool)
    list(scorer.load())
    chain = Chain(photo.resize((96, 64)), Editing(SimulateBackend(), "copy", 0), scorer, 6)
    events: Iterator = replicate(chain)
    seen = []
    try:
        for event in events:  # every frame comes, scored, while the judge sits on step 0
            seen.append(event)
            if isinstance(event, Notice) and "rating the last frames" in event.message:
                break
        assert judge.busy.wait(timeout=60)  # it had started on step 0 (and sits there)
        assert [e.step for e in seen if isinstance(e, FrameScored)] == list(range(7))
        assert not any(isinstance(e, (FrameJudged, Finished)) for e in seen)
        assert all(math.isnan(e.scores["judge_qrealign"]) for e in seen
                   if isinstance(e, FrameScored))
        judge.let_in.set()
        rest = list(events)
    finally:
        judge.let_in.set()
        events.close()
    assert [e.step for e in rest if isinstance(e, FrameJudged)] == [0, 1, 5, 6]
    assert isinstance(rest[-1], Finished) and rest[-1].status == "completed"


def test_a_stop_does_not_wait_for_the_judge(operator_checkpoint, photo, pool,
                                            weights_dir) -> None:
    judge = HeldJudge()
    scorer = Scorer(["entropy"], [judge], pool)
    list(scorer.load())
    stop = threading.Event()
    chain = Chain(photo.resize((96, 64)), Editing(SimulateBackend(), "copy", 0), scorer, 3)
    events = replicate(chain, stop)
    try:
        for event in events:
            if isinstance(event, FrameScored) and event.step == 1:
                assert judge.busy.wait(timeout=60)  # rating step 0, held there
                stop.set()
            if isinstance(event, Finished):
                break
        assert event.status == "stopped" and not judge.let_in.is_set()
    finally:
        judge.let_in.set()
        events.close()


def test_on_the_leaderboard_it_is_an_entry_scored_at_its_checkpoints(operator_checkpoint,
                                                                     tmp_path) -> None:
    from banana_space.leaderboard.make import probe_entries
    from banana_space.table import find_chains
    from banana_space.table.work import score_chain_ref

    entries = {entry.metric: entry for entry in probe_entries(["entropy"])}
    assert entries["judge_qrealign"].unavailable == ""  # it loads here, so it is scored
    assert entries["judge_qrealign"].family == "judge"
    assert entries["judge_gemini"].unavailable  # listed, never asked here (it bills a key)
    chain = tmp_path / "chain"
    chain.mkdir()
    base = np.asarray(textured(96, 64), dtype=float)
    for step in range(7):  # copies of one picture (unrelated pictures are refused as a chain)
        copy = base + np.random.default_rng(step).normal(0, 4, base.shape)
        Image.fromarray(np.clip(copy, 0, 255).astype(np.uint8)).save(chain / f"step_{step:03d}.png")
    result = score_chain_ref(find_chains([str(chain)])[0], ("entropy", "judge_qrealign"))
    assert not result.error and result.frames == 7
    rated = [step for step, score in enumerate(result.scores["judge_qrealign"])
             if not math.isnan(score)]
    assert rated == [0, 1, 5, 6]
    family = {column["name"]: column["family"] for column in result.columns}
    assert family["judge_qrealign"] == "judge"


@pytest.mark.app
def test_the_app_ticks_it_and_a_run_shows_its_line(checkpoint, photo_path, tmp_path) -> None:
    import json
    import urllib.request

    from app_server import RUN_DIR, STATUS, TABLE, run_inputs, running_app
    from gradio_client import Client, handle_file

    with running_app(tmp_path / "runs", **{qr.MODEL_VAR: str(checkpoint)}) as url:
        with urllib.request.urlopen(url + "config", timeout=30) as answer:
            components = json.load(answer)["components"]
        judges = next(c for c in components
                      if c.get("props", {}).get("label") == "VLM judges (reference line)")
        assert "judge_qrealign" in judges["props"]["value"]  # on by default where it loads
        final = Client(url, verbose=False).predict(
            *run_inputs(handle_file(str(photo_path)), 5, metrics=["entropy"],
                        judges=["judge_qrealign"]), api_name="/run")
    assert "Completed" in final[STATUS]
    rows = {row[0] for row in final[TABLE]["data"]}
    assert "VLM judge: Q-ReAlign Mini, via pyiqa (reference)" in rows
    with (tmp_path / "runs" / final[RUN_DIR] / "scores.csv").open(newline="") as handle:
        rated = [int(r["step"]) for r in csv.DictReader(handle)
                 if r["metric"] == "judge_qrealign" and r["score"]]
    assert rated == [0, 1, 5]
