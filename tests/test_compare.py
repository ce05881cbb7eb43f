"""Two chains from one upload (banana_space/chain/lifecycle.py), on real parts: the offline
simulation, real pyiqa metrics, real run directories. Identical sides are refused before anything is
written; the input is scored once; a side that cannot start leaves the other running and says
why; Stop stops both; the comparison's zip holds both runs and the A/B table; the lessons'
sentences come from the verdicts."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import threading
import time
import zipfile
from collections import Counter
from dataclasses import replace

import pytest

from banana_space.chain import lifecycle as compare
from banana_space.chain import sides
from banana_space.chain.comparison import Comparison, PairRow, PairSpec
from banana_space.chain.lifecycle import start_chain
from banana_space.chain.runs import Resumption
from banana_space.chain.sides import IDENTICAL, Side
from banana_space.compare.lessons import LESSONS, lesson_sentence
from banana_space.events import Finished, FrameScored, Started
from banana_space.scores.pool import POOL
from banana_space.sources.images import LoadedImage
from banana_space.store.run import Run, RunBusy, runs_in
from banana_space.verdict.history import VerdictRow

METRICS = ["brisque", "niqe"]
STATIC = Side(options={"profile": "nano-banana-pro"})
NOISE = Side(options={"profile": "white-noise"})


@pytest.fixture()
def start(photo) -> LoadedImage:
    return LoadedImage(photo.resize((224, 160)), [])


def ended(events: list) -> dict[str, Finished]:
    return {e.side: e.event for e in events
            if isinstance(e, compare.SideEvent) and isinstance(e.event, Finished)}


def test_identical_sides_are_refused_before_anything_is_written(start, tmp_path) -> None:
    spelled_out = Side(options={"profile": "nano-banana-pro", "strength": 1.0})
    for a, b in [(STATIC, STATIC), (Side(), spelled_out), (Side(options={"profile": ""}), Side())]:
        with pytest.raises(ValueError, match="A and B are the same settings"):
            start_chain(PairSpec(start, 2, a, b, METRICS), tmp_path)
    assert IDENTICAL.startswith("A and B are the same settings")
    assert list(tmp_path.iterdir()) == []


def test_every_refusal_applies_to_each_side(start, tmp_path) -> None:
    with pytest.raises(ValueError, match="side B: the seed must be"):
        start_chain(PairSpec(start, 2, STATIC, Side(seed=-1), METRICS), tmp_path)
    with pytest.raises(ValueError, match="side A: .*takes no option"):
        start_chain(PairSpec(start, 2, Side(options={"colour": 1}), NOISE, METRICS), tmp_path)
    with pytest.raises(ValueError, match="steps must be"):
        start_chain(PairSpec(start, 0, STATIC, NOISE, METRICS), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_pair_runs_both_chains_and_scores_the_input_once(start, tmp_path, weights_dir,
                                                           monkeypatch) -> None:
    calls: Counter = Counter()
    score = POOL.score

    def counted(name, image, reference=None):
        calls[name] += 1
        return score(name, image, reference)

    monkeypatch.setattr(POOL, "score", counted)
    steps = 3
    events = list(start_chain(PairSpec(start, steps, STATIC, NOISE, METRICS), tmp_path))
    assert {side: e.status for side, e in ended(events).items()} == {"A": "completed",
                                                                      "B": "completed"}
    # frames 0..3 on each side, frame 0 (the same input) once: 2 x 4 - 1
    assert calls["brisque"] == calls["niqe"] == 2 * (steps + 1) - 1
    started = {e.side: Run(e.event.run_dir) for e in events
               if isinstance(e, compare.SideEvent) and isinstance(e.event, Started)}
    a, b = started["A"].load(), started["B"].load()
    assert a.history.scores["brisque"][0] == b.history.scores["brisque"][0]
    assert a.history.scores["brisque"][1:] != b.history.scores["brisque"][1:]
    record = Comparison.read(started["A"])
    assert record == Comparison.read(started["B"])
    assert (record.a, record.b) == (started["A"].id, started["B"].id)
    assert record.sides["B"]["options"]["profile"] == "white-noise"
    assert record.failed == {}

    with zipfile.ZipFile(started["A"].compare_zip_path) as archive:
        names = set(archive.namelist())
        table = list(csv.DictReader(io.StringIO(archive.read("comparison.csv").decode())))
    assert names == {f"A-{started['A'].zip_path.name}", f"B-{started['B'].zip_path.name}",
                     "comparison.csv", "compare.json"}
    by_metric = {row["metric"]: row for row in table}
    assert {"brisque", "niqe", "psnr"} <= set(by_metric)
    assert by_metric["brisque"]["a_detects"] in {"yes", "no", "undecided"}
    # A's own zip holds A only, never the comparison's zip
    with zipfile.ZipFile(started["A"].zip_path) as archive:
        assert not any("compare-" in name for name in archive.namelist())


def test_a_side_that_cannot_start_leaves_the_other_running(start, tmp_path) -> None:
    keyed = Side(backend="nano-banana")  # no key here: it cannot start
    events = list(start_chain(PairSpec(start, 2, STATIC, keyed, ["entropy"]), tmp_path))
    failed = [e for e in events if isinstance(e, compare.SideFailed)]
    assert [(f.side, "needs a key" in f.reason) for f in failed] == [("B", True)]
    assert ended(events)["A"].status == "completed" and "B" not in ended(events)
    (only,) = runs_in(tmp_path)
    record = Comparison.read(only)
    assert record.b is None and "needs a key" in record.failed["B"]
    with zipfile.ZipFile(only.compare_zip_path) as archive:
        assert {n for n in archive.namelist() if n.endswith(".zip")} == {
            f"A-{only.zip_path.name}"}


def test_stop_stops_both(start, tmp_path) -> None:
    stop = threading.Event()
    events = []
    for event in start_chain(PairSpec(start, 50, STATIC, NOISE, ["entropy"]), tmp_path, stop=stop):
        events.append(event)
        scored = {e.side for e in events if isinstance(e, compare.SideEvent)
                  and isinstance(e.event, FrameScored) and e.event.step >= 1}
        if scored == {"A", "B"}:
            stop.set()
    finishes = ended(events)
    assert {side: e.status for side, e in finishes.items()} == {"A": "stopped", "B": "stopped"}
    assert all(e.last_step < 50 for e in finishes.values())


def test_a_pair_whose_reader_left_mid_run_goes_on_as_a_pair(start, tmp_path) -> None:
    """Ended mid-run (its reader gone, as when the tab goes away), both sides stop short and
    the pair has no zip; resumed as a pair, both go on from their last
    frame and the comparison's zip is made, its A/B table from every step."""
    steps = 12
    pair = start_chain(PairSpec(start, steps, STATIC, NOISE, ["entropy"]), tmp_path)
    seen = []
    for event in pair:
        seen.append(event)
        if {e.side for e in seen if isinstance(e, compare.SideEvent)
                and isinstance(e.event, FrameScored) and e.event.step >= 2} == {"A", "B"}:
            break
    pair.close()
    comparison = pair.comparison
    runs = {side: Run(tmp_path / comparison.run_id(side)) for side in "AB"}
    deadline = time.monotonic() + 120  # each pump closes its chain at the chain's next event
    while any(_writing(run) for run in runs.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    for run in runs.values():  # ended before its end (recorded as stopped once closed)
        saved = run.load()
        assert run.live_status(saved.meta["status"]) in {"stopped", "interrupted"}
        assert saved.last_step < steps
    assert not runs["A"].compare_zip_path.exists()
    recorded = Comparison.read(runs["A"])
    opened = {side: Resumption.open(run.path) for side, run in runs.items()}
    made = {side: r.saved.last_step for side, r in opened.items()}
    events = list(compare.Opened(opened, recorded).events())
    assert {side: e.status for side, e in ended(events).items()} == {"A": "completed",
                                                                     "B": "completed"}
    again = {e.side: e.event.step for e in events if isinstance(e, compare.SideEvent)
             and isinstance(e.event, FrameScored)}
    assert all(again[side] == steps for side in "AB")
    assert all(min(e.event.step for e in events if isinstance(e, compare.SideEvent)
                   and e.side == side and isinstance(e.event, FrameScored)) == made[side] + 1
               for side in "AB")
    with zipfile.ZipFile(runs["A"].compare_zip_path) as archive:
        names = set(archive.namelist())
        table = archive.read("comparison.csv").decode()
    assert {"comparison.csv", "compare.json"} <= names
    assert {name.split("-", 1)[0] for name in names if name.endswith(".zip")} == {"A", "B"}
    assert "entropy" in table
    for run in runs.values():
        assert run.load().last_step == steps


def _writing(run: Run) -> bool:
    try:
        os.close(run.lock())
    except RunBusy:
        return True
    return False


def row(metric: str, detects: bool | None, role: str = "metric") -> VerdictRow:
    return VerdictRow(metric, role, (-1.0, math.nan, math.nan), detects, math.nan)


def test_the_lesson_sentence_is_written_from_the_verdicts() -> None:
    rows = [PairRow("brisque", "metric", row("brisque", False), row("brisque", True)),
            PairRow("niqe", "metric", row("niqe", False), row("niqe", True)),
            PairRow("piqe", "metric", row("piqe", False), row("piqe", False)),
            PairRow("entropy", "metric", row("entropy", True), row("entropy", None)),
            PairRow("psnr", "fidelity", row("psnr", True, "fidelity"),
                    row("psnr", True, "fidelity"))]
    sentence = lesson_sentence("static", "white noise", rows)
    assert "brisque and niqe detect white noise but are fooled by static" in sentence
    assert "piqe is fooled by both" in sentence
    assert "psnr" not in sentence  # fidelity is no metric a lesson is about
    assert sentence.count("entropy") == 1 and "left undecided: entropy on B" in sentence
    flipped = [PairRow(r.metric, r.role, r.b, r.a) for r in rows]
    assert "brisque and niqe detect static but are fooled by white noise" in lesson_sentence(
        "static", "white noise", flipped)
    assert lesson_sentence("a", "b", rows[3:]) == ""  # nothing decided on both sides


def test_a_lesson_on_short_runs_says_at_which_step_and_names_the_undecided() -> None:
    """A lesson's runs reach step 5 only: the sentence says so, and a metric with no verdict on
    a side is named with the reason, never left out in silence."""
    def short(metric: str, detects: bool | None, because: str = "") -> VerdictRow:
        return VerdictRow(metric, "metric", (-1.0, math.nan, math.nan), detects, math.nan,
                          undecided_because=because, checkpoints_used=(5,))

    rows = [PairRow("brisque", "metric", short("brisque", False), short("brisque", True)),
            PairRow("niqe", "metric", short("niqe", True), short("niqe", None, "no step 5"))]
    sentence = lesson_sentence("static", "white noise", rows)
    assert sentence.startswith("By the paper's test at step 5 only in these two runs, ")
    assert "left undecided: niqe on B (no step 5)" in sentence
    full = [PairRow("brisque", "metric", row("brisque", False), row("brisque", True))]
    assert "only" not in lesson_sentence("static", "white noise", full)
    assert "undecided" not in lesson_sentence("static", "white noise", full)
    longer = replace(rows[0].b, checkpoints_used=(5, 10))
    mixed = [PairRow("brisque", "metric", rows[0].a, longer)]
    assert "(verdicts read: A's at step 5, B's at steps 5 and 10)" in lesson_sentence(
        "static", "white noise", mixed)


def test_every_lesson_is_a_pair_that_differs() -> None:
    assert {"static-vs-noise", "as-is-vs-smoothed", "pro-vs-flux"} <= set(LESSONS)
    for lesson in LESSONS.values():
        sides.check_pair(lesson.a, lesson.b)


def test_the_record_is_json_in_both_runs(start, tmp_path) -> None:
    events = list(start_chain(PairSpec(start, 1, Side(), Side(smoothed=True), ["entropy"],
                                      lesson="as-is-vs-smoothed"), tmp_path))
    runs = runs_in(tmp_path)
    records = [json.loads(r.compare_file.read_text()) for r in runs]
    assert records[0] == records[1] and records[0]["lesson"] == "as-is-vs-smoothed"
    smoothed = Run(tmp_path / records[0]["b"]).load()
    assert any("smoothed" in note for note in smoothed.meta["settings"]["input_notes"])
    assert len(ended(events)) == 2


def test_a_side_that_fails_on_the_way_keeps_the_other_and_says_why(start, tmp_path) -> None:
    """Side B replays a recorded chain whose frame 2 is damaged: B fails at step 2, A completes,
    and the comparison names B and the reason."""
    archive = tmp_path / "chain.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for i in range(5):
            data = io.BytesIO()
            start.image.rotate(i).save(data, format="PNG")
            zipped.writestr(f"{i}.png", data.getvalue()[:200] if i == 2 else data.getvalue())
    replayed = Side(backend="replay", options={"source": str(archive)})
    root = tmp_path / "runs"
    events = list(start_chain(PairSpec(start, 4, STATIC, replayed, ["entropy"]), root))
    finishes = ended(events)
    assert finishes["A"].status == "completed" and finishes["A"].last_step == 4
    assert finishes["B"].status == "failed" and finishes["B"].last_step == 1
    record = Comparison.read(Run(root / next(e.event.run_dir for e in events
                                         if isinstance(e, compare.SideEvent)
                                         and isinstance(e.event, Started)).name))
    assert set(record.failed) == {"B"} and record.failed["B"]
    assert record.failed["B"] == finishes["B"].reason


def test_the_pair_figure_draws_both_runs_on_each_scores_chart() -> None:
    from banana_space.compare.plots import pair_figure
    from banana_space.explain.plots import mscn_figure
    from banana_space.explain.why import NssReading
    from banana_space.scores.catalog import metric_info
    from banana_space.verdict.history import History

    histories = []
    for slope in (1.0, -2.0):
        history = History([metric_info(name) for name in ("psnr", "brisque", "niqe")])
        for step in range(4):
            history.add(step, {"psnr": 40 - 3 * step, "brisque": 20 + slope * step,
                               "niqe": 5 + step})
        histories.append(history)
    figure = pair_figure(*histories, marked=2)
    by_chart: dict[str, list[dict]] = {}
    for trace in figure["data"]:
        by_chart.setdefault(trace["yaxis"], []).append(trace)
    assert len(by_chart) == 3
    for traces in by_chart.values():
        (a, b) = traces
        assert (a["name"][0], b["name"][0]) == ("A", "B")
        assert a["line"]["color"] == b["line"]["color"]
        assert (a["line"]["dash"], b["line"]["dash"]) == ("solid", "dash")
    colours = {traces[0]["line"]["color"] for traces in by_chart.values()}
    assert len(colours) == 3  # one colour per score
    assert len(figure["layout"]["shapes"]) == 3  # the compared step, on every chart
    # The legend names every curve, not the first chart's alone; each axis reads in % of its
    # score's range, as the Run tab's curves do.
    assert all(trace.get("showlegend", True) for trace in figure["data"])
    assert {t["name"] for t in figure["data"]} == {f"{side} · {name}" for side in "AB"
                                                   for name in ("psnr", "brisque", "niqe")}
    axes = [key for key in figure["layout"] if key.startswith("yaxis")]
    assert len(axes) >= 3 and all(figure["layout"][k]["tickformat"] == ".0%" for k in axes)
    alone = pair_figure(histories[0], None)
    assert {t["name"][0] for t in alone["data"]} == {"A"}

    reading = NssReading(2.0, 1.0, tuple([0.1] * 60))
    frames = {f"frame {i}": reading for i in range(4)}
    assert len(mscn_figure(frames, "t")["data"]) == 8  # every frame: histogram and its fit
