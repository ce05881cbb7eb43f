"""Links that survive a restart (banana_space/chain/persist.py): a bundled recording opens from its
link on a fresh server, and with BANANA_RUNS_REPO the finished runs are committed together to a
hub dataset, sharded by id, and restored from it when a link is opened after the runs folder was
wiped; with a bucket mounted as the runs folder nothing is committed at all. The hub is
`FakeHubWrite`, driven by the real `huggingface_hub` client (in the app: HF_ENDPOINT and
HF_HUB_DISABLE_XET=1 in its environment)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from conftest import REPO
from fake_hub_write import FakeHubWrite, is_binary

from banana_space.chain import persist
from banana_space.chain.runs import RunSpec, start_run
from banana_space.events import Started
from banana_space.scores.pool import MetricPool
from banana_space.store.run import Run
from banana_space.store.runids import BadRunId

RECORDED = REPO / "assets" / "recorded"
RUNS_REPO = "banana-lab/banana-runs"
OWNERS_TOKEN = "hf_fake_token_for_tests_0002"  # the Space's secret: the runs repo is private


def test_a_bundled_recording_is_copied_in_when_its_link_is_opened(tmp_path: Path) -> None:
    persist.restore(tmp_path, "dunes-simulated-30", RECORDED)
    assert Run(tmp_path / "dunes-simulated-30").load().last_step == 30
    persist.restore(tmp_path, "no-such-run", RECORDED)  # nothing found: nothing written
    for bad in ("../dunes-simulated-30", "a/b", ".thumbs", "", None, "x" * 200):
        with pytest.raises(BadRunId):
            persist.restore(tmp_path, bad, RECORDED)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dunes-simulated-30"]


@pytest.fixture()
def hub(monkeypatch, engine_env, tmp_path_factory):
    from huggingface_hub import constants

    # A cache of this test's own: the stand-in's commits are numbered afresh in every test, so
    # a file downloaded by another test (or another day's run) would be read back as this one's.
    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path_factory.mktemp("hf")))
    with FakeHubWrite(token=OWNERS_TOKEN) as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        monkeypatch.setenv("HF_TOKEN", OWNERS_TOKEN)
        # Commits come when the test flushes, never from the timer.
        engine_env(**{persist.RUNS_REPO_ENV: RUNS_REPO, "BANANA_RUNS_COMMIT_S": "36000"})
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
        monkeypatch.setattr(persist, "_created", set())
        monkeypatch.setattr(persist, "_queued", {})
        yield fake
        persist.flush()  # nothing left queued for another test's hub


def _pushed() -> None:
    """Commit the runs queued so far and wait for the commit."""
    persist.flush().result(timeout=120)


def test_a_finished_run_is_pushed_once_and_restored_after_a_wipe(hub, tmp_path, photo,
                                                                  weights_dir) -> None:
    root = tmp_path / "runs"
    spec = RunSpec(photo.resize((64, 48)), 2, "simulate", metrics=["entropy"])
    events = list(start_run(spec, root, pool=MetricPool(device="cpu", load_seconds=600)))
    _pushed()
    run = next(e.run_dir for e in events if isinstance(e, Started))
    kept = {name.split("/", 3)[3]: data for name, data in hub.datasets[RUNS_REPO].items()}
    assert Run(run).load().last_step == 2
    assert set(kept) == {"run.json", "scores.csv", "verdict.csv", "steps.csv",
                         *(f"frames/step_{i:03d}.png" for i in range(3)),
                         *(f".thumbs/.step_{i:03d}.png" for i in range(3))}
    kept_at = persist.in_repo(run.name)
    assert all(name.startswith(f"{kept_at}/") for name in hub.datasets[RUNS_REPO])
    assert [c["repo"] for c in hub.commits] == [f"dataset/{RUNS_REPO}"]  # one commit
    assert set(hub.commits[0]["lfs"]) == {f"{kept_at}/{n}" for n in kept
                                          if is_binary(kept[n])}
    assert hub.repos[f"dataset/{RUNS_REPO}"]["visibility"] == "private"
    assert "hf_fake_token" not in json.dumps({n: d.decode(errors="replace")
                                              for n, d in kept.items()})
    shutil.rmtree(root)
    root.mkdir()
    persist.restore(root, run.name, RECORDED)
    restored = Run(root / run.name).load()
    assert restored.meta["status"] == "completed" and restored.last_step == 2
    for name, data in kept.items():
        assert (root / run.name / name).read_bytes() == data
    assert not (root / persist.STAGING).exists() or not any((root / persist.STAGING).iterdir())


def test_the_rooms_votes_are_kept_with_the_run_and_restored(hub, tmp_path, photo) -> None:
    from banana_space.votes import Vote

    root = tmp_path / "runs"
    list(start_run(RunSpec(photo.resize((64, 48)), 2, "simulate", metrics=["entropy"]), root,
                   run_id="voted"))
    _pushed()
    run = Run(root / "voted")
    for index in range(12):  # a vote after the run ended: the run is pushed again with it
        run.ledger().cast(Vote(f"voter-{index}", 1, 2, "earlier" if index < 10 else "later"),
                          run.verdict_file, 2)
    persist.push_run(run.path)
    _pushed()
    kept, verdict = run.votes_file.read_bytes(), run.verdict_file.read_bytes()
    shutil.rmtree(root)
    root.mkdir()
    persist.restore(root, "voted", RECORDED)
    assert run.votes_file.read_bytes() == kept and run.verdict_file.read_bytes() == verdict
    assert [(p.n, p.prefer_a) for p in run.ledger().pairs()] == [(12, 10)]


def test_restore_takes_only_a_run_directorys_files(hub, tmp_path) -> None:
    run, older = "20260101-000000-abcdef", "20250101-000000-abcdef"
    at = persist.in_repo(run)
    hub.datasets[RUNS_REPO] = {f"{at}/run.json": b'{"status": "completed"}',
                               f"{at}/steal.sh": b"echo", f"{at}/frames/x.py": b"",
                               f"{at}-other/run.json": b"{}",
                               # kept by a version before the shards: still restored
                               f"runs/{older}/run.json": b'{"status": "completed"}'}
    persist.restore(tmp_path, run, RECORDED)
    persist.restore(tmp_path, older, RECORDED)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")
                  if p.is_file()) == [f"{older}/run.json", f"{run}/run.json"]
    persist.restore(tmp_path, "20260101-000000-000000", RECORDED)  # not kept: nothing
    assert not (tmp_path / "20260101-000000-000000").exists()


def test_fifty_runs_take_one_commit_in_shards_and_a_commit_is_cut_between_runs(
        hub, tmp_path, photo, weights_dir, monkeypatch) -> None:
    root = tmp_path / "runs"
    spec = RunSpec(photo.resize((32, 24)), 1, "simulate", metrics=["entropy"])
    pool = MetricPool(device="cpu", load_seconds=600)
    runs = [next(e.run_dir for e in list(start_run(spec, root, pool=pool))
                 if isinstance(e, Started)) for _ in range(50)]
    assert hub.commits == []  # queued, not committed one by one
    _pushed()
    assert len(hub.commits) == 1 and hub.commits[0]["message"] == "50 finished run(s)"
    kept = hub.datasets[RUNS_REPO]
    for run in runs:
        assert f"{persist.in_repo(run.name)}/run.json" in kept
    shards = {name.split("/")[1] for name in kept}
    per_shard = max(sum(persist.in_repo(r.name).split("/")[1] == s for r in runs) for s in shards)
    assert all(len(shard) == 2 for shard in shards) and len(shards) > 25 and per_shard <= 5
    files_per_run = sum(1 for name in kept if name.startswith(persist.in_repo(runs[0].name)))
    assert files_per_run == 8  # run.json, three CSVs, two frames, two thumbnails
    # At most MAX_FILES_PER_COMMIT files a commit, cut between runs: 3 runs (24 files) each.
    monkeypatch.setattr(persist, "MAX_FILES_PER_COMMIT", 3 * files_per_run + 1)
    kept.clear()  # else the client skips files the dataset holds already
    for run in runs:
        persist.push_run(run)
    _pushed()
    later = hub.commits[1:]
    assert len(later) == 17 and all(len(c["paths"]) <= 3 * files_per_run for c in later)
    for run in runs:  # each run's files in one commit, all of them
        at = f"{persist.in_repo(run.name)}/"
        holding = [sum(p.startswith(at) for p in c["paths"]) for c in later]
        assert sorted(holding)[-2:] == [0, files_per_run], run.name


def test_runs_a_failed_commit_held_are_committed_with_the_next_and_a_gone_one_skipped(
        hub, tmp_path, photo, weights_dir, capfd) -> None:
    """The hub is down at one commit: its runs wait for the next (one line in the log for the
    outage, however many commits fail), and a run pruned meanwhile is skipped."""
    root = tmp_path / "runs"
    spec = RunSpec(photo.resize((32, 24)), 1, "simulate", metrics=["entropy"])
    pool = MetricPool(device="cpu", load_seconds=600)
    runs = [next(e.run_dir for e in list(start_run(spec, root, pool=pool))
                 if isinstance(e, Started)) for _ in range(3)]
    hub.down = True
    _pushed()
    _pushed()  # still down: the runs are still queued
    assert hub.commits == []
    said = capfd.readouterr().err
    assert said.count("not kept in") == 1 and "retried with the next commit" in said, said
    shutil.rmtree(runs[1])  # pruned while it waited
    hub.down = False
    _pushed()
    assert len(hub.commits) == 1 and hub.commits[0]["message"] == "2 finished run(s)"
    kept = {name.split("/")[2] for name in hub.datasets[RUNS_REPO]}
    assert kept == {runs[0].name, runs[2].name}
    assert "kept in" in capfd.readouterr().err
    assert persist.flush() is None  # nothing left queued


def test_without_the_variable_nothing_is_pushed(tmp_path, photo, engine_env,
                                                weights_dir) -> None:
    engine_env(**{persist.RUNS_REPO_ENV: None})
    assert persist.push_run(tmp_path) is False and persist.flush() is None


@pytest.mark.app
def test_a_runs_link_survives_a_restart_and_a_recording_opens_cold(tmp_path, photo_path,
                                                                   browser) -> None:
    from app_server import running_app
    from gradio_client import Client, handle_file

    runs = tmp_path / "runs"
    with FakeHubWrite(token=OWNERS_TOKEN) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_HUB_OFFLINE": "0",
               "HF_TOKEN": OWNERS_TOKEN, "HF_HOME": str(tmp_path / "hf"),
               persist.RUNS_REPO_ENV: RUNS_REPO, "BANANA_RUNS_COMMIT_S": "1"}
        with running_app(runs, **env) as url:
            answer = json.loads(Client(url, verbose=False).predict(
                handle_file(str(photo_path)), 2, "simulate", "entropy", 0, "",
                api_name="/run_chain"))
            run_id = answer["run"]
            deadline = time.monotonic() + 120
            while f"{persist.in_repo(run_id)}/run.json" not in hub.datasets.get(RUNS_REPO, {}):
                assert time.monotonic() < deadline, "the finished run was never pushed"
                time.sleep(0.5)
        shutil.rmtree(runs)  # a Space's restart wipes its disk
        with running_app(runs, **env) as url:
            reopened = json.loads(Client(url, verbose=False).predict(run_id,
                                                                     api_name="/open_run"))
            assert (reopened["status"], reopened["last_step"]) == ("completed", 2)
            assert reopened["verdict"] == answer["verdict"]
            page = browser.new_page()
            for link, steps in ((f"?run={run_id}", 2), ("?run=dunes-simulated-30", 30)):
                page.goto(url + link)
                page.wait_for_function(
                    "document.querySelectorAll('#strip .strip img').length > 0", timeout=60_000)
                shown = page.locator("#strip .strip img").count()
                status = page.locator("#status").inner_text()
                assert shown == steps + 1 and "No run called" not in status, (link, status)
            page.close()


@pytest.mark.app
def test_runs_on_a_mounted_bucket_survive_a_restart_with_nothing_uploaded(tmp_path) -> None:
    """`deploy --bucket` points BANANA_RUNS_DIR into the bucket's mount; a folder stands in for
    the mount here. The server's own disk (its caches) is new after the restart, the mount is
    not, and the run's link opens with every file as it was, without a commit anywhere."""
    from app_server import running_app
    from gradio_client import Client, handle_file

    from banana_space.deploy import RUNS_IN_BUCKET

    mount = tmp_path / "bucket"
    runs = mount / Path(RUNS_IN_BUCKET).relative_to("/data")
    runs.mkdir(parents=True)
    with FakeHubWrite(token=OWNERS_TOKEN) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_HUB_OFFLINE": "0",
               "HF_TOKEN": OWNERS_TOKEN, persist.RUNS_REPO_ENV: ""}
        with running_app(runs, HF_HOME=str(tmp_path / "disk-1"), **env) as url:
            answer = json.loads(Client(url, verbose=False).predict(
                handle_file(str(RECORDED / "dunes-simulated-30" / "frames" / "step_000.png")),
                2, "simulate", "entropy", 0, "", api_name="/run_chain"))
        before = {p.relative_to(runs): p.read_bytes() for p in runs.rglob("*") if p.is_file()}
        with running_app(runs, HF_HOME=str(tmp_path / "disk-2"), **env) as url:
            reopened = json.loads(Client(url, verbose=False).predict(answer["run"],
                                                                     api_name="/open_run"))
    assert (reopened["status"], reopened["last_step"]) == ("completed", 2)
    assert reopened["verdict"] == answer["verdict"]
    run_files = {p for p in before if p.parts[0] == answer["run"]}
    assert len(run_files) >= 8  # run.json, the CSVs, three frames and their thumbnails
    assert all((runs / p).read_bytes() == before[p] for p in run_files)
    assert hub.commits == [] and hub.datasets == {}
