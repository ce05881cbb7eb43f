"""Launch the real app (`python app.py`) on a free local port in a subprocess, for tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote

from conftest import REPO, free_port

from page.run_tab.form import RunForm
from page.run_tab.outputs import PageOutputs

# A failure bound, not a guess of the machine's speed: the app's answer is the event waited
# for, and an app that exits early fails at once. On a loaded 2-core machine its imports
# alone (torch, gradio, pyiqa) have taken over 90 s.
START_TIMEOUT_S = 600

# Where the run endpoint's outputs stand (page.run_tab.outputs.PageOutputs defines their order).
STATUS, FRAME, STRIP, PLOT, TABLE, TEXT, ZIP, RUN_DIR = (
    PageOutputs._fields.index(name) for name in ("status", "frame", "strip", "plot", "verdict",
                                                 "model_text", "download", "run_id"))
# What a test's /run leaves unsaid, beyond the form's own defaults: four CPU metrics, every
# frame judged.
RUN_DEFAULTS = {"metrics": ["brisque", "niqe", "piqe", "entropy"], "judge_at": "every"}


def run_inputs(upload: object, steps: float, **given: object) -> list:
    """/run's inputs in the Run form's order (page.run_tab.form.RunForm), `given` by field name."""
    return RunForm.named(**{**RUN_DEFAULTS, "upload": upload, "steps": steps, **given}).inputs()


def strip_frames(update: list) -> list[Path]:
    """The full frames the frame strip (HTML) links to, in order."""
    return [Path(unquote(url)) for url in re.findall(r'href="gradio_api/file=([^"]+)"',
                                                      update[STRIP] or "")]


@contextmanager
def running_app(runs_dir: Path, script: str = "app.py", **env: str) -> Iterator[str]:
    """Yield the app's URL; the app writes runs under `runs_dir`. Its log is printed on exit.
    `script`: what starts it (a launcher of tests/ that injects a test's part, then app.main)."""
    port = free_port()
    log = runs_dir.parent / f"app-{port}.log"
    environment = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1",
                   "GRADIO_SERVER_PORT": str(port), "BANANA_RUNS_DIR": str(runs_dir),
                   "GRADIO_ANALYTICS_ENABLED": "False", **env}
    with log.open("w") as sink:
        process = subprocess.Popen([sys.executable, script], cwd=REPO, env=environment,
                                   stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_up(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        print(log.read_text()[-4000:])


def _wait_until_up(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app exited early:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"the app did not answer within {START_TIMEOUT_S} s")
