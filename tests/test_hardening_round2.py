"""What one hostile visitor could still do to everyone else (issue 22, items 1-12), each through
the channel the attack used: raw HTTP on gradio's queue and upload routes, gradio_client, the
`mcp` client; memory in a subprocess's own high-water mark. Each test failed before its fix.
Visitors are told apart by X-Forwarded-For, as a Space's proxy tells the app (the app trusts it
here, as it does on a Space); every address is a made-up one, every connection loopback."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import httpx
import numpy as np
import pytest
from app_server import RUN_DIR, STATUS, run_inputs, running_app
from conftest import REPO
from gradio_client import Client, handle_file
from markdown_it import MarkdownIt
from PIL import Image
from raw_api import call, dependencies
from test_mcp import answer, data_url, session_call

from banana_space.events import Started
from banana_space.run import Run, RunBusy

pytestmark = pytest.mark.app

KEEP_GB = 0.2  # previews may hold 2 MB of it, uploads 50 MB
SETTINGS = {"BANANA_TRUST_PROXY": "1", "BANANA_KEEP_RUNS": "8", "BANANA_RUNS_PER_VISITOR": "2",
            "BANANA_CHAINS_PER_VISITOR": "2", "BANANA_CHAINS_WAITING": "3",
            "BANANA_COST_PER_VISITOR": "20", "BANANA_UPLOAD_MB_PER_VISITOR": "3",
            "BANANA_KEEP_GB": str(KEEP_GB), "GRADIO_HEARTBEAT_INTERVAL": "1"}
TOKEN = "a-secret-of-this-test-" + secrets.token_hex(8)


def uploads_folder(runs: Path) -> Path:
    """disk.UPLOADS for a runs folder (named after it)."""
    digest = hashlib.sha256(str(runs.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"banana-uploads-{digest}"


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    runs = tmp_path_factory.mktemp("round2") / "runs"
    # What a process killed with -9 left behind: removed when the next one starts.
    stale = [uploads_folder(runs) / "0123abcd" / "someone.png", runs / ".previews" / "old.png"]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left by a killed process")
    with running_app(runs, **SETTINGS) as url:
        yield {"url": url, "runs": runs, "stale": stale, "index": dependencies(url)}


def noise(path: Path, width: int, height: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8)).save(path)
    return path


def client(app: dict, who: str) -> Client:
    return Client(app["url"], verbose=False, headers={"X-Forwarded-For": who})


def upload(app: dict, path: Path, who: str) -> httpx.Response:
    with httpx.Client(timeout=60) as http, path.open("rb") as handle:
        return http.post(f"{app['url']}gradio_api/upload", files={"files": handle},
                         headers={"X-Forwarded-For": who})


def file_data(path: str) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": Path(path).name}


def join(app: dict, name: str, data: list, who: str, session: str | None = None,
         query: str = "") -> httpx.Response:
    """Join the queue for event `name` and leave: what a flood does."""
    body = {"data": data, "fn_index": app["index"][name], "event_data": None,
            "session_hash": session or secrets.token_hex(6), "trigger_id": None}
    return httpx.post(f"{app['url']}gradio_api/queue/join{query}", json=body, timeout=30,
                      headers={"X-Forwarded-For": who})


def run_ids(runs: Path) -> set[str]:
    return {p.parent.name for p in runs.glob("*/run.json")}


def wait_for(condition, seconds: float = 60, what: str = "it") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds} s"
        time.sleep(0.2)


def chain_args(image: Path, steps: int, token: str = "") -> tuple:
    return (handle_file(str(image)), steps, "simulate", "entropy", 0, "", token)


def stop(app: dict, who: str, token: str = TOKEN) -> None:
    client(app, who).predict(token, api_name="/stop")


def busy_runs(runs: Path, among: set[str] | None = None) -> int:
    """Runs whose writer is at work now (their lock is held); only those in `among` if given."""
    busy = 0
    for run_id in run_ids(runs) if among is None else run_ids(runs) & among:
        try:
            os.close(Run(runs / run_id).lock())
        except (RunBusy, FileNotFoundError):
            busy += 1
    return busy


def stop_all(app: dict) -> None:
    """Stop every chain this module started (they share TOKEN), waiting ones as they start."""
    deadline = time.monotonic() + 90
    while busy_runs(app["runs"]) and time.monotonic() < deadline:
        stop(app, "10.0.0.1")
        time.sleep(0.5)


# --- item 1: other visitors' uploads ---------------------------------------------------------

def test_a_folder_or_a_named_server_path_is_no_file_argument(app, tmp_path) -> None:
    victim = upload(app, noise(tmp_path / "victims-photo.png", 64, 48), "10.0.1.1").json()[0]
    preview = call(app["url"], app["index"]["preview"], [file_data(victim)])
    assert preview.success and (app["runs"] / ".previews").is_dir()
    before = run_ids(app["runs"])
    for folder in (str(Path(victim).parent.parent), str(Path(victim).parent),
                   str(app["runs"] / ".previews")):
        answer_ = call(app["url"], app["index"]["score_chain"], [file_data(folder), "", ""])
        assert not answer_.success, folder
        assert "file you sent" in answer_.error or "folder" in answer_.error
        assert "/tmp" not in answer_.error and str(app["runs"]) not in answer_.error
    assert run_ids(app["runs"]) == before  # nobody's photo became a frame of a public run


def test_a_replay_run_names_no_server_path(app, photo, tmp_path) -> None:
    archive = tmp_path / "chain.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for index in range(3):
            data = io.BytesIO()
            photo.resize((64, 48)).rotate(index * 5).save(data, format="PNG")
            zipped.writestr(f"{index}.png", data.getvalue())
    verdict = json.loads(client(app, "10.0.1.2").predict(
        handle_file(str(archive)), "entropy", "", api_name="/score_chain"))
    run = app["runs"] / verdict["run"]
    stored = (run / "run.json").read_text()
    assert json.loads(stored)["settings"]["backend_options"] == {"source": "chain.zip"}
    with zipfile.ZipFile(run / f"banana-{run.name}.zip") as zipped:
        zipped_meta = zipped.read(f"{run.name}/run.json").decode()
    for text in (stored, zipped_meta):
        assert tempfile.gettempdir() not in text and str(app["runs"]) not in text


# --- item 2: MCP callers are separate visitors -----------------------------------------------

def test_mcp_callers_neither_block_nor_stop_each_other(app, photo) -> None:
    url = f"{app['url']}gradio_api/mcp/"
    long_run = {"image": data_url(photo.resize((384, 288))), "steps": 100,
                "generator": "simulate", "metrics": "entropy", "seed": 0, "profile": "",
                "token": TOKEN}
    short_run = {**long_run, "image": data_url(photo.resize((64, 48))), "steps": 2, "token": ""}

    async def scenario() -> tuple:
        first = asyncio.create_task(session_call(url, [("run_chain", long_run)]))
        await asyncio.sleep(5)  # A's chain is running
        assert not first.done()
        _, (b_run, b_stop) = await session_call(url, [
            ("run_chain", short_run), ("stop_run", {"token": "another-callers-secret-1"})])
        assert not first.done(), "B's stop_run stopped A's chain"
        _, (a_stop,) = await session_call(url, [("stop_run", {"token": TOKEN})])
        _, (a_run,) = await asyncio.wait_for(first, 120)
        return b_run, b_stop, a_stop, a_run

    b_run, b_stop, a_stop, a_run = asyncio.run(scenario())
    assert answer(b_run)["status"] == "completed"  # never "already running for you"
    assert "Stopping" not in str(b_stop.content)
    assert "Stopping" in str(a_stop.content)
    stopped = answer(a_run)
    assert stopped["status"] == "stopped" and stopped["last_step"] < 100


# --- item 3: one client cannot lock everyone out ---------------------------------------------

def test_a_flood_of_chains_is_capped_per_visitor_and_cheap_events_still_answer(
        app, tmp_path) -> None:
    image = upload(app, noise(tmp_path / "flood.png", 128, 96), "10.0.3.1").json()[0]
    data = [file_data(image), 100, "simulate", "entropy", 0, "", TOKEN]
    joined = [join(app, "run_chain", data, "10.0.3.1") for _ in range(10)]
    accepted = [j for j in joined if j.status_code == 200]
    assert len(accepted) == 2, [j.text[:120] for j in joined]
    assert all("at most 2 per visitor" in j.text for j in joined if j.status_code != 200)
    # Other visitors fill the places left, then the chains' waiting room (3 here) is full...
    others = [join(app, "run_chain", data, f"10.0.3.{n}") for n in range(2, 9)]
    assert any("waiting already" in j.text for j in others)
    # ...and the page still loads, lists, opens and stops: never "Queue is full".
    some_run = sorted(run_ids(app["runs"]))[0]
    for name, args, query in [("on_load", [], f"?run={some_run}"), ("list_options", [], ""),
                              ("open_run", [some_run], ""), ("stop", [""], "")]:
        result = call(app["url"], app["index"][name], args, query=query, timeout=30)
        assert result.success, (name, result.error)
    stop_all(app)


def test_a_visitors_chains_are_admitted_by_their_cost(app, tmp_path) -> None:
    """Pixels x steps in flight per visitor (20 megapixel-steps here): one chain alone is
    always admitted, a second is not while the first one's cost is held."""
    who = "10.0.3.20"
    first = client(app, who).submit(*chain_args(noise(tmp_path / "a.png", 640, 480), 100, TOKEN),
                                    api_name="/run_chain")
    wait_for(lambda: first.status().code.name == "PROCESSING", what="the first chain")
    time.sleep(2)
    with pytest.raises(Exception, match="megapixel-steps"):
        client(app, who).predict(*chain_args(noise(tmp_path / "b.png", 64, 48), 2),
                                 api_name="/run_chain")
    stop(app, who)
    assert json.loads(first.result(timeout=120))["status"] == "stopped"
    small = client(app, who).predict(*chain_args(tmp_path / "b.png", 2), api_name="/run_chain")
    assert json.loads(small)["status"] == "completed"


@pytest.mark.parametrize("name", ["run_chain", "run"])
def test_a_chain_whose_caller_disconnects_stops_and_says_why(app, tmp_path, name) -> None:
    who = f"10.0.3.{30 if name == 'run' else 31}"
    image = upload(app, noise(tmp_path / "d.png", 512, 384), who).json()[0]
    data = ([file_data(image), 100, "simulate", "entropy", 0, "", ""] if name == "run_chain" else
            run_inputs(file_data(image), 100, metrics=["entropy"]))
    before, session = run_ids(app["runs"]), secrets.token_hex(6)
    assert join(app, name, data, who, session).status_code == 200
    with httpx.Client(timeout=60) as http, http.stream(
            "GET", f"{app['url']}gradio_api/queue/data", params={"session_hash": session}) as sse:
        for _line in sse.iter_lines():  # read until the run exists, then hang up
            if run_ids(app["runs"]) - before:
                break
    run = app["runs"] / (run_ids(app["runs"]) - before).pop()

    def ended() -> bool:
        return json.loads((run / "run.json").read_text())["status"] != "running"

    wait_for(ended, 60, "the disconnected chain's end")
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "stopped" and meta["last_step"] < 100
    assert meta["reason"] == "interrupted: the visitor disconnected"


# --- item 4: retention shares ----------------------------------------------------------------

def test_one_visitors_flood_of_runs_evicts_only_its_own(app, tmp_path) -> None:
    image = noise(tmp_path / "tiny.png", 8, 8)
    victims = json.loads(client(app, "10.0.4.1").predict(*chain_args(image, 1),
                                                         api_name="/run_chain"))["run"]
    attacker = client(app, "10.0.4.2")
    made = [json.loads(attacker.predict(*chain_args(image, 1), api_name="/run_chain"))["run"]
            for _ in range(9)]  # more than BANANA_KEEP_RUNS (8)
    assert victims in run_ids(app["runs"])
    assert run_ids(app["runs"]) & set(made) == set(made[-2:])  # the attacker's share: 2


# --- item 5: disk ----------------------------------------------------------------------------

def test_stale_files_of_a_killed_process_are_removed_at_start(app) -> None:
    assert not any(path.exists() for path in app["stale"])


def test_a_visitors_uploads_are_bounded(app, tmp_path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(900_000))
    codes = [upload(app, big, "10.0.5.1").status_code for _ in range(6)]
    assert codes[:3] == [200] * 3 and set(codes[3:]) == {429}  # 3 MB per visitor here
    assert upload(app, big, "10.0.5.2").status_code == 200  # others are not affected


def test_a_url_as_a_file_argument_is_refused_before_anything_is_fetched(app) -> None:
    url = "http://127.0.0.1:9/chain.zip"
    refused = join(app, "score_chain", [{"path": url, "url": url, "meta": {
        "_type": "gradio.FileData"}}, "", ""], "10.0.5.3")
    assert refused.status_code == 400 and "fetches no URL" in refused.text


def test_previews_stay_within_their_share(app, tmp_path) -> None:
    index = app["index"]["preview"]
    for seed in range(6):  # each preview is a 512 px PNG of noise, ~0.8 MB
        path = upload(app, noise(tmp_path / f"p{seed}.png", 600, 600, seed),
                      f"10.0.5.{10 + seed}").json()[0]
        assert call(app["url"], index, [file_data(path)]).success
    previews = app["runs"] / ".previews"
    used = sum(p.stat().st_size for p in previews.iterdir())
    assert used <= KEEP_GB * 1e9 / 100 + 1_000_000  # its share, and the newest one


def test_file_inputs_leave_no_temporary_files(app, tmp_path) -> None:
    def temporaries() -> set[str]:
        folders = (Path(tempfile.gettempdir()), Path(tempfile.gettempdir()) / "gradio",
                   uploads_folder(app["runs"]))  # gradio's default upload folder, and ours
        return {str(p) for folder in folders
                for p in folder.glob("tmp*") if p.is_file() and p.stat().st_size == 0}

    before = temporaries()
    path = upload(app, noise(tmp_path / "t.png", 64, 48), "10.0.5.30").json()[0]
    assert call(app["url"], app["index"]["preview"], [file_data(path)]).success
    assert temporaries() <= before


# --- item 6: memory --------------------------------------------------------------------------

def child_growth_mb(script: str, *args: str, budget_gb: str) -> int:
    """Run `script` in a child process; how much its high-water mark grew (MB) over the part
    between the child's `before = hwm()` and its end."""
    prelude = ("hwm = lambda: int([l for l in open('/proc/self/status') "
               "if l.startswith('VmHWM:')][0].split()[1]) // 1024\n")
    done = subprocess.run([sys.executable, "-c", prelude + script, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "BANANA_MEMORY_GB": budget_gb})
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


def test_four_visitors_decoding_a_large_gif_stay_within_the_budget(tmp_path) -> None:
    gif = tmp_path / "chain.gif"
    first, second = Image.new("P", (3000, 3000), 0), Image.new("P", (3000, 3000), 1)
    second.putpixel((1, 1), 2)
    first.save(gif, save_all=True, append_images=[second, first], optimize=False)
    script = """
import sys, threading
from pathlib import Path
from banana_space.sources import open_frames
frames = [open_frames(Path(sys.argv[1])) for _ in range(4)]
before = hwm()
threads = [threading.Thread(target=f.frame, args=(2,)) for f in frames]
[t.start() for t in threads]; [t.join() for t in threads]
print(hwm() - before)
"""
    # One frame of 3000 x 3000 reserves ~230 MB: a 300 MB budget lets one decode at a time.
    grown = child_growth_mb(script, str(gif), budget_gb="0.3")
    assert grown < 400, f"4 decodes took {grown} MB over a 300 MB budget"


def test_a_zip_of_a_million_members_is_refused_from_its_end_record(tmp_path) -> None:
    script = """
import struct, sys
from pathlib import Path
count = 1_000_000
entry = lambda i: struct.pack('<4s6H3L5H2L', b'PK\\x01\\x02', 20, 20, 0, 0, 0, 0, 0, 0, 0,
                              7, 0, 0, 0, 0, 0, 0) + b'%07d' % i
directory = b''.join(entry(i) for i in range(count))
end = struct.pack('<4s4H2LH', b'PK\\x05\\x06', 0, 0, 0xFFFF, 0xFFFF, len(directory), 0, 0)
path = Path(sys.argv[1]); path.write_bytes(directory + end); del directory
from banana_space.images import BadImage
from banana_space.sources import open_frames
before = hwm()
try:
    open_frames(path)
except BadImage as error:
    assert 'files' in str(error), error
else:
    raise SystemExit('accepted')
print(hwm() - before)
"""
    grown = child_growth_mb(script, str(tmp_path / "million.zip"), budget_gb="1")
    assert grown < 40, f"refusing it took {grown} MB"


# --- item 7: visitor text is plain text ------------------------------------------------------

def test_a_member_name_with_newlines_makes_no_markup_in_a_shared_link(app, photo,
                                                                       tmp_path) -> None:
    archive = tmp_path / "chain.zip"
    hostile = "\n# Session expired\n[log in](http://evil.example) http://evil.example www.x.example"
    with zipfile.ZipFile(archive, "w") as zipped:
        for index in range(4):
            data = io.BytesIO()
            photo.resize((64, 48)).rotate(index).save(data, format="PNG")
            payload = data.getvalue()[:200] if index == 2 else data.getvalue()
            zipped.writestr(f"{index}{hostile if index == 2 else ''}.png", payload)
    final = client(app, "10.0.7.1").predict(
        *run_inputs(handle_file(str(archive)), 10, prompt="replica", backend="replay",
                    metrics=["entropy"]), api_name="/run")
    assert "Failed" in final[STATUS]
    stored = json.loads((app["runs"] / final[RUN_DIR] / "run.json").read_text())["reason"]
    assert "\n" not in stored
    shown = call(app["url"], app["index"]["on_load"], [], query=f"?run={final[RUN_DIR]}")
    assert shown.success
    html = MarkdownIt("commonmark").enable("table").render(shown.data[STATUS])
    assert "<h1" not in html and "<a " not in html and "Session expired" in html
    # GFM also links bare addresses (the page's renderer does): none is left bare.
    assert "http://evil" not in shown.data[STATUS] and "www.x" not in shown.data[STATUS]


# --- item 8: four chains at once from the start -----------------------------------------------

def test_four_chains_run_at_once_before_anyone_presses_run(app, tmp_path) -> None:
    image = noise(tmp_path / "c.png", 256, 192)
    # Only this test's runs count: a writer of an earlier test may still be closing its run.
    earlier = run_ids(app["runs"])
    jobs = [client(app, f"10.0.8.{n}").submit(*chain_args(image, 100, TOKEN),
                                              api_name="/run_chain") for n in range(6)]
    # Wait for the four places to fill (an event: however slow the machine), then watch a
    # while longer for a fifth; 100-step chains are far from done by then.
    most, filled, deadline = 0, None, time.monotonic() + 600
    while time.monotonic() < deadline and most < 5 and not all(job.done() for job in jobs):
        most = max(most, busy_runs(app["runs"], run_ids(app["runs"]) - earlier))
        if most == 4 and filled is None:
            filled = time.monotonic()
        if filled is not None and time.monotonic() - filled > 5:
            break
        time.sleep(0.1)
    stop_all(app)
    for job in jobs:
        job.result(timeout=120)
    assert most == 4


# --- item 9, 10, 11, 12 ----------------------------------------------------------------------

def test_resume_chain_refuses_a_completed_run(app, tmp_path) -> None:
    image = noise(tmp_path / "r.png", 64, 48)
    run_id = json.loads(client(app, "10.0.9.1").predict(*chain_args(image, 1),
                                                        api_name="/run_chain"))["run"]
    meta = app["runs"] / run_id / "run.json"
    before = meta.read_bytes()
    with pytest.raises(Exception, match="complete"):
        client(app, "10.0.9.2").predict(run_id, "", "", api_name="/resume_chain")
    assert meta.read_bytes() == before


def test_a_shared_link_with_any_frame_value_opens(app, tmp_path) -> None:
    image = noise(tmp_path / "f.png", 64, 48)
    run_id = json.loads(client(app, "10.0.10.1").predict(*chain_args(image, 2),
                                                         api_name="/run_chain"))["run"]
    for frame in ["%C2%B2", "9" * 5000, "-1", "1.5", "1"]:
        opened = call(app["url"], app["index"]["on_load"], [],
                      query=f"?run={run_id}&frame={frame}")
        assert opened.success, (frame[:10], opened.error)


def test_a_run_whose_writer_was_killed_reads_interrupted(app, photo_path) -> None:
    script = ("import sys; from pathlib import Path; from PIL import Image;"
              "from banana_space.runs import RunSpec, start_run;"
              "events = start_run(RunSpec(Image.open(sys.argv[2]).convert('RGB').resize((96, 64)),"
              " 100, metrics=['entropy']), Path(sys.argv[1]));"
              "[print(getattr(e, 'step', ''), flush=True) for e in events]")
    before = run_ids(app["runs"])
    writer = subprocess.Popen([sys.executable, "-c", script, str(app["runs"]), str(photo_path)],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: run_ids(app["runs"]) - before, what="the writer's run")
        for _ in range(3):
            writer.stdout.readline()
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    run_id = (run_ids(app["runs"]) - before).pop()
    assert json.loads((app["runs"] / run_id / "run.json").read_text())["status"] == "running"
    opened = json.loads(client(app, "10.0.11.1").predict(run_id, api_name="/open_run"))
    assert opened["status"] == "interrupted"


def test_a_stored_failure_reason_names_no_server_path(app, photo, tmp_path) -> None:
    from banana_space.runs import RunSpec, start_run

    folder = tmp_path / "frames"
    folder.mkdir()
    for index in range(4):
        photo.resize((64, 48)).rotate(index).save(folder / f"step_{index:03d}.png")
    events = start_run(RunSpec(None, 10, "replay", {"source": str(folder)},
                               metrics=["entropy"]), app["runs"])
    for event in events:
        if isinstance(event, Started):
            run_id = event.run_dir.name
            (folder / "step_002.png").unlink()  # gone before the replay reads it
    opened = json.loads(client(app, "10.0.12.1").predict(run_id, api_name="/open_run"))
    assert opened["status"] == "failed" and "step_002.png" in opened["reason"]
    assert str(tmp_path) not in opened["reason"] and "/" not in opened["reason"]
