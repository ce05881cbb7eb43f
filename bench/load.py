"""The real app under load: many visitors at once, and many runs in a row.

`python app.py` runs in a subprocess on a free port; visitors are gradio_client clients calling
the documented /run_chain. The server's memory is read from /proc/<pid>/status: VmRSS now, VmHWM
(its peak since it started), and its thread count.

- visitors: N visitors at once, each uploading its own 2048 x 2048 image (a real photo with
  planted noise) for a 2-step simulate chain with the four CPU metrics (+ psnr, ssim). Prints
  the server's resident memory after a warm-up run, its peak, and the budget
  (BANANA_MEMORY_GB, given with --budget-gb); every run must complete.
- soak: R small runs back to back in one server process; prints RSS and threads after run 10
  and after run R (goal: RSS within 10 %, threads flat).
- hall: a lecture hall, N visitors (30 by default) pressing Run at once on the page's default
  run (photo-moss, 2048 x 1280, `--steps` steps, the default metrics) through the page's own
  streaming /run, after one warm-up run (the metrics loaded, as a first page visit does):
  the time until every visitor sees a first copy, until the last run ends, the frames made a
  minute, the server's peak memory, and how many runs completed.

    .venv/bin/python bench/load.py visitors [--visitors 8] [--side 2048] [--budget-gb 4]
    .venv/bin/python bench/load.py soak [--runs 100] [--side 256]
    .venv/bin/python bench/load.py hall [--visitors 30] [--steps 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from statistics import median

import _setup
from startup import free_port, wait_for_page

METRICS = ["brisque", "niqe", "piqe", "entropy"]


def server_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM in MB, and Threads, of the server process."""
    wanted = {"VmRSS:": "rss", "VmHWM:": "peak", "Threads:": "threads"}
    status = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split()[0] if line.strip() else ""
        if key in wanted:
            value = int(line.split()[1])
            status[wanted[key]] = value // 1024 if key != "Threads:" else value
    return status


@contextmanager
def app_server(root: Path, **env: str) -> Iterator[tuple[str, int]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    environment = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1",
                   "GRADIO_SERVER_PORT": str(port), "BANANA_RUNS_DIR": str(root / "runs"),
                   "BANANA_KEEP_RUNS": "1000", **env}
    with (root / "app.log").open("w") as log:
        process = subprocess.Popen([sys.executable, "app.py"], cwd=_setup.REPO, env=environment,
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_page(url, process)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_once(url: str, image: Path, seed: int, steps: int = 2) -> str:
    """One visitor's run through the documented /run_chain; returns the run's status."""
    import json

    from gradio_client import Client, handle_file

    # a busy server answers an upload slowly: httpx's 5 s default is not a failure of ours
    client = Client(url, verbose=False, httpx_kwargs={"timeout": 600})
    answer = client.predict(handle_file(str(image)), steps, "simulate", ",".join(METRICS), seed,
                            "", api_name="/run_chain")
    client.close()
    return json.loads(answer)["status"]


def noisy_photo(side: int, seed: int, path: Path) -> Path:
    import numpy as np
    from PIL import Image

    pixels = np.asarray(_setup.photo(side), dtype=np.int16)
    grain = np.random.default_rng(seed).integers(-8, 9, pixels.shape)
    Image.fromarray(np.clip(pixels + grain, 0, 255).astype(np.uint8)).save(path)
    return path


def visitors(root: Path, count: int, side: int, budget_gb: float) -> None:
    images = [noisy_photo(side, seed, root / f"visitor-{seed}.png") for seed in range(count)]
    warm = noisy_photo(256, 99, root / "warm.png")
    with app_server(root, BANANA_MEMORY_GB=str(budget_gb)) as (url, pid):
        assert run_once(url, warm, 0) == "completed"
        before = server_status(pid)
        with ThreadPoolExecutor(max_workers=count) as pool:
            finals = list(pool.map(lambda i: run_once(url, images[i], i), range(count)))
        after = server_status(pid)
    completed = finals.count("completed")
    print(_setup.describe_machine())
    _setup.print_table(
        f"{count} visitors at once, each a 2-step chain on its own {side}² upload "
        f"(BANANA_MEMORY_GB={budget_gb})",
        ["server", "MB"], [["RSS after a warm-up run", before["rss"]],
                           ["peak RSS (VmHWM) over the whole bench", after["peak"]],
                           ["peak minus warm RSS", after["peak"] - before["rss"]],
                           ["budget", round(budget_gb * 1024)]])
    print(f"runs completed: {completed} of {count}")


def soak(root: Path, runs: int, side: int) -> None:
    image = noisy_photo(side, 1, root / "soak.png")
    marks = {}
    with app_server(root) as (url, pid):
        for number in range(1, runs + 1):
            assert run_once(url, image, number) == "completed", number
            if number in (10, runs):
                marks[number] = server_status(pid)
    ten, last = marks[10], marks[runs]
    print(_setup.describe_machine())
    _setup.print_table(f"{runs} runs back to back in one server (2 steps, {side}², "
                       f"{', '.join(METRICS)} + psnr, ssim)",
                       ["after run", "RSS MB", "threads"],
                       [[10, ten["rss"], ten["threads"]], [runs, last["rss"], last["threads"]]])
    print(f"RSS change from run 10 to run {runs}: {100 * (last['rss'] / ten['rss'] - 1):+.1f} % "
          f"(goal within 10 %); threads {ten['threads']} -> {last['threads']}")


def hall(root: Path, count: int, steps: int) -> None:
    from first_copy import EXAMPLE, one_run

    warm = noisy_photo(256, 99, root / "warm.png")
    with app_server(root) as (url, pid):
        assert run_once(url, warm, 0) == "completed"
        load = os.getloadavg()[0]
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=count) as pool:
            runs = list(pool.map(lambda _: one_run(url, steps), range(count)))
        wall = time.perf_counter() - started
        peak = server_status(pid)["peak"]
    copies = [run.get("first copy (step 1) shown", float("nan")) for run in runs]
    ends = [run["the run's end"] for run in runs]
    completed = int(sum(run["completed"] for run in runs))
    print(_setup.describe_machine())
    _setup.print_table(
        f"a hall of {count} visitors pressing Run at once: {EXAMPLE.name} (2048 x 1280), "
        f"{steps} steps, the default metrics; load average (1 min) {load:.1f} at the start",
        ["measure", "value"],
        [["every visitor has seen a first copy, s", round(max(copies), 1)],
         ["the median visitor's first copy, s", round(median(copies), 1)],
         ["the first visitor's first copy, s", round(min(copies), 1)],
         ["the last run has ended, s", round(max(ends), 1)],
         ["frames made a minute", round(60 * completed * (steps + 1) / wall, 1)],
         ["server's peak RSS (VmHWM), MB", peak],
         ["runs completed", f"{completed} of {count}"]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    crowd = sub.add_parser("visitors")
    crowd.add_argument("--visitors", type=int, default=8)
    crowd.add_argument("--side", type=int, default=2048)
    crowd.add_argument("--budget-gb", type=float, default=4.0)
    long = sub.add_parser("soak")
    long.add_argument("--runs", type=int, default=100)
    long.add_argument("--side", type=int, default=256)
    lecture = sub.add_parser("hall")
    lecture.add_argument("--visitors", type=int, default=30)
    lecture.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="banana-bench-load-"))
    try:
        if args.what == "visitors":
            visitors(root, args.visitors, args.side, args.budget_gb)
        elif args.what == "hall":
            hall(root, args.visitors, args.steps)
        else:
            soak(root, args.runs, args.side)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
