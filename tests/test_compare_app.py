"""`compare_chains` on the real app (page/compare_tab/tab.py): through gradio_client and the `mcp`
client it runs two chains from one image and answers both run ids and one link; identical
settings are refused with a sentence; both chains count against the visitor's caps like two
runs (a cost cap one run fits and two do not refuses a comparison, not a run)."""

from __future__ import annotations

import asyncio
import json
import secrets
import signal
import zipfile
from concurrent.futures import ThreadPoolExecutor

import httpx
import psutil
import pytest
from app_server import running_app
from gradio_client import Client, handle_file
from raw_api import call, dependencies
from test_mcp import answer, data_url, session_call
from visitors import file_data, wait_for

from banana_space.store.run import Run

pytestmark = pytest.mark.app

STATIC, NOISE = '{"profile": "nano-banana-pro"}', '{"profile": "white-noise", "seed": 4}'


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    runs = tmp_path_factory.mktemp("compare") / "runs"
    with running_app(runs) as url:
        yield url, runs


@pytest.fixture()
def small_photo(photo, tmp_path):
    path = tmp_path / "small.png"
    photo.resize((96, 64)).save(path)
    return path


def test_compare_chains_through_gradio_client(app, small_photo) -> None:
    url, runs = app
    client = Client(url, verbose=False)
    answered = json.loads(client.predict(handle_file(str(small_photo)), 3, STATIC, NOISE,
                                         "entropy, brisque", "", api_name="/compare_chains"))
    a, b = answered["runs"]["A"], answered["runs"]["B"]
    assert a["run"] != b["run"] and a["status"] == b["status"] == "completed"
    assert a["last_step"] == b["last_step"] == 3
    assert answered["link"].endswith(f"/?compare={a['run']}") and answered["failed"] == {}
    assert set(a["verdict"]) == set(b["verdict"]) == {"entropy", "brisque", "psnr", "ssim"}
    # one input, scored once: the same numbers at step 0 on both sides
    first = {side: Run(runs / run["run"]).load().history.scores["brisque"][0]
             for side, run in answered["runs"].items()}
    assert first["A"] == first["B"]
    for run in (a, b):  # each side is the caller's run, like run_chain's
        assert Run(runs / run["run"]).made_by is not None
        assert json.loads(Run(runs / run["run"]).compare_file.read_text())["a"] == a["run"]

    with pytest.raises(Exception, match="A and B are the same settings"):
        client.predict(handle_file(str(small_photo)), 2, STATIC, '{"seed": 0}', "entropy", "",
                       api_name="/compare_chains")
    with pytest.raises(Exception, match="Side B takes no colour"):
        client.predict(handle_file(str(small_photo)), 2, STATIC, '{"colour": 1}', "entropy", "",
                       api_name="/compare_chains")
    with pytest.raises(Exception, match="steps must be a whole number between 1 and 100"):
        client.predict(handle_file(str(small_photo)), 500, STATIC, NOISE, "entropy", "",
                       api_name="/compare_chains")


def test_compare_chains_through_mcp(app, photo) -> None:
    url, runs = app
    image = data_url(photo.resize((96, 64)))
    tools, (ran, same) = asyncio.run(session_call(f"{url}gradio_api/mcp/", [
        ("compare_chains", {"image": image, "steps": 2, "a": STATIC, "b": NOISE,
                            "metrics": "entropy"}),
        ("compare_chains", {"image": image, "steps": 2, "a": "{}",
                            "b": '{"generator": "simulate", "profile": "nano-banana-pro"}',
                            "metrics": "entropy"}),
    ]))
    assert "compare_chains" in {tool.name for tool in tools}
    both = answer(ran)
    assert {side: run["status"] for side, run in both["runs"].items()} == {
        "A": "completed", "B": "completed"}
    assert (runs / both["runs"]["B"]["run"] / "run.json").is_file()
    assert same.isError and "A and B are the same settings" in same.content[0].text


def test_a_comparisons_sides_are_admitted_together(tmp_path, small_photo) -> None:
    # A cost cap of 1 pixel-step: a visitor's first chain is always admitted, a second beside
    # it is not; a comparison's two sides are admitted together, its A never counted against
    # its B (tests/test_pair_caps.py counts them as two against the chains' caps).
    with running_app(tmp_path / "runs", BANANA_COST_PER_VISITOR="0.000001") as url:
        client = Client(url, verbose=False)
        ran = json.loads(client.predict(handle_file(str(small_photo)), 1, "simulate", "entropy",
                                        0, "", "", api_name="/run_chain"))
        assert ran["status"] == "completed"
        pair = json.loads(client.predict(handle_file(str(small_photo)), 1, STATIC, NOISE,
                                         "entropy", "", api_name="/compare_chains"))
        assert [pair["runs"][side]["status"] for side in "AB"] == ["completed", "completed"]


def test_a_comparison_killed_mid_run_resumes_as_a_pair_from_the_compare_tab(tmp_path,
                                                                          small_photo) -> None:
    """The server is killed mid-comparison (SIGKILL: no zip, both sides interrupted): after a
    restart its maker's
    Resume both, in the Compare tab, takes both chains on from their last frames as one pair
    and makes the comparison's zip; another browser is refused."""
    runs = tmp_path / "runs"
    local = {"BANANA_OWNER_KEY": "the-operators-key-" + secrets.token_hex(8),
             "BANANA_REAL_CHAINS": "off"}
    steps, prompt = 40, "Produce an exact copy of this image. Do not change anything."
    with running_app(runs, **local) as url:
        cookie = {"Cookie": "; ".join(f"{k}={v}" for k, v in httpx.get(url).cookies.items())}
        with small_photo.open("rb") as handle:
            uploaded = httpx.post(f"{url}gradio_api/upload", files={"files": handle},
                                  headers=cookie).json()[0]
        sides = ["simulate", "nano-banana-pro", False, prompt, 0,
                 "simulate", "white-noise", False, prompt, 0]
        with ThreadPoolExecutor(1) as pool:
            pool.submit(call, url, dependencies(url)["run_compare"],
                        [file_data(uploaded), steps, ["entropy"], "", *sides], headers=cookie)
            wait_for(lambda: len(list(runs.glob("*/frames/step_002.png"))) == 2,
                     what="both sides' first frames")
            (server,) = [child for child in psutil.Process().children()
                         if child.environ().get("BANANA_RUNS_DIR") == str(runs)]
            server.send_signal(signal.SIGKILL)
            server.wait(60)
    pair = json.loads(next(runs.glob("*/compare.json")).read_text())
    assert not Run(runs / pair["a"]).compare_zip_path.exists()
    for side in ("a", "b"):
        killed = Run(runs / pair[side])
        assert killed.live_status(killed.load().meta["status"]) == "interrupted"
    with running_app(runs, **local) as url:
        resume = dependencies(url)["resume_compare"]
        stranger = call(url, resume, [pair["a"]], headers={"Cookie": "; ".join(
            f"{k}={v}" for k, v in httpx.get(url).cookies.items())})
        assert not stranger.success and "Only the visitor who started" in stranger.error
        resumed = call(url, resume, [pair["a"]], headers=cookie, timeout=600)
        assert resumed.success, resumed.error
    for side in ("a", "b"):
        assert Run(runs / pair[side]).load().meta["status"] == "completed"
        assert Run(runs / pair[side]).load().last_step == steps
    with zipfile.ZipFile(Run(runs / pair["a"]).compare_zip_path) as archive:
        assert {"comparison.csv", "compare.json"} <= set(archive.namelist())
