"""How soon a visitor sees the chain: from the click on Run to step 0 on screen, to the first
copy (step 1) on screen, to its scores, and to the end of the page's default run.

The app is started in a subprocess on a free port, as a Space starts it, and the page's default
run is submitted through the page's own streaming event (`/run`, gradio_client), exactly as the
Run button sends it: the default example (photo-moss, 2048 x 1280), 10 steps of `simulate`, the
page's default metrics (brisque, niqe, piqe, entropy + psnr, ssim). Each update is stamped as it
arrives. The first run is clicked as soon as the page answers (the metrics still load: a visitor
who clicks at once); the second after the first has ended (a visitor who clicks once the
page has loaded them). The load average is printed with each run.

    .venv/bin/python bench/first_copy.py [--steps 10] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _setup
from startup import free_port, wait_for_page

EXAMPLE = _setup.REPO / "assets" / "examples" / "photo-moss.png"
STRIP, PLOT = 2, 3  # the page's outputs (page/run_tab/outputs.py PageOutputs)


def shown_frames(update: list[Any]) -> int:
    """How many frames the strip shows."""
    return (update[STRIP] or "").count("<img")


def scored_steps(update: list[Any]) -> int:
    """How many steps the psnr curve has reached (its step 0 is the input's own)."""
    plot = update[PLOT]
    if not plot:
        return 0
    figure = json.loads(plot["plot"])
    psnr = next((t for t in figure["data"] if t["name"].startswith("psnr")), None)
    return 0 if psnr is None else sum(y is not None for y in psnr["y"])


def one_run(url: str, steps: int) -> dict[str, float]:
    """The default run through /run: seconds from the submit to each moment."""
    from gradio_client import Client, handle_file

    from banana_space.scores.catalog import CPU_DEFAULTS
    from page.run_tab.form import RunForm

    client = Client(url, verbose=False)
    form = RunForm.named(upload=handle_file(str(EXAMPLE)), steps=steps,
                         metrics=list(CPU_DEFAULTS), judge_at="every")
    moments: dict[str, float] = {}
    load = os.getloadavg()[0]
    clicked = time.perf_counter()
    update: list[Any] = [""]
    for update in client.submit(*form.inputs(), api_name="/run"):
        now = time.perf_counter() - clicked
        for name, reached in (("step 0 shown", shown_frames(update) >= 1),
                              ("first copy (step 1) shown", shown_frames(update) >= 2),
                              ("first copy's scores", scored_steps(update) >= 2)):
            if reached:
                moments.setdefault(name, now)
    moments["the run's end"] = time.perf_counter() - clicked
    moments["completed"] = float("Completed" in str(update[0]))
    moments["load before"] = load
    return moments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="banana-bench-first-copy-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    environment = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1",
                   "GRADIO_SERVER_PORT": str(port), "BANANA_RUNS_DIR": str(root / "runs")}
    with (root / "app.log").open("w") as log:
        app = subprocess.Popen([sys.executable, "app.py"], cwd=_setup.REPO, env=environment,
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_page(url, app)
        runs = [one_run(url, args.steps) for _ in range(args.runs)]
    finally:
        app.terminate()
        app.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    print(_setup.describe_machine())
    names = [name for name in runs[0] if name != "load before"]
    _setup.print_table(
        f"the page's default run ({EXAMPLE.name}, 2048 x 1280, {args.steps} steps): seconds "
        "from the click on Run", ["moment", *(f"run {i + 1}" + (" (metrics loading)" if i == 0
                                                               else "")
                                             for i in range(len(runs)))],
        [[name, *(round(run.get(name, float("nan")), 2) for run in runs)] for name in names]
        + [["load average (1 min) before", *(round(run["load before"], 1) for run in runs)]])


if __name__ == "__main__":
    main()
