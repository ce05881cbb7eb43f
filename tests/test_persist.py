"""Links that survive a restart (banana_space/persist.py): a bundled recording opens from its
link on a fresh server, and with BANANA_RUNS_REPO every finished run is pushed to a hub dataset
and restored from it when its link is opened after the runs folder was wiped. The hub is
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

from banana_space import persist
from banana_space.events import Started
from banana_space.pool import MetricPool
from banana_space.run import Run
from banana_space.runids import BadRunId
from banana_space.runs import RunSpec, start_run

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
def hub(monkeypatch, engine_env):
    from huggingface_hub import constants

    with FakeHubWrite(token=OWNERS_TOKEN) as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        monkeypatch.setenv("HF_TOKEN", OWNERS_TOKEN)
        engine_env(**{persist.RUNS_REPO_ENV: RUNS_REPO})
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
        monkeypatch.setattr(persist, "_created", set())
        yield fake


def _pushed() -> None:
    """Wait for the pushes queued so far (one worker: a no-op queued after them)."""
    persist._pushes.submit(lambda: None).result(timeout=120)


def test_a_finished_run_is_pushed_once_and_restored_after_a_wipe(hub, tmp_path, photo,
                                                                  weights_dir) -> None:
    root = tmp_path / "runs"
    spec = RunSpec(photo.resize((64, 48)), 2, "simulate", metrics=["entropy"])
    events = list(start_run(spec, root, pool=MetricPool(device="cpu", load_seconds=600)))
    _pushed()
    run = next(e.run_dir for e in events if isinstance(e, Started))
    kept = {name.split("/", 2)[2]: data for name, data in hub.datasets[RUNS_REPO].items()}
    assert Run(run).load().last_step == 2
    assert set(kept) == {"run.json", "scores.csv", "verdict.csv", "steps.csv",
                         *(f"frames/step_{i:03d}.png" for i in range(3)),
                         *(f".thumbs/.step_{i:03d}.png" for i in range(3))}
    assert all(name.startswith(f"runs/{run.name}/") for name in hub.datasets[RUNS_REPO])
    assert [c["repo"] for c in hub.commits] == [f"dataset/{RUNS_REPO}"]  # one commit
    assert set(hub.commits[0]["lfs"]) == {f"runs/{run.name}/{n}" for n in kept
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


def test_restore_takes_only_a_run_directorys_files(hub, tmp_path) -> None:
    run = "20260101-000000-abcdef"
    hub.datasets[RUNS_REPO] = {f"runs/{run}/run.json": b'{"status": "completed"}',
                               f"runs/{run}/steal.sh": b"echo", f"runs/{run}/frames/x.py": b"",
                               f"runs/{run}-other/run.json": b"{}"}
    persist.restore(tmp_path, run, RECORDED)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")
                  if p.is_file()) == [f"{run}/run.json"]
    persist.restore(tmp_path, "20260101-000000-000000", RECORDED)  # not kept: nothing
    assert not (tmp_path / "20260101-000000-000000").exists()


def test_without_the_variable_nothing_is_pushed(tmp_path, photo, engine_env,
                                                weights_dir) -> None:
    engine_env(**{persist.RUNS_REPO_ENV: None})
    assert persist.push_run(tmp_path) is None


@pytest.mark.app
def test_a_runs_link_survives_a_restart_and_a_recording_opens_cold(tmp_path, photo_path,
                                                                   browser) -> None:
    from app_server import running_app
    from gradio_client import Client, handle_file

    runs = tmp_path / "runs"
    with FakeHubWrite(token=OWNERS_TOKEN) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_HUB_OFFLINE": "0",
               "HF_TOKEN": OWNERS_TOKEN, "HF_HOME": str(tmp_path / "hf"),
               persist.RUNS_REPO_ENV: RUNS_REPO}
        with running_app(runs, **env) as url:
            answer = json.loads(Client(url, verbose=False).predict(
                handle_file(str(photo_path)), 2, "simulate", "entropy", 0, "",
                api_name="/run_chain"))
            run_id = answer["run"]
            deadline = time.monotonic() + 120
            while f"runs/{run_id}/run.json" not in hub.datasets.get(RUNS_REPO, {}):
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
