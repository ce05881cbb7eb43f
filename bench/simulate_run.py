"""Issue 2: a 20-step 512 x 512 `simulate` run with the four CPU metrics, end to end.

`start_run` exactly as the CLI and the app call it: checks, the metric pool (created here, so
the time includes loading torch, pyiqa and the BRISQUE/NIQE weights), the chain, every frame
scored and written to a run directory in a temporary folder, and the zip at the end.

    .venv/bin/python bench/simulate_run.py [--steps 20] [--side 512]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import _setup

from banana_space.chain.runs import RunSpec, start_run
from banana_space.events import Finished, FrameScored
from banana_space.scores.catalog import CPU_DEFAULTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--side", type=int, default=512)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="banana-bench-simulate-"))
    try:
        spec = RunSpec(_setup.photo(args.side), args.steps, "simulate", metrics=CPU_DEFAULTS)
        wall, cpu = time.perf_counter(), time.process_time()
        events = list(start_run(spec, root))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        frames = [e for e in events if isinstance(e, FrameScored)]
        end = events[-1]
        assert isinstance(end, Finished) and end.status == "completed", end
        written = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(_setup.describe_machine())
    _setup.print_table(
        f"`simulate`, {args.steps} steps, {args.side}px, metrics {', '.join(CPU_DEFAULTS)} "
        "+ psnr, ssim", ["measure", "value"],
        [["wall s (start_run to Finished, zip included)", round(wall, 1)],
         ["CPU s (all threads)", round(cpu, 1)],
         ["frames scored", len(frames)],
         ["mean generate s/step", round(sum(f.seconds_generate for f in frames[1:])
                                        / max(1, len(frames) - 1), 3)],
         ["mean score s/frame", round(sum(f.seconds_score for f in frames) / len(frames), 3)],
         ["run directory MB", round(written / 2**20, 1)],
         ["peak RSS MB", round(_setup.peak_rss_mb())]])


if __name__ == "__main__":
    main()
