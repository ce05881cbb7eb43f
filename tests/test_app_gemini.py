"""The Nano Banana backend and the Gemini judge end to end, offline: the real app (and the
CLI) with the real google-genai client, pointed at a local server that speaks the Gemini REST
API. The visitor's key goes in through the password box and must never come back out."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from app_server import (
    RUN_DIR,
    STATUS,
    TABLE,
    TEXT,
    run_inputs,
    running_app,
    strip_frames,
)
from conftest import REPO
from fake_gemini import FakeGemini, answer, error, image_part, text_part
from gradio_client import Client, handle_file
from PIL import Image

from banana_space.files import png_bytes
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.store.run import Run

pytestmark = pytest.mark.app

KEY = "AIzaFAKE-visitor-key-0123456789abcdefghij"  # 39 characters, like a real one


@pytest.fixture(scope="module")
def gemini(tmp_path_factory):
    root = tmp_path_factory.mktemp("gemini-app")
    with FakeGemini(api_key=KEY) as server, running_app(
            root / "runs", BANANA_GEMINI_BASE_URL=server.base_url) as url:
        yield server, url, root


def nano_banana_args(image: Path, steps: int) -> list:
    return run_inputs(handle_file(str(image)), steps, backend="nano-banana-pro",
                      metrics=["piqe"], judges=["judge_gemini"], api_key=KEY, temperature=0.7,
                      resolution="1K")


def image_requests(server: FakeGemini) -> int:
    return sum(r.wants_image for r in server.requests)


def test_five_step_nano_banana_run_streams_six_frames_and_the_judge_line(gemini,
                                                                         photo_path) -> None:
    server, url, root = gemini
    before = image_requests(server)
    job = Client(url, verbose=False).submit(*nano_banana_args(photo_path, 5), api_name="/run")
    final = job.result(timeout=300)
    sizes = [len(strip_frames(u)) for u in job.outputs()]
    assert sorted(set(sizes)) == [0, 1, 2, 3, 4, 5, 6]
    assert "Completed" in final[STATUS] and "5 calls" in final[STATUS]
    assert "Gemini judge (gemini-2.5-flash) (reference)" in {row[0] for row in final[TABLE]["data"]}
    assert "Here is the exact replica." in final[TEXT]
    assert image_requests(server) - before == 5
    sent = [r for r in server.requests if r.wants_image][-1]
    assert sent.prompt == DEFAULT_PROMPT and sent.config["temperature"] == 0.7
    with (root / "runs" / final[RUN_DIR] / "scores.csv").open(newline="") as handle:
        judged = [float(r["score"]) for r in csv.DictReader(handle)
                  if r["metric"] == "judge_gemini"]
    assert judged == [3.42] * 6


def test_a_safety_block_at_step_3_keeps_frames_0_to_2(gemini, photo_path) -> None:
    server, url, root = gemini
    server.fail_at(image_requests(server) + 3)
    final = Client(url, verbose=False).predict(*nano_banana_args(photo_path, 5),
                                               api_name="/run")
    assert "Failed" in final[STATUS] and "step 3" in final[STATUS]
    assert "SAFETY" in final[STATUS]
    assert len(strip_frames(final)) == 3
    assert len(list((root / "runs" / final[RUN_DIR] / "frames").glob("*.png"))) == 3


def test_a_models_formula_is_stored_as_text_in_the_csvs(gemini, photo_path) -> None:
    """Issue 41, item 7: a model that answers with a spreadsheet formula gets it stored as
    text (OWASP's leading quote) in steps.csv and the zip, and read back as it said it."""
    server, url, root = gemini
    formula = '=HYPERLINK("http://evil.example","Open the full-size result")'
    with Image.open(photo_path) as start:
        made = png_bytes(start.convert("RGB").resize((64, 48)))
    server.fail_at(image_requests(server) + 1, answer(text_part(formula), image_part(made)))
    final = Client(url, verbose=False).predict(*nano_banana_args(photo_path, 1),
                                               api_name="/run")
    assert "Completed" in final[STATUS]
    run = Run(root / "runs" / final[RUN_DIR])
    with run.steps_file.open(newline="") as handle:
        cells = {row["step"]: row["model_text"] for row in csv.DictReader(handle)}
    assert cells["1"] == "'" + formula
    with zipfile.ZipFile(run.zip_path) as archive:
        zipped = archive.read(f"{run.id}/steps.csv").decode()
    assert "'" + formula.replace('"', '""') in zipped and ',=HYPERLINK' not in zipped
    assert run.load().steps[1][5] == formula  # the page shows what the model said


def test_an_error_that_echoes_the_key_is_scrubbed(gemini, photo_path) -> None:
    server, url, _ = gemini
    server.fail_at(image_requests(server) + 1,
                   error(400, f"API key {KEY} is not valid here", "INVALID_ARGUMENT"))
    final = Client(url, verbose=False).predict(*nano_banana_args(photo_path, 2),
                                               api_name="/run")
    assert "Failed" in final[STATUS] and "not valid here" in final[STATUS]
    assert KEY not in final[STATUS]


def test_cli_against_the_fake_server_writes_the_same_run_format(gemini, photo_path,
                                                                tmp_path) -> None:
    server, _, _ = gemini
    out = tmp_path / "cli-run"
    environment = {**os.environ, "GEMINI_API_KEY": KEY, "BANANA_GEMINI_BASE_URL": server.base_url}
    done = subprocess.run(
        [sys.executable, "-m", "banana_space", "run", str(photo_path), "--backend",
         "nano-banana-pro", "--steps", "2", "--metrics", "piqe", "--judges", "judge_gemini",
         "--out", str(out)], cwd=REPO, env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    assert sorted(p.name for p in (out / "frames").iterdir()) == [
        "step_000.png", "step_001.png", "step_002.png"]
    with (out / "scores.csv").open(newline="") as handle:
        metrics = {r["metric"] for r in csv.DictReader(handle)}
    assert metrics == {"psnr", "ssim", "judge_gemini", "piqe"}
    assert not [p for p in out.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_the_key_is_nowhere_on_disk_or_in_the_logs(gemini) -> None:
    """Run last in this module: every run above, the app's log and the zips are searched."""
    _, _, root = gemini
    files = [p for p in root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".zip" for p in files) and any(p.suffix == ".log" for p in files)
    leaks = [p for p in files if KEY.encode() in p.read_bytes()]
    assert leaks == []
