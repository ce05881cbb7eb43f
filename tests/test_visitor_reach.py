"""What an anonymous visitor can reach on a Space (issue 31): the hub repos it names, read
anonymously (never with the Space's token); only the metrics the server offers; only its own
runs in the picker, and only its own runs to resume; the hub files its replays fetch, within its
share; and a run restored from BANANA_RUNS_REPO, which goes through retention. Each through the
channel the attack used: gradio_client, raw HTTP on gradio's queue, the `mcp` client, the real
huggingface_hub client (in the app) against `FakeHubWrite`, which answers a private repo as the
hub does. The app starts as a Space starts it: HF_TOKEN as a secret, BANANA_RUNS_REPO set,
BANANA_TRUST_PROXY=1 (visitors are told apart by X-Forwarded-For). Each test failed before its
fix."""

from __future__ import annotations

import asyncio
import io
import json
import os
import secrets
import shutil
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from app_server import STATUS, running_app
from fake_hub_write import FakeHubWrite
from gradio_client import handle_file
from PIL import Image
from raw_api import call, dependencies
from test_mcp import answer, session_call
from visitors import browser_cookie, client, noise, wait_for

from banana_space.chain.runs import RunSpec, start_run
from banana_space.events import Started
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.scores.pool import MetricPool
from banana_space.store.run import Run, RunBusy

pytestmark = pytest.mark.app

OWNERS_TOKEN = "hf_the_spaces_own_secret_0031"
RUNS_REPO = "the-owner/banana-runs"  # private: the Space's finished runs
PRIVATE = "the-owner/unreleased-chains"  # private: another of the owner's datasets
PUBLIC = "someone/public-chain"
HUB_KB_PER_VISITOR = 60  # a 4-frame public chain of noise (~37 KB) fits once, not twice
KEEP_RUNS = 6
SETTINGS = {"BANANA_TRUST_PROXY": "1", "HF_TOKEN": OWNERS_TOKEN, "BANANA_RUNS_REPO": RUNS_REPO,
            "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1", "BANANA_REAL_CHAINS": "off",
            "BANANA_KEEP_RUNS": str(KEEP_RUNS), "BANANA_RUNS_PER_VISITOR": str(KEEP_RUNS),
            "BANANA_CHAINS_PER_VISITOR": "3", "BANANA_COST_PER_VISITOR": "25",
            "BANANA_HUB_MB_PER_VISITOR": str(HUB_KB_PER_VISITOR / 1000),
            "GRADIO_HEARTBEAT_INTERVAL": "1"}
TOKEN = "a-secret-of-this-test-" + secrets.token_hex(8)
RESTORED = [f"20250101-00000{i}-abcdef" for i in range(KEEP_RUNS + 2)]  # kept on the hub


def png(seed: int, copy_of: int | None = None) -> bytes:
    """A noise picture; or, with `copy_of`, a copy of picture `copy_of` with noise of its own
    (a chain's frames are copies of each other: unrelated pictures are refused as one)."""
    buffer = io.BytesIO()
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
    if copy_of is not None:
        base = np.random.default_rng(copy_of).integers(0, 255, (48, 64, 3)).astype(float)
        pixels = np.clip(base + rng.normal(0, 4, base.shape), 0, 255).astype(np.uint8)
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def a_kept_run(tmp: Path) -> dict[str, bytes]:
    """The files of one finished 2-step run, as persist.py pushes them."""
    spec = RunSpec(Image.open(io.BytesIO(png(7))).convert("RGB"), 2, "simulate",
                   metrics=["entropy"])
    events = list(start_run(spec, tmp, pool=MetricPool(device="cpu", load_seconds=600)))
    run = next(e.run_dir for e in events if isinstance(e, Started))
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in run.rglob("*")
            if p.is_file() and p.name != "run.zip" and not p.name.startswith(".owner")
            and p.suffix in (".json", ".csv", ".png")}


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("reach")
    chain = {f"chain/{i}.png": png(i, copy_of=0) for i in range(4)}
    kept = a_kept_run(root / "made")
    runs_repo = {}
    for age, run_id in enumerate(RESTORED):  # each a day older than the one after it
        meta = json.loads(kept["run.json"])
        meta["updated_at"] = f"2025-01-{age + 1:02d}T00:00:00+0000"
        for name, data in {**kept, "run.json": json.dumps(meta).encode()}.items():
            runs_repo[f"runs/{run_id}/{name}"] = data
    hub = FakeHubWrite({PUBLIC: {"README.md": b"---\nlicense: cc0-1.0\n---\n", **chain},
                        PRIVATE: dict(chain), RUNS_REPO: runs_repo}, token=OWNERS_TOKEN)
    hub.private |= {PRIVATE, RUNS_REPO}
    with hub, running_app(root / "runs", HF_ENDPOINT=hub.url, HF_HOME=str(root / "hf"),
                          **SETTINGS) as url:
        yield {"url": url, "runs": root / "runs", "hub": hub, "hf": root / "hf",
               "index": dependencies(url)}


def replay(app: dict, source: str, who: str) -> list:
    return client(app, who).predict(source, 3, DEFAULT_PROMPT, ["entropy"], [], 0, False,
                                    api_name="/replay_hub")


# --- item 1: the Space's token is never sent for a repo a visitor names ----------------------

def test_a_private_repo_a_visitor_names_is_read_anonymously_and_refused(app) -> None:
    hub = app["hub"]
    for repo in (PRIVATE, RUNS_REPO):
        before, tokened = len(hub.requests), len(hub.with_token)
        with pytest.raises(Exception, match="private or gated") as refused:
            replay(app, f"hf://datasets/{repo}/chain" if repo == PRIVATE else
                   f"hf://datasets/{repo}/runs/{RESTORED[0]}", "10.31.1.1")
        assert OWNERS_TOKEN not in str(refused.value)
        asked = hub.requests[before:]
        assert asked and not hub.with_token[tokened:], hub.with_token[tokened:]
        assert not [r for r in asked if "/resolve/" in r and r.startswith("GET ")]  # no file
    assert not list(app["runs"].glob("*/run.json"))  # nothing was made of them


# --- item 6: what replays fetch is counted per visitor, before anything is downloaded --------

def test_hub_replays_fetch_within_the_visitors_share(app) -> None:
    hub = app["hub"]
    first = replay(app, f"hf://datasets/{PUBLIC}/chain", "10.31.6.1")
    assert "Completed" in first[STATUS]
    assert list((app["hf"] / "banana-space-chains").rglob("*.png"))  # in the counted cache
    fetched = len(hub.fetched())
    with pytest.raises(Exception, match=f"at most {HUB_KB_PER_VISITOR / 1000:g} MB per visitor"):
        replay(app, f"hf://datasets/{PUBLIC}/chain", "10.31.6.1")
    assert len(hub.fetched()) == fetched  # refused from the listing: nothing downloaded
    assert "Completed" in replay(app, f"hf://datasets/{PUBLIC}/chain", "10.31.6.2")[STATUS]
    assert not [r for r in hub.with_token if PUBLIC in r]  # a public one: anonymous too


# --- item 2: visitors choose from the metrics the server can afford --------------------------

def test_a_visitor_cannot_make_the_server_build_a_large_model(app, tmp_path) -> None:
    image = noise(tmp_path / "in.png", 64, 48)
    for metrics in ("qalign", "entropy, qrealign-pro", "musiq"):
        with pytest.raises(Exception, match="not offered to visitors") as refused:
            client(app, "10.31.2.1").predict(handle_file(str(image)), 1, "simulate", metrics,
                                             0, "", "", api_name="/run_chain")
        assert "brisque" in str(refused.value) and "scale_index" in str(refused.value)  # the list
    _, (mcp,) = asyncio.run(session_call(f"{app['url']}gradio_api/mcp/", [
        ("list_options", {})]))
    offered = answer(mcp)["metrics_offered"]
    assert {"brisque", "niqe", "piqe", "entropy", "psnr", "ssim"} <= set(offered)
    assert not {"qalign", "qrealign-pro", "qrealign-mini", "musiq"} & set(offered)


# --- items 4 and 8: past runs and resume are the owner's; a resume holds its cost ------------

def test_runs_are_listed_and_resumed_only_by_their_maker(app, tmp_path) -> None:
    photo = noise(tmp_path / "in.png", 512, 384)
    owner, stranger = "10.31.4.1", "10.31.4.2"
    stopped = _stopped_run(app, photo, owner)
    past = app["index"]["past_runs"]
    # Each visitor's page asks with its browser's secret (a visitor is a browser: issue 42).
    listed = call(app["url"], past, [], headers={"X-Forwarded-For": owner,
                                                  **browser_cookie(client(app, owner))})
    assert stopped in json.dumps(listed.data), listed
    strangers = call(app["url"], past, [], headers={"X-Forwarded-For": stranger,
                                                     **browser_cookie(client(app, stranger))})
    assert stopped not in json.dumps(strangers.data), strangers
    for ask in (lambda: client(app, stranger).predict(stopped, "", "", api_name="/resume_chain"),
                lambda: client(app, stranger).predict(stopped, "", False, api_name="/resume")):
        with pytest.raises(Exception, match="Only the visitor who started this run"):
            ask()
    opened = json.loads(client(app, stranger).predict(stopped, api_name="/open_run"))
    assert opened["status"] == "stopped"  # a link still opens it, read-only
    # While another of the owner's chains is in flight, resuming this one would pass the
    # owner's share of megapixel-steps (20 of 25 in flight + 19 to resume): refused.
    running = threading.Thread(target=lambda: _quietly(lambda: client(app, owner).predict(
        handle_file(str(photo)), 100, "simulate", "entropy", 0, "", TOKEN,
        api_name="/run_chain")), daemon=True)
    running.start()
    wait_for(lambda: _in_flight(app, exclude=stopped), what="the second chain starting")
    with pytest.raises(Exception, match="megapixel-steps"):
        client(app, owner).predict(stopped, "", "", api_name="/resume_chain")
    assert _in_flight(app, exclude=stopped), "the chain in flight ended before the check"
    client(app, owner).predict(TOKEN, api_name="/stop")
    running.join(60)
    resumed = json.loads(client(app, owner).predict(stopped, "", "", api_name="/resume_chain"))
    assert resumed["status"] == "completed", resumed


def _stopped_run(app: dict, photo: Path, who: str) -> str:
    """A 100-step chain of `who`'s, stopped after its first frames: its run id."""
    done: dict = {}
    thread = threading.Thread(target=lambda: done.update(json.loads(
        client(app, who).predict(handle_file(str(photo)), 100, "simulate", "entropy", 0, "",
                                 TOKEN, api_name="/run_chain"))), daemon=True)
    thread.start()
    wait_for(lambda: _in_flight(app), what="the chain's first frame")
    client(app, who).predict(TOKEN, api_name="/stop")
    thread.join(60)
    assert done.get("status") == "stopped", done
    return done["run"]


def _in_flight(app: dict, exclude: str = "") -> bool:
    """A run (not `exclude`) whose writer holds its lock, its first frame made."""
    for run in app["runs"].glob("*/frames/step_001.png"):
        run_dir = run.parent.parent
        if run_dir.name == exclude:
            continue
        try:
            os.close(Run(run_dir).lock())
        except (RunBusy, FileNotFoundError):
            return True
    return False


def _quietly(call_it) -> None:
    try:
        call_it()
    except Exception:  # the chain is stopped by the test; its answer is not the point
        pass


# --- item 7: a run restored from BANANA_RUNS_REPO goes through retention ---------------------

def test_runs_restored_from_the_hub_keep_their_age_and_the_runs_kept(app) -> None:
    for run_id in RESTORED:
        opened = json.loads(client(app, "10.31.7.1").predict(run_id, api_name="/open_run"))
        assert opened["status"] == "completed" and opened["last_step"] == 2
    kept = {p.parent.name for p in app["runs"].glob("*/run.json")}
    assert len(kept) <= KEEP_RUNS, sorted(kept)
    assert RESTORED[-1] in kept and RESTORED[0] not in kept  # the oldest went first
    assert [r for r in app["hub"].with_token if RUNS_REPO in r]  # the operator's repo: token
    shutil.rmtree(app["runs"] / ".restoring", ignore_errors=True)
    assert time.time() - (app["runs"] / RESTORED[-1] / "run.json").stat().st_mtime > 86400


# --- issue 41, item 8: a run's owner file is not served -----------------------------------------

def test_a_runs_private_files_are_not_served(app, tmp_path) -> None:
    """Its frames are served as they lie; its `.owner` (anyone holding two run links could
    tell whether one visitor made both) and its writer's lock are not, however named."""
    made = json.loads(client(app, "10.41.8.1").predict(
        handle_file(str(noise(tmp_path / "in.png", 48, 32))), 1, "simulate", "entropy", 0, "",
        "", api_name="/run_chain"))
    run = app["runs"] / made["run"]
    assert (run / ".owner").is_file() and (run / ".writer.lock").is_file()

    def status(path: str) -> int:
        return httpx.get(f"{app['url']}gradio_api/{path}", timeout=30).status_code

    assert status(f"file={run / 'frames' / 'step_000.png'}") == 200
    assert status(f"file={run / '.thumbs' / '.step_000.png'}") == 200  # the strip's picture
    assert status(f"file={run}/.thumbs/../.owner") == 404
    for name in (".owner", ".writer.lock", "frames/../.owner", ".owner/."):
        assert status(f"file={run}/{name}") == 404, name
        assert status(f"file/{run}/{name}") == 404, name
    assert status(f"file={run}/%2Eowner") == 404
