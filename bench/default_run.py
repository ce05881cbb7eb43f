"""Issue 25: the page's default run, end to end: the first example (the clean dunes, 1536 x 1024),
10 steps of the default `simulate` profile, the four classic metrics + psnr and ssim, exactly as
`start_run` makes it for the app (zip included). Reports the wall time, the scoring seconds
per frame and the CPU seconds of the whole run, each way in a fresh process after one warm-up
frame: the engine as it is, with a frame's metrics side by side on every core (the default)
and one after another (BANANA_SCORING_THREADS=1), and the engine before issue 35 (issue 12's
equivalents only: entropy's bincount, ssim in 128² tiles; brisque and niqe pyiqa's own way).
The machine's load average is printed with the numbers: on a shared machine they are noisy.

    .venv/bin/python bench/default_run.py [--steps 10] [--threads 1,2] [--no-before]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import _setup

EXAMPLE = _setup.REPO / "assets" / "examples" / "clean-dunes.png"


def one_run(steps: int, before: bool) -> dict:
    """The run, in this process (a child started by `main`)."""
    import shutil
    import tempfile
    import time

    from PIL import Image

    if before:
        _setup.use_equivalents_before_issue_35()
    from banana_space.chain.runs import RunSpec, start_run
    from banana_space.events import Finished, FrameScored
    from banana_space.scores.catalog import CPU_DEFAULTS
    from banana_space.scores.scoring import SCORING_THREADS

    with Image.open(EXAMPLE) as original:
        image = original.convert("RGB")
    root = Path(tempfile.mkdtemp(prefix="banana-bench-default-"))
    try:
        list(start_run(RunSpec(image.resize((256, 171)), 1, metrics=CPU_DEFAULTS), root))
        load_before = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        events = list(start_run(RunSpec(image, steps, "simulate", metrics=CPU_DEFAULTS), root))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert isinstance(events[-1], Finished) and events[-1].status == "completed", events[-1]
    frames = [e for e in events if isinstance(e, FrameScored)]
    return {"threads": SCORING_THREADS, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "score_s_per_frame": round(sum(f.seconds_score for f in frames) / len(frames), 2),
            "generate_s_per_step": round(sum(f.seconds_generate for f in frames[1:])
                                         / max(1, len(frames) - 1), 2),
            "peak_rss_mb": round(_setup.peak_rss_mb()),
            "load_before": round(load_before, 1), "load_after": round(os.getloadavg()[0], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}")
    parser.add_argument("--no-before", action="store_true",
                        help="leave out the engine before issue 35")
    parser.add_argument("--child", choices=("now", "before"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_run(args.steps, args.child == "before")))
        return
    ways = [("engine", threads) for threads in args.threads.split(",")]
    if not args.no_before:
        ways.insert(1, ("engine before issue 35", str(os.cpu_count())))
    rows = []
    for way, threads in ways:
        child = "before" if "before" in way else "now"
        result = _setup.child_result(__file__, "--child", child, "--steps", str(args.steps),
                                     env={"BANANA_SCORING_THREADS": threads})
        rows.append([way, result["threads"], result["wall_s"], result["cpu_s"],
                     result["score_s_per_frame"], result["generate_s_per_step"],
                     result["peak_rss_mb"], f"{result['load_before']} → {result['load_after']}"])
    print(_setup.describe_machine())
    _setup.print_table(
        f"the default run: {EXAMPLE.name} (1536 x 1024), {args.steps} steps of `simulate`, "
        "brisque, niqe, piqe, entropy + psnr, ssim",
        ["way", "metric threads", "wall s", "CPU s", "scoring s/frame", "generating s/step",
         "peak RSS MB", "load average (1 min) before → after"], rows)


if __name__ == "__main__":
    main()
