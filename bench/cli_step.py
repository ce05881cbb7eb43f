"""What one more step of the default run costs, everything included, through the command line:
the page's default example (photo-moss, 2048 x 1280), the default `simulate` profile, the
default metrics (brisque, niqe, piqe, entropy + psnr, ssim against the input), frames, thumbnails,
scores and the run's zip, exactly as `python -m banana_space run` makes them.

Each run is a fresh `python -m banana_space run` process; its CPU seconds are the child's own
(user + system, every thread, from `wait4`). A run of `--steps` steps and a run of 1 step are
taken in turn, `--repeats` times; one more step costs their difference over the steps between
(start-up, imports, step 0's scores and the summary cancel out). `--checkout DIR` runs another
checkout's CLI beside this one's (the same example, the same Python), to measure a change side
by side. The load average is printed with every run: a busy neighbour stretches CPU time too.

    .venv/bin/python bench/cli_step.py [--steps 10] [--repeats 2] [--checkout /tmp/before]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import _setup

EXAMPLE = _setup.REPO / "assets" / "examples" / "photo-moss.png"


def cli_run(checkout: Path, steps: int, out: Path) -> tuple[float, float, float]:
    """(CPU s, wall s, load average before) of one CLI run in its own process."""
    load = os.getloadavg()[0]
    command = [sys.executable, "-m", "banana_space", "run", str(EXAMPLE), "--steps", str(steps),
               "--backend", "simulate", "--seed", "0", "--out", str(out)]
    wall = time.perf_counter()
    child = subprocess.Popen(command, cwd=checkout, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - wall
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{' '.join(command)} failed: {child.stderr.read()[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall, load


def step_cost(checkout: Path, steps: int, repeats: int) -> dict[str, float]:
    """The median over `repeats` of (CPU of `steps` steps - CPU of 1 step) / (steps - 1)."""
    root = Path(tempfile.mkdtemp(prefix="banana-bench-cli-"))
    costs, walls, loads, zips = [], [], [], []
    try:
        for turn in range(repeats):
            long_cpu, long_wall, load = cli_run(checkout, steps, root / f"long-{turn}")
            short_cpu, short_wall, _ = cli_run(checkout, 1, root / f"short-{turn}")
            costs.append((long_cpu - short_cpu) / (steps - 1))
            walls.append((long_wall - short_wall) / (steps - 1))
            loads.append(load)
            zips += [p.stat().st_size for p in (root / f"long-{turn}").glob("*.zip")]
            print(f"  {checkout.name}: {steps} steps {long_cpu:.1f} CPU s, 1 step "
                  f"{short_cpu:.1f} CPU s, load {load:.1f}", file=sys.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"cpu_per_step": median(costs), "wall_per_step": median(walls),
            "load": median(loads), "zip_mb": max(zips, default=0) / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--checkout", type=Path, action="append", default=[],
                        help="another checkout to run beside this one (repeatable)")
    args = parser.parse_args()
    rows = []
    for checkout in [*args.checkout, _setup.REPO]:
        cost = step_cost(checkout.resolve(), args.steps, args.repeats)
        rows.append([str(checkout), round(cost["cpu_per_step"], 2),
                     round(cost["wall_per_step"], 2), round(cost["zip_mb"], 1),
                     round(cost["load"], 1)])
    print(_setup.describe_machine())
    _setup.print_table(
        f"one more step of the default run through the CLI: {EXAMPLE.name} (2048 x 1280), "
        f"`simulate`, the default metrics; {args.steps} steps against 1, median of "
        f"{args.repeats}", ["checkout", "CPU s/step", "wall s/step", "zip MB", "load (1 min)"],
        rows)


if __name__ == "__main__":
    main()
