"""What one visitor's request may cost the server (issue 31): the quality gate streams its edits
within caps and a chain's queue and share; an animation's frames are each decoded once; the metric
pool is bounded and held in the memory budget; the visitor is the last address over every
X-Forwarded-For line; a strip too thin to score is refused from its header; only a short list of
formats is opened; four visitors decoding a large GIF stay within the memory budget and a zip of a
million members is refused from its end record (issue 22, item 6: a child process's own high-water
mark, never timed); and a refusal costs the log one line, not a traceback. Through the channel each
attack used (the `mcp` client, gradio_client, raw HTTP), or the engine where the cost is the
engine's own (what is decoded, what is held); each test failed before its fix."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import numpy as np
import psutil
import pytest
import torch
from app_server import run_inputs, running_app
from conftest import REPO
from gradio_client import handle_file
from hostile_files import many_page_tiff
from PIL import Image
from raw_api import call, dependencies
from test_mcp import data_url, session_call
from test_visitor_reach import _in_flight
from visitors import client, file_data, join, noise, upload, wait_for

from banana_space import gate
from banana_space.budget import MemoryBudget
from banana_space.scores.pool import MetricPool
from banana_space.sources import frames as frames_module

UPLOAD_MB = 1.0
SETTINGS = {"BANANA_TRUST_PROXY": "1", "BANANA_CHAINS_PER_VISITOR": "1",
            "BANANA_UPLOAD_MB_PER_VISITOR": str(UPLOAD_MB), "GRADIO_HEARTBEAT_INTERVAL": "1"}
TOKEN = "a-secret-of-this-test-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    runs = tmp_path_factory.mktemp("caps") / "runs"
    with running_app(runs, **SETTINGS) as url:
        port = url.rstrip("/").rsplit(":", 1)[1]
        yield {"url": url, "runs": runs, "log": runs.parent / f"app-{port}.log",
               "index": dependencies(url)}


def flat(side: int) -> Image.Image:
    return Image.new("RGB", (side, side), (120, 130, 140))


# --- item 3: the gate ---------------------------------------------------------------------------

@pytest.mark.app
def test_the_gate_refuses_more_pixels_per_call_than_its_cap_before_scoring(app) -> None:
    edits = [flat(2048)] * 40  # 168 megapixels of edits: a 2048² original's 40 copies
    _, (refused, small) = asyncio.run(session_call(f"{app['url']}gradio_api/mcp/", [
        ("check_degradation", {"original": data_url(flat(2048)),
                               "edited": data_url(edits, "zip")}),
        ("check_degradation", {"original": data_url(flat(256)),
                               "edited": data_url([flat(256)] * 3, "zip")})]))
    assert refused.isError and "megapixels" in refused.content[0].text, refused.content
    assert f"at most {gate.MAX_PIXELS / 1e6:,.0f}" in refused.content[0].text
    answered = json.loads(small.content[0].text)
    assert answered["degraded"] is False and len(answered["edits"]) == 3


@pytest.mark.app
def test_the_gate_waits_in_a_chains_queue_and_counts_toward_its_callers_chains(app,
                                                                              tmp_path) -> None:
    photo, who = noise(tmp_path / "in.png", 512, 384), "10.32.3.1"
    chain = threading.Thread(target=lambda: _quietly(lambda: client(app, who).predict(
        handle_file(str(photo)), 100, "simulate", "entropy", 0, "", TOKEN,
        api_name="/run_chain")), daemon=True)
    chain.start()
    wait_for(lambda: _in_flight({"runs": app["runs"]}), what="the chain's first frame")
    original = noise(tmp_path / "original.png", 64, 48)
    sent = upload(app, original, who).json()[0]
    # The same visitor (its browser) asks for the gate while its chain runs.
    refused = join(app, "check_degradation", [file_data(sent), file_data(sent)], who,
                   browser=client(app, who))
    assert "chains queued or running" in refused.text, refused.text
    client(app, who).predict(TOKEN, api_name="/stop")
    chain.join(60)
    checked = json.loads(client(app, who).predict(handle_file(str(original)),
                                                  handle_file(str(original)),
                                                  api_name="/check_degradation"))
    assert checked["degraded"] is False


def _quietly(call_it) -> None:
    try:
        call_it()
    except Exception:  # stopped by the test: its answer is not the point
        pass


def test_the_gate_decodes_each_edit_only_when_it_checks_it(tmp_path, monkeypatch) -> None:
    """A zip of edits is read one edit at a time, as each is checked: opening it decodes
    nothing (the old gate decoded every edit into a list first, then copied the list)."""
    archive = tmp_path / "edits.zip"
    with zipfile.ZipFile(archive, "w") as written:
        for index in range(6):
            written.write(noise(tmp_path / f"{index}.png", 64, 48, seed=index), f"{index}.png")
    decodes = []
    real = frames_module.load_image

    def counting_load(data):
        decodes.append(1)
        return real(data)

    monkeypatch.setattr(frames_module, "load_image", counting_load)
    edits = gate.edits_in(archive)
    assert len(edits) == 6 and decodes == []  # nothing decoded yet
    decoded_when_measured: list[int] = []
    measure = gate._measure

    def counting_measure(pool, image, original, reference):
        decoded_when_measured.append(len(decodes))
        return measure(pool, image, original, reference)

    monkeypatch.setattr(gate, "_measure", counting_measure)
    gate.ORIGINALS.clear()
    answer = gate.check_degradation(real(tmp_path / "0.png").image, edits)
    assert len(answer["edits"]) == 6 and answer["edits"][0]["degraded"] is False
    assert decoded_when_measured == [0, 1, 2, 3, 4, 5, 6]  # the original, then edit by edit


# --- item 5: an animation's frames are decoded once each, in order ---------------------------

def test_an_animations_frames_are_read_in_order_from_one_decoder(tmp_path, monkeypatch) -> None:
    frames = [Image.fromarray(np.full((40, 50, 3), 10 * i, np.uint8)) for i in range(12)]
    path = tmp_path / "chain.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100)
    opened: list[int] = []
    real = frames_module.open_image
    monkeypatch.setattr(frames_module, "open_image",
                        lambda source: opened.append(1) or real(source))
    chain = frames_module.frames_in_animation(path)
    read = [int(np.asarray(chain.frame(i).image)[0, 0, 0]) for i in range(len(chain))]
    assert read == [10 * i for i in range(12)]
    assert len(opened) == 2  # once to count the frames, once to read them all
    chain.frame(3)  # going back opens it again, and still reads the right frame
    assert len(opened) == 3


# --- item 2: the pool is bounded and held in the memory budget -------------------------------

def test_the_pool_holds_each_metrics_weights_in_the_budget_and_refuses_past_its_share() -> None:
    budget = MemoryBudget(20_000_000)
    pool = MetricPool(device="cpu", load_seconds=60, budget=budget, max_loaded=2,
                      build=lambda name, device: torch.nn.Linear(*{
                          "small": (500, 500), "large": (2000, 2000), "other": (10, 10)}[name]))
    assert pool.unavailable_reason("small") is None
    assert budget.held == budget.used == 500 * 501 * 4  # its weights, held from now on
    assert not budget.fits(budget.capacity)  # frames share what is left
    assert "would pass the 10 MB the memory budget keeps" in pool.unavailable_reason("large")
    assert budget.held == 500 * 501 * 4  # the refused one holds nothing
    assert pool.unavailable_reason("other") is None
    assert "at most 2 metrics" in pool.unavailable_reason("small-2")


# --- item 9: every X-Forwarded-For line counts -------------------------------------------------

@pytest.mark.app
@pytest.mark.parametrize("shape", ["a line of its own", "an entry before the proxy's"])
def test_a_visitor_cannot_pick_its_address_with_a_line_of_its_own(app, tmp_path, shape) -> None:
    """The proxy adds its own header line after whatever the client sent, or appends the
    address it saw to the client's line (`client, proxy`: nginx's `$proxy_add_x_forwarded_for`,
    AWS's load balancers; docs/limits.md): the visitor is the last entry of the last line,
    whatever the client wrote before it."""
    photo = noise(tmp_path / "big.png", 330, 330).read_bytes()  # ~330 KB of noise
    seen = "10.32.9.1" if shape == "a line of its own" else "10.32.9.2"  # each its own share
    statuses = []
    for forged in range(5):
        headers = ([("X-Forwarded-For", f"203.0.113.{forged}"), ("X-Forwarded-For", seen)]
                   if shape == "a line of its own" else
                   [("X-Forwarded-For", f"203.0.113.{forged}, {seen}")])
        answer = httpx.post(f"{app['url']}gradio_api/upload", headers=headers, timeout=60,
                            files={"files": (f"{forged}.png", photo, "image/png")})
        statuses.append(answer.status_code)
    sent = int(UPLOAD_MB * 1e6 // len(photo))  # what fits in one visitor's share
    assert statuses == [200] * sent + [429] * (5 - sent), statuses


# --- item 10: refused from the header, short list of formats, no traceback --------------------

@pytest.mark.app
def test_refusals_are_early_short_listed_and_one_line_in_the_log(app, tmp_path) -> None:
    strip = tmp_path / "strip.png"
    Image.new("RGB", (8, 2_000_000), (90, 90, 90)).save(strip)
    pixmap = tmp_path / "photo.ppm"
    noise(tmp_path / "p.png", 64, 48)
    Image.open(tmp_path / "p.png").save(pixmap)
    icon = tmp_path / "photo.ico"
    Image.open(tmp_path / "p.png").save(icon)
    webp = tmp_path / "photo.webp"
    Image.open(tmp_path / "p.png").save(webp, lossless=True)
    before = app["log"].read_text()
    visitor = client(app, "10.32.10.1")
    with pytest.raises(Exception, match=r"8 x 2000000 pixels \(downscaled to 2048 px"):
        visitor.predict(handle_file(str(strip)), 1, "simulate", "entropy", 0, "", "",
                        api_name="/run_chain")
    for path in (pixmap, icon):
        with pytest.raises(Exception, match="send PNG, JPEG, WebP, GIF, BMP or TIFF"):
            visitor.predict(handle_file(str(path)), 1, "simulate", "entropy", 0, "", "",
                            api_name="/run_chain")
    made = json.loads(visitor.predict(handle_file(str(webp)), 1, "simulate", "entropy", 0, "",
                                      "", api_name="/run_chain"))
    assert made["status"] == "completed"
    logged = app["log"].read_text()[len(before):]
    assert "Traceback" not in logged, logged[-3000:]


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
from banana_space.sources.dispatch import open_frames
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
from banana_space.sources.images import BadImage
from banana_space.sources.dispatch import open_frames
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


# --- issue 41, item 1: request bodies -----------------------------------------------------------

BIG_BODY = 5_000_000  # the Done-when's 5 MB
BODY_GROWTH_MB = 100  # what ten refused bodies may add to the server (issue 41's bound)


def app_process(app: dict) -> psutil.Process:
    """The app's own process: the one listening on its port."""
    port = int(app["url"].rstrip("/").rsplit(":", 1)[1])
    listening = [c.pid for c in psutil.net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN and c.laddr.port == port]
    return psutil.Process(listening[0])


@pytest.mark.app
def test_a_large_body_is_refused_on_every_route_and_neither_kept_nor_logged(app) -> None:
    """Ten 5 MB bodies from fresh sessions: the documented /stop's REST route, a queue join
    with the token, a join with too few inputs (gradio printed that whole), and one sent in
    chunks with no length; each is refused (413) before gradio reads it."""
    index, big = app["index"], "x" * BIG_BODY
    server = app_process(app)

    def join_body(name: str, data: list) -> dict:
        return {"data": data, "fn_index": index[name], "event_data": None, "trigger_id": None,
                "session_hash": secrets.token_hex(6)}

    sends = [lambda: httpx.post(f"{app['url']}gradio_api/call/stop", json={"data": [big]},
                                timeout=60),
             lambda: httpx.post(f"{app['url']}gradio_api/queue/join", timeout=60,
                                json=join_body("stop", [big])),
             lambda: httpx.post(f"{app['url']}gradio_api/queue/join", timeout=60,
                                json=join_body("resume", [big])),
             lambda: httpx.post(f"{app['url']}gradio_api/queue/join", timeout=60,
                                content=iter([json.dumps(join_body("stop", [big])).encode()]),
                                headers={"content-type": "application/json"})]
    assert sends[0]().status_code == 413  # once first: what a first request allocates
    before_log, before_mb = app["log"].read_text(), server.memory_info().rss / 1e6
    statuses = [sends[i % len(sends)]().status_code for i in range(10)]
    grown = server.memory_info().rss / 1e6 - before_mb
    assert statuses == [413] * 10, statuses
    assert grown < BODY_GROWTH_MB, f"the server grew by {grown:.0f} MB"
    assert app["log"].read_text() == before_log
    # A body of a usual size still goes through, on both routes.
    assert httpx.post(f"{app['url']}gradio_api/call/stop", json={"data": [""]},
                      timeout=60).status_code == 200
    assert httpx.post(f"{app['url']}gradio_api/queue/join", json=join_body("stop", [""]),
                      timeout=60).status_code == 200


def whole_answer(raw: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (its 413 says `connection:
    close`): one recv may hold only the headers, the body coming in a segment of its own."""
    answered = b""
    try:
        while chunk := raw.recv(65536):
            answered += chunk
    except ConnectionResetError:  # it closed with our unread bytes still in its buffer
        pass
    return answered


@pytest.mark.app
def test_an_mcp_body_past_what_the_mcp_server_takes_is_refused_before_it_is_read(app) -> None:
    """The MCP server takes at most 4 MiB a call: one declaring 125 MB is answered 413 from
    its headers while the client is still sending (nothing of it buffered), one sent in chunks
    once 4 MiB have come; a call under the cap reaches the MCP server, which answers it."""
    mcp = f"{app['url']}gradio_api/mcp/"
    host, port = urlsplit(mcp).hostname, urlsplit(mcp).port
    with socket.create_connection((host, port), timeout=30) as raw:
        raw.sendall(b"POST /gradio_api/mcp/ HTTP/1.1\r\nHost: " + host.encode() +
                    b"\r\nContent-Type: application/json\r\n"
                    b"Accept: application/json, text/event-stream\r\n"
                    b"Content-Length: 125000000\r\n\r\n" + b"x" * 1024)
        answered = whole_answer(raw)
    assert answered.startswith(b"HTTP/1.1 413") and b"at most 4 MiB" in answered, answered[:200]
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    chunked = httpx.post(mcp, content=iter([b"x" * 1_000_000] * 5), headers=headers, timeout=60)
    assert chunked.status_code == 413 and "give a larger one as an https URL" in chunked.text
    under = httpx.post(mcp, content=b" " * 4_000_000 + b"{}", headers=headers, timeout=60)
    assert "at most 4 MiB" not in under.text  # the MCP server's own answer


# --- issue 41, item 2: many pages, through the page's preview ------------------------------------

@pytest.mark.app
def test_the_preview_refuses_a_tiff_of_many_pages_from_its_structure(app, tmp_path) -> None:
    """The preview is not in the API but is reachable by its index: a TIFF of 8,000 pages
    (under this app's 1 MB of uploads per visitor) is refused from its page count."""
    tiff = tmp_path / "pages.tiff"
    tiff.write_bytes(many_page_tiff(8_000))
    path = upload(app, tiff, "10.41.2.1").json()[0]
    answer = call(app["url"], app["index"]["preview"], [file_data(path)],
                  headers={"X-Forwarded-For": "10.41.2.1"})
    assert answer.success, answer.error
    assert "more than 1000 pages or frames" in answer.data[1]


# --- issue 41, item 10: number fields take real numbers only ------------------------------------

@pytest.mark.app
@pytest.mark.parametrize(("given", "says"), [
    ({"steps": True}, "Steps (N) must be a number, not true or false"),
    ({"steps": "3"}, "Steps (N) must be a number, not text"),
    ({"steps": None}, "Steps (N) must be a number, not blank"),
    ({"seed": 1.5}, "The seed must be a whole number, not 1.5"),
    ({"seed": float("nan")}, "Seed must be a number, not NaN or infinite"),
    ({"seed": "zero"}, "Seed must be a number, not text"),
], ids=["steps-true", "steps-string", "steps-null", "seed-1.5", "seed-nan", "seed-string"])
def test_number_fields_take_real_numbers_only_in_one_line(app, tmp_path, given, says) -> None:
    path = upload(app, noise(tmp_path / "start.png", 48, 32), "10.41.10.1").json()[0]
    inputs = run_inputs(file_data(path), given.pop("steps", 1), metrics=["entropy"], **given)
    before = app["log"].read_text()
    answer = call(app["url"], app["index"]["run"], inputs,
                  headers={"X-Forwarded-For": "10.41.10.1"})
    assert not answer.success and says in answer.error, answer.error
    assert "\n" not in answer.error
    logged = app["log"].read_text()[len(before):]
    assert "Traceback" not in logged, logged[-3000:]


# --- issue 41, item 9: a damaged run is refused in one line -------------------------------------

@pytest.mark.app
def test_a_damaged_run_is_refused_in_one_line_and_never_zipped(app, tmp_path) -> None:
    """A garbage run.json, a bad scores row, a field of the wrong type and a truncated frame,
    each opened through the API and the page's own event: one line saying which file, no
    traceback in the log, and no zip (or temporary) made of the truncated frame."""
    made = json.loads(client(app, "10.41.9.1").predict(
        handle_file(str(noise(tmp_path / "in.png", 48, 32))), 2, "simulate", "entropy", 0, "",
        "", api_name="/run_chain"))
    good = app["runs"] / made["run"]
    damage = {"garbage-json": ("run.json", lambda text: "{not json"),
              "bad-score": ("scores.csv", lambda text: text.replace("\n1,", "\none,", 1)),
              "wrong-type": ("run.json", lambda text: text.replace('"steps": 2', '"steps": "2"')),
              "truncated-frame": ("frames/step_001.png", None)}
    for name, (file, change) in damage.items():
        run = app["runs"] / f"damaged-{name}"
        shutil.copytree(good, run)
        (run / f"banana-{good.name}.zip").unlink()
        if change is None:
            (run / file).write_bytes((run / file).read_bytes()[:200])
        else:
            (run / file).write_text(change((run / file).read_text()))
    before = app["log"].read_text()
    for name, (file, _) in damage.items():
        run_id = f"damaged-{name}"
        page = call(app["url"], app["index"]["open"], [run_id, False])
        assert not page.success and "is damaged" in page.error and Path(file).name in page.error
        assert "\n" not in page.error, page.error
        if name != "truncated-frame":  # open_run reads the run, never zips it
            with pytest.raises(Exception, match=f"run {run_id} is damaged"):
                client(app, "10.41.9.2").predict(run_id, api_name="/open_run")
        assert not list((app["runs"] / run_id).glob("*.zip"))
        assert not list((app["runs"] / run_id).glob(".*.tmp"))
    logged = app["log"].read_text()[len(before):]
    assert "Traceback" not in logged, logged[-3000:]
