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
import subprocess
import sys
import threading
import zipfile

import httpx
import numpy as np
import pytest
import torch
from app_server import running_app
from conftest import REPO
from gradio_client import handle_file
from PIL import Image
from raw_api import dependencies
from test_mcp import data_url, session_call
from test_visitor_reach import _in_flight
from visitors import client, file_data, join, noise, upload, wait_for

from banana_space import frames as frames_module
from banana_space import gate
from banana_space.budget import MemoryBudget
from banana_space.pool import MetricPool

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
def test_a_visitor_cannot_pick_its_address_with_a_line_of_its_own(app, tmp_path) -> None:
    """The proxy adds its own header line after whatever the client sent: the visitor is the
    last entry of the last line, whatever the first line says."""
    photo = noise(tmp_path / "big.png", 330, 330).read_bytes()  # ~330 KB of noise
    statuses = []
    for forged in range(5):
        headers = [("X-Forwarded-For", f"203.0.113.{forged}"),
                   ("X-Forwarded-For", "10.32.9.1")]
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
