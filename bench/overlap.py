"""Does the chain hide its own work behind the generator's?

A run has two kinds of work: asking the generator for frame i+1 (a network call or a GPU step)
and our own, scoring frame i (pyiqa on the CPU) and writing it to the run directory.
`replicate` runs them concurrently, each stage in its own thread (see chain.py).
Here the generator is a stand-in that sleeps `t_gen` and returns a slightly changed copy, so the
only CPU work is ours: the four CPU metrics (psnr and ssim are always added) on 1024 x 1024
frames, and the run directory. t_score is measured on its own in the same process, on frames
scored just before and just after each run.

With perfect overlap a run of N steps takes N x max(t_gen, t_score) plus one t_score (frame 0
is scored while frame 1 is made, the last frame after it is made); run one after the other it
takes N x (t_gen + t_score). With t_gen < t_score scoring sets the pace and the question is
whether the rest (the generator's calls, writing the run directory) hides behind it; with
t_gen > t_score, whether all of our work hides behind the generator. Reported: wall / (N x
max), the goal is <= 1.10, and wall over that perfect bound. The frames' own `seconds_score`
inside the run is shown beside t_score: on a shared machine the CPU we get varies from minute
to minute, by 10 % or more.

    .venv/bin/python bench/overlap.py [--steps 20]     (about 4 minutes)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _setup

from banana_space.backends.base import BackendInfo, Edit, Report, report_nothing
from banana_space.chain.loop import Chain, replicate
from banana_space.chain.producers import Editing
from banana_space.events import Finished, FrameScored
from banana_space.scores.catalog import CPU_DEFAULTS
from banana_space.scores.scoring import Scorer
from banana_space.store.rundir import RunDir

FRAME_SIDE = 1024
GENERATOR_SECONDS = (0.5, 2.0, 5.0)  # 5 s: about what a hosted editor takes per call


class SleepingBackend:
    """A generator that takes `seconds` and changes one pixel: all waiting, no CPU."""

    info = BackendInfo("sleep", "Sleeping stand-in", "waits, then returns a copy")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def unavailable_reason(self) -> str | None:
        return None

    def settings(self) -> dict[str, Any]:
        return {"seconds": self.seconds}

    def edit(self, image: Any, prompt: str, *, seed: int, step: int,
             report: Report = report_nothing) -> Edit:
        time.sleep(self.seconds)
        changed = image.copy()
        changed.putpixel((step % image.width, 0), (step % 256, 0, 0))
        return Edit(changed)


def score_seconds(scorer: Scorer, frame: Any, repeats: int = 3) -> list[float]:
    """t_score on its own: the time to score one frame against frame 0, `repeats` times, in
    one thread of its own as the chain's scorer does (not the main thread, whose allocator
    behaves differently)."""
    edited = SleepingBackend(0).edit(frame, "", seed=0, step=1).image
    times: list[float] = []

    def score() -> None:
        for _ in range(repeats):
            started = time.perf_counter()
            scorer.score(edited, frame)
            times.append(time.perf_counter() - started)

    worker = threading.Thread(target=score)
    worker.start()
    worker.join()
    return times


def run(frame: Any, scorer: Scorer, t_gen: float, steps: int, root: Path) -> dict[str, float]:
    """One chain of `steps` steps, written to a run directory as `start_run` does."""
    run_dir = RunDir.create(root)
    chain = Chain(frame, Editing(SleepingBackend(t_gen), "copy", 0), scorer, steps,
                  run_dir=run_dir.path)
    scored = []
    started = time.perf_counter()
    for event in replicate(chain):
        run_dir.record(event)
        if isinstance(event, FrameScored):
            scored.append(event.seconds_score)
        if isinstance(event, Finished):
            assert event.status == "completed", event
    return {"wall": time.perf_counter() - started, "in-run t_score": statistics.mean(scored)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    steps = parser.parse_args().steps
    root = Path(tempfile.mkdtemp(prefix="banana-bench-overlap-"))
    try:
        frame = _setup.photo(FRAME_SIDE)
        scorer = Scorer(CPU_DEFAULTS)
        list(scorer.load())
        rows = []
        for t_gen in GENERATOR_SECONDS:
            before = score_seconds(scorer, frame)
            result = run(frame, scorer, t_gen, steps, root)
            t_score = statistics.median(before + score_seconds(scorer, frame))
            ideal = steps * max(t_gen, t_score)
            rows.append([t_gen, round(t_score, 2), round(result["in-run t_score"], 2),
                         round(result["wall"], 1), round(ideal, 1),
                         round(result["wall"] / ideal, 3),
                         round(result["wall"] / (ideal + t_score), 3),
                         round((t_gen + t_score) / max(t_gen, t_score), 2)])
        print(_setup.describe_machine())
        _setup.print_table(
            f"{steps} steps, {FRAME_SIDE}px frames, metrics {', '.join(scorer.metrics)}; "
            "goal: wall / (N x max) <= 1.10",
            ["t_gen s", "t_score s alone", "t_score s in run", "wall s", "N x max s",
             "wall / (N x max)", "wall / (N x max + t_score)", "serial would be"], rows)
        print("t_score alone: median of 3 frames scored just before the run and 3 just after. "
              "max = max(t_gen, t_score). A perfect pipeline takes N x max + t_score (frame 0 "
              "is scored too).")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
