"""Many visitors on one real app, for the tests of what one visitor could do to everyone else
(issues 18 and 22): the app as a public Space runs it (`public_app`: visitors told apart by
X-Forwarded-For, as a Space's proxy tells the app, with small caps so a test reaches them),
and the ways a visitor reaches it: gradio_client, raw HTTP on gradio's upload and queue routes.
Every address is a made-up one, every connection loopback."""

from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
from app_server import run_inputs, running_app
from gradio_client import Client, handle_file
from PIL import Image
from raw_api import dependencies

from banana_space.store.run import Run, RunBusy

KEEP_GB = 0.2  # previews may hold 2 MB of it, uploads 50 MB
SETTINGS = {"BANANA_TRUST_PROXY": "1", "BANANA_KEEP_RUNS": "8", "BANANA_RUNS_PER_VISITOR": "2",
            "BANANA_CHAINS_PER_VISITOR": "2", "BANANA_CHAINS_WAITING": "3",
            "BANANA_COST_PER_VISITOR": "20", "BANANA_UPLOAD_MB_PER_VISITOR": "3",
            "BANANA_KEEP_GB": str(KEEP_GB), "GRADIO_HEARTBEAT_INTERVAL": "1"}
TOKEN = "a-secret-of-this-test-" + secrets.token_hex(8)
# How long stop_all waits for every chain to end: a failure bound, not a guess of the speed.
STOP_ALL_S = 300


def uploads_folder(runs: Path) -> Path:
    """disk.UPLOADS for a runs folder (named after it)."""
    digest = hashlib.sha256(str(runs.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"banana-uploads-{digest}"


@contextmanager
def public_app(runs: Path, script: str = "app.py", **env: str) -> Iterator[dict]:
    """The app with `SETTINGS` (and `env`), started by `script`, writing runs under `runs`:
    {"url", "runs", "stale" (files a process killed with -9 left behind, removed when this one
    starts), "index" (events by name)}."""
    stale = [uploads_folder(runs) / "0123abcd" / "someone.png", runs / ".previews" / "old.png"]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left by a killed process")
    with running_app(runs, script, **{**SETTINGS, **env}) as url:
        yield {"url": url, "runs": runs, "stale": stale, "index": dependencies(url)}


def noise(path: Path, width: int, height: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8)).save(path)
    return path


def small(photo: Image.Image) -> Image.Image:
    return photo.resize((96, 64))


_clients: dict[tuple[str, str], Client] = {}


def client(app: dict, who: str) -> Client:
    """The browser of the visitor `who` (an address): one gradio_client per address and app,
    which keeps the browser secret the app gave it (a visitor is a browser, never an
    address), connecting through a Space's proxy from `who`."""
    key = (app["url"], who)
    if key not in _clients:
        _clients[key] = Client(app["url"], verbose=False, headers={"X-Forwarded-For": who})
    return _clients[key]


def browser_cookie(browser: Client) -> dict[str, str]:
    """The header that makes a raw HTTP request come from `browser` (its browser secret)."""
    return {"Cookie": "; ".join(f"{name}={value}" for name, value in browser.cookies.items())}


def upload(app: dict, path: Path, who: str) -> httpx.Response:
    with httpx.Client(timeout=60) as http, path.open("rb") as handle:
        return http.post(f"{app['url']}gradio_api/upload", files={"files": handle},
                         headers={"X-Forwarded-For": who})


def file_data(path: str) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": Path(path).name}


def join(app: dict, name: str, data: list, who: str, session: str | None = None,
         query: str = "", browser: Client | None = None) -> httpx.Response:
    """Join the queue for event `name` and leave: what a flood does (from `browser`, with its
    secret, if given; else from no browser at all)."""
    body = {"data": data, "fn_index": app["index"][name], "event_data": None,
            "session_hash": session or secrets.token_hex(6), "trigger_id": None}
    return httpx.post(f"{app['url']}gradio_api/queue/join{query}", json=body, timeout=30,
                      headers={"X-Forwarded-For": who,
                               **(browser_cookie(browser) if browser else {})})


def run_ids(runs: Path) -> set[str]:
    return {p.parent.name for p in runs.glob("*/run.json")}


def run_dirs(runs: Path) -> set[str]:
    return {p.name for p in runs.iterdir() if not p.name.startswith(".")} if runs.exists() \
        else set()


def wait_for(condition, seconds: float = 300, what: str = "it") -> None:
    """Wait for `condition` (an event); `seconds` is a failure bound, not a guess of the
    machine's speed: under load a child process's imports alone take minutes."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds} s"
        time.sleep(0.2)


def chain_args(image: Path, steps: int, token: str = "") -> tuple:
    return (handle_file(str(image)), steps, "simulate", "entropy", 0, "", token)


def run_args(image: Path, steps: float, seed: float = 0, prompt: str = "Produce an exact "
             "replica of the provided image, with no alterations.", backend: str = "simulate"
             ) -> list:
    """/run's inputs for a chain scored by entropy alone."""
    return run_inputs(handle_file(str(image)), steps, seed=seed, prompt=prompt,
                      backend=backend, metrics=["entropy"])


def stop(app: dict, who: str, token: str = TOKEN) -> None:
    client(app, who).predict(token, api_name="/stop")


def busy_runs(runs: Path, among: set[str] | None = None) -> int:
    """Runs whose writer lock is held now; only those in `among` if given. The lock is held by
    a run's writer, and for a moment by whoever prunes or zips a finished run."""
    busy = 0
    for run_id in run_ids(runs) if among is None else run_ids(runs) & among:
        try:
            os.close(Run(runs / run_id).lock())
        except (RunBusy, FileNotFoundError):
            busy += 1
    return busy


def waiting(app: dict) -> int:
    """Events waiting in gradio's queue (every event of the app: here, the chains)."""
    return httpx.get(f"{app['url']}gradio_api/queue/status", timeout=30).json()["queue_size"]


def stop_all(app: dict, tokens: tuple[str, ...] = (TOKEN,)) -> None:
    """Stop every chain started with one of `tokens`, the waiting ones as they start, until
    none runs and none waits: a chain left waiting would start in a later test."""
    deadline = time.monotonic() + STOP_ALL_S
    while busy_runs(app["runs"]) or waiting(app):
        assert time.monotonic() < deadline, f"chains still ran after {STOP_ALL_S} s of Stop"
        for token in tokens:
            stop(app, "10.0.0.1", token)
        time.sleep(0.5)
