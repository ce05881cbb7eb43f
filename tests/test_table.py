"""The dataset table (issue 11), on the local process pool: discovery without a layout, the
four outputs, broken chains reported and skipped, Ctrl-C, and resume without rescoring."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from chains import FRAMES, METRICS, make_chains

from banana_space.cli import main as cli
from banana_space.sources.listing import chains_in
from banana_space.table.store import resume_file

REPO = Path(__file__).resolve().parent.parent


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    from PIL import Image

    root = tmp_path_factory.mktemp("data") / "chains"
    with Image.open(REPO / "assets" / "examples" / "chelsea.png") as photo:
        return root, make_chains(root, photo.convert("RGB"))


@pytest.fixture(scope="module")
def table(dataset, tmp_path_factory) -> Path:
    """One full table of the dataset, with 2 workers."""
    root, _ = dataset
    out = tmp_path_factory.mktemp("table") / "out"
    assert cli(["table", str(root), "--metrics", ",".join(METRICS), "--out", str(out),
                "--workers", "2"]) == 0
    return out


def test_discovery_needs_no_layout() -> None:
    listing = [(path, 10) for path in (
        "a/b/c/0.png", "a/b/c/1.png", "a/b/c/10.png", "a/b/c/2.png",  # a folder, deep down
        "a/zipped.zip", "anim/x.gif", "lone/one.png",  # an archive, an animation, no chain
        "run/run.json", "run/frames/step_000.png", "run/frames/step_001.png",
        "run/.thumbs/.step_000.png", "run/banana-run.zip",  # a run: its frames, once
        ".cache/0.png", ".cache/1.png", "__MACOSX/a/0.png", "__MACOSX/a/1.png")]
    found = chains_in(listing)
    assert [(path, kind, len(files)) for path, kind, files, _ in found] == [
        ("a/zipped.zip", "zip", 1), ("a/b/c", "folder", 4), ("anim/x.gif", "animation", 1),
        ("run", "folder", 2)]
    assert found[1][2] == ("a/b/c/0.png", "a/b/c/1.png", "a/b/c/2.png", "a/b/c/10.png")
    assert found[3][3] == 20


def test_nothing_found_is_refused_clearly(tmp_path, capsys) -> None:
    (tmp_path / "empty" / "deep").mkdir(parents=True)
    (tmp_path / "empty" / "deep" / "notes.txt").write_text("no frames here")
    assert cli(["table", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert "no chains found in" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_four_outputs(dataset, table, capsys) -> None:
    root, kinds = dataset
    scored = sorted(set(kinds) - {f"{root.name}/broken", f"{root.name}/single/one.gif"})
    columns = ["psnr", "ssim", *METRICS]
    scores = _rows(table / "scores.csv")
    assert list(scores[0]) == ["chain", "step", "metric", "score"]
    assert Counter(r["chain"] for r in scores) == {c: FRAMES * len(columns) for c in scored}
    verdicts = _rows(table / "verdicts.csv")
    assert list(verdicts[0]) == ["chain", "metric", "delta_5", "delta_10", "delta_20",
                                 "detects", "detects_robust", "checkpoints_used",
                                 "undecided_because", "delta_since_input", "worse_than_input",
                                 "spearman_vs_psnr", "spearman_from_first"]
    # Chains of steps 0-6: every verdict was read at step 5 alone, and says so.
    assert {r["checkpoints_used"] for r in verdicts} == {"5"}
    assert {(r["chain"], r["metric"]) for r in verdicts} == {(c, m) for c in scored
                                                             for m in columns}
    # Noise piles up in every chain: fidelity falls at step 5 in each one.
    assert {r["detects"] for r in verdicts if r["metric"] in ("psnr", "ssim")} == {"yes"}
    tallies = {r["metric"]: r for r in _rows(table / "table.csv")}
    assert list(tallies) == columns
    for metric in columns:
        mine = [r for r in verdicts if r["metric"] == metric]
        words = Counter(r["detects"] for r in mine)
        worse_than_input = sum(r["worse_than_input"] == "yes" for r in mine)
        assert tallies[metric] == {"metric": metric, "chains": str(len(scored)),
                                   "detects": str(words["yes"]), "fooled": str(words["no"]),
                                   "undecided": str(words["undecided"]),
                                   "detects_robust": str(sum(r["detects_robust"] == "yes"
                                                             for r in mine)),
                                   "worse_than_input": str(worse_than_input)}
    page = (table / "report.html").read_text()
    assert "Plotly.newPlot" in page and page.count("<tr>") == len(columns) + 1
    assert "skipped broken chain" in page and "broken" in page


def test_a_run_directory_gives_the_verdict_its_own_run_recorded(dataset, table) -> None:
    """The same frames, metrics and verdict math: the table's row equals the run's own."""
    root, _ = dataset
    own = {r["metric"]: r for r in _rows(root / "runs" / "sim" / "verdict.csv")}
    rows = [r for r in _rows(table / "verdicts.csv") if r["chain"] == f"{root.name}/runs/sim"]
    assert {r["metric"] for r in rows} == set(own)
    for row in rows:
        assert row["delta_5"] == own[row["metric"]]["delta_5"]
        assert row["detects"] == own[row["metric"]]["detects"]
        assert row["detects_robust"] == own[row["metric"]]["detects_robust"]


def test_ctrl_c_stops_cleanly_and_a_rerun_scores_only_what_is_left(dataset, table,
                                                                   tmp_path) -> None:
    root, kinds = dataset
    out = tmp_path / "out"
    command = [sys.executable, "-m", "banana_space", "table", str(root), "--metrics",
               ",".join(METRICS), "--out", str(out), "--workers", "1"]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    # Chains go in natural order, one worker: the broken one first, then at least one good.
    while len(list((out / ".chains").glob("*.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    stdout, _ = process.communicate(timeout=120)
    assert process.returncode == 130, stdout
    assert "found 6 chain(s)" in stdout and "run the same command again" in stdout
    first = {f: f.stat().st_mtime_ns for f in (out / ".chains").glob("*.json")
             if not json.loads(f.read_text())["error"]}
    assert 1 <= len(first) < len(kinds) - 2
    assert _rows(out / "table.csv")  # the outputs of what was done are complete files
    rerun = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(first)} chain(s) already scored" in rerun.stdout
    assert all(f.stat().st_mtime_ns == mtime for f, mtime in first.items())  # not rescored
    assert (out / "table.csv").read_text() == (table / "table.csv").read_text()
    assert (out / "scores.csv").read_text() == (table / "scores.csv").read_text()
    assert all(resume_file(out, name).is_file() for name in kinds)


def test_scoring_only_the_checkpoints_leaves_the_rest_unscored_and_resumes_by_steps(
        dataset, tmp_path) -> None:
    """The leaderboard scores only the steps its verdicts read: those (and the last) carry
    scores, every other step is NaN; a table asked for other steps scores the chain again."""
    import math

    from banana_space.table import find_chains, run_table
    from banana_space.table.store import TableStore

    root, _ = dataset
    refs = [ref for ref in find_chains([str(root)]) if ref.name.endswith("cat")]
    out = tmp_path / "out"
    assert run_table(refs, METRICS, out, workers=1, steps=(0, 1, 3), load_seconds=600)
    store = TableStore(out, METRICS, (0, 1, 3))
    assert store.load([refs[0].name]) == [refs[0].name]
    scores = store.results[refs[0].name].scores["brisque"]
    assert [math.isfinite(s) for s in scores] == [True, True, False, True, False, False, True]
    assert TableStore(out, METRICS).load([refs[0].name]) == []  # every frame: not this one


def test_the_table_reads_each_chain_by_its_names_and_keeps_a_gap(tmp_path) -> None:
    """Numbered subfolders beside an input are one chain; a chain with no frame for step 5
    is scored at its true steps (NaN at 5, so Δ5 is missing and its verdict says so); a
    folder of unrelated pictures is reported and skipped, not scored as a chain."""
    import math

    from chains import noisy_chain
    from PIL import Image

    from banana_space.table import find_chains, run_table
    from banana_space.table.store import TableStore

    with Image.open(REPO / "assets" / "examples" / "chelsea.png") as photo:
        chain = noisy_chain(photo.convert("RGB"), 5)
    root = tmp_path / "chains"
    (root / "gap").mkdir(parents=True)
    for step in (0, 1, 2, 3, 4, 6):
        chain[step].save(root / "gap" / f"frame_{step}.png")
    (root / "folders").mkdir()
    chain[0].save(root / "folders" / "input.png")
    for step in range(1, 7):
        (root / "folders" / f"{step:02d}").mkdir()
        chain[step].save(root / "folders" / f"{step:02d}" / "out.png")
    (root / "gallery").mkdir()
    for step, name in enumerate(("chelsea.png", "coffee.png", "rocket.jpg")):
        with Image.open(REPO / "assets" / "examples" / name) as picture:
            picture.convert("RGB").resize((96, 64)).save(root / "gallery" / f"{step}.png")
    refs = find_chains([str(root)])
    assert {ref.name: len(ref.files) for ref in refs} == {
        "chains/folders": 7, "chains/gallery": 3, "chains/gap": 6}
    out = tmp_path / "out"
    assert run_table(refs, ["entropy"], out, workers=1, load_seconds=600)
    store = TableStore(out, ["entropy"])
    assert store.load([ref.name for ref in refs]) == ["chains/folders", "chains/gap"]
    histories = store.histories()
    gap, folders = (histories[f"chains/{name}"].scores["entropy"] for name in ("gap", "folders"))
    assert [math.isnan(score) for score in gap] == [False] * 5 + [True, False]
    # The same pixels at the same steps, however the folder names them.
    assert folders[:5] == gap[:5] and folders[6] == gap[6] and not math.isnan(folders[5])
    verdicts = {r["chain"]: r for r in _rows(out / "verdicts.csv") if r["metric"] == "entropy"}
    assert verdicts["chains/gap"]["undecided_because"] == "no score at step 5"
    assert verdicts["chains/folders"]["checkpoints_used"] == "5"
    broken = json.loads(resume_file(out, "chains/gallery").read_text())["error"]
    assert broken.startswith("chains/gallery is not a chain: steps 0 and 1 are ")
