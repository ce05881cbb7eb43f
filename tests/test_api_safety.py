"""Every input that names a run is a run id confined to the runs folder (issue 13, item 1;
issue 18, item 1): through gradio_client by name, and through raw HTTP by index (the page's
private events included), with absolute paths, `..`, a symlink inside the runs folder that
points out, an id that does not exist, an over-long id and a NUL byte. Each is refused with a
clear message that quotes no server path, and nothing is written anywhere."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from app_server import running_app
from conftest import REPO
from gradio_client import Client
from raw_api import call, dependencies

from banana_space.compare.lessons import LESSONS
from page.door.operator_key import KEY_FILE  # the operator key kept beside the runs

pytestmark = pytest.mark.app

RECORDED = REPO / "assets" / "recorded" / "dunes-simulated-30"


def snapshot(*folders: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folders`, with its size and modification time."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns)
            for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("safety")
    runs, outside = base / "runs", base / "outside"
    runs.mkdir()
    # A run outside the runs folder, with more steps asked than made: resuming it would write.
    victim = outside / "victim"
    shutil.copytree(RECORDED, victim)
    meta = json.loads((victim / "run.json").read_text())
    meta["steps"] = meta["settings"]["steps"] = 30
    meta["status"] = "stopped"
    (victim / "run.json").write_text(json.dumps(meta))
    (runs / "escape").symlink_to(victim, target_is_directory=True)
    shutil.copytree(RECORDED, runs / "good")  # a real run: the control that calls can pass
    with running_app(runs) as url:
        yield {"url": url, "runs": runs, "outside": outside, "victim": victim}


def hostile_ids(site: dict) -> list[str]:
    return [str(site["victim"]), "/etc", str(site["runs"] / "good"), "../outside/victim",
            "good/../../outside/victim", "escape", "no-such-run", "x" * 100_000, "good\x00",
            ".", "..", ""]


def assert_refused(error: str, run_id: str) -> None:
    assert error, f"{run_id[:60]!r} was accepted"
    assert "/tmp/" not in error and str(REPO) not in error, error  # no server path
    assert "<" not in error.replace("&lt;", ""), error  # no markup


def test_named_endpoints_refuse_every_hostile_id_and_write_nothing(site) -> None:
    before = snapshot(site["outside"], REPO / "assets")
    client = Client(site["url"], verbose=False)
    calls = {"/open_run": lambda i: [i], "/resume_chain": lambda i: [i, ""],
             "/open": lambda i: [i, False], "/resume": lambda i: [i, "", False],
             "/vote": lambda i: [i, 1, 5, "earlier", ""]}
    for api_name, args in calls.items():
        for run_id in hostile_ids(site):
            with pytest.raises(Exception) as refused:
                client.predict(*args(run_id), api_name=api_name)
            assert_refused(str(refused.value), run_id)
    # The control: a real id is accepted (so the refusals above are not a broken client).
    assert json.loads(client.predict("good", api_name="/open_run"))["status"] == "completed"
    assert snapshot(site["outside"], REPO / "assets") == before
    assert sorted(p.name for p in site["runs"].iterdir() if p.name != KEY_FILE) == [
        "escape", "good"]


def test_every_event_by_index_refuses_every_hostile_id_and_writes_nothing(site) -> None:
    """What the page posts, posted by anyone: the private `redraw` and `compare` events (once
    able to zip any folder) and the named ones, by index."""
    before = snapshot(site["outside"], REPO / "assets")
    index = dependencies(site["url"])
    calls = {"redraw": lambda i: [i, True], "compare": lambda i: [i, 1],
             "open": lambda i: [i, False], "resume": lambda i: [i, "", False],
             "open_run": lambda i: [i], "resume_chain": lambda i: [i, ""],
             "vote_left": lambda i: [i, "1,5,L,0"], "refresh": lambda i: [i, "", i, 1, False]}
    for name, args in calls.items():
        for run_id in hostile_ids(site):
            if not run_id and name in ("redraw", "compare", "refresh"):
                continue  # an empty field is the page before any run: nothing to do
            answer = call(site["url"], index[name], args(run_id))
            assert not answer.success, (name, run_id[:60], answer.data)
            assert_refused(answer.error or "", run_id)
    good = call(site["url"], index["compare"], ["good", 1])
    assert good.success and good.data[0]["value"][1]["path"].endswith("step_001.png")
    # A step the run lacks (the page's slider may still hold a longer run's) shows nothing,
    # re-makes nothing and is no error.
    beyond = call(site["url"], index["compare"], ["good", 10**6])
    assert beyond.success, beyond.error
    assert snapshot(site["outside"], REPO / "assets") == before
    assert not list(site["outside"].rglob("*.zip"))


def test_the_shared_link_query_is_confined_and_escaped(site) -> None:
    """`?run=` reaches the page's load event: a hostile value gets an escaped refusal."""
    index = dependencies(site["url"])["on_load"]
    for run_id in ["../outside/victim", '<a href=http://x style=font-size:40px>Session '
                   'expired</a><img src=http://host/x.png>']:
        answer = call(site["url"], index, [], query="?run=" + run_id.replace(" ", "%20"))
        assert not answer.success
        assert_refused(answer.error or "", run_id)
        assert "<img" not in (answer.error or "") and "<a " not in (answer.error or "")


def test_a_server_path_as_an_upload_is_not_read(site) -> None:
    """A file input holding a server path (not an upload) is refused before the handler."""
    index = dependencies(site["url"])["run_chain"]
    secret = site["outside"] / "secret.png"
    shutil.copyfile(RECORDED / "frames" / "step_000.png", secret)
    answer = call(site["url"], index, [{"path": str(secret), "meta": {"_type": "gradio.FileData"}},
                                       2, "simulate", "", 0, ""])
    assert not answer.success
    assert sorted(p.name for p in site["runs"].iterdir() if p.name != KEY_FILE) == [
        "escape", "good"]


def test_recorded_examples_are_copied_in_before_anything_writes(site) -> None:
    """Opening a bundled recording copies it into the runs folder; resuming that copy writes
    there, never into the app's own assets."""
    before = snapshot(REPO / "assets")
    index = dependencies(site["url"])
    names = sorted(p.name for p in RECORDED.parent.iterdir() if p.is_dir())
    assert all(call(site["url"], index["open_recorded"], [name, False]).success
               for name in names)
    assert not call(site["url"], index["open_recorded"], ["../../tests", False]).success
    assert (site["runs"] / "dunes-simulated-30" / "run.json").is_file()
    assert os.path.realpath(site["runs"] / "dunes-simulated-30") != str(RECORDED)
    assert snapshot(REPO / "assets") == before


def test_the_api_pages_example_runs_a_chain_and_reads_the_verdict(site, photo_path,
                                                                  capsys) -> None:
    page = (REPO / "docs" / "api.md").read_text()
    example = page.split("## API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(example.strip().splitlines()) == 5
    exec(example.replace("http://127.0.0.1:7860/", site["url"])
         .replace('"photo.png"', repr(str(photo_path))), {})
    printed = capsys.readouterr().out
    assert "'psnr': 'yes'" in printed and "'brisque':" in printed and "/?run=" in printed


def test_the_documented_api_is_the_product_and_no_plumbing(site) -> None:
    client = Client(site["url"], verbose=False)
    api = client.view_api(return_format="dict", print_info=False)
    lesson_prompts = {"/lesson_" + key.replace("-", "_") for key in LESSONS}  # MCP prompts
    assert set(api["named_endpoints"]) == {"/run_chain", "/score_chain", "/resume_chain",
                                           "/open_run", "/stop", "/list_options",
                                           "/check_degradation", "/compare_chains", "/vote",
                                           *lesson_prompts}
    assert not api["unnamed_endpoints"]
    for name in ("/redraw", "/compare", "/preview", "/lambda", "/lambda_1", "/on_load"):
        with pytest.raises(ValueError, match="Cannot find a function"):
            client.predict(api_name=name)
    options = json.loads(client.predict(api_name="/list_options"))
    assert {g["name"] for g in options["generators"]} >= {"simulate", "replay"}
