"""Run `simulate` profiles on the bundled clean starts at full size, in parallel, and keep each
run's CSVs (not its frames): the runs behind docs/detection_*.md and
banana_space/verdict/floors.csv.

Shared by scripts/detection_table.py and scripts/measure_floors.py, so the nuisance runs that
give the floors are the very runs the tables count false alarms on. Each run makes every frame
of the chain with the engine's `simulate` backend and scores frames with the engine's `Scorer`
(the scores `python -m banana_space run` would write), but only at `SCORED_STEPS`: the paper's
checkpoints 5, 10 and 20, step 1 (the paper's base) and step 0 (the input, fidelity's
reference); 2 cores shared by six engineers could not score all 21 frames of every run at
full size (`SIDE`) in the time there was. A frame identical, bit for bit, to one already scored
gets that frame's scores (in one process a score is a function of the frame's pixels; between
machines the frames are the same bits but BRISQUE's float32 arithmetic is not:
docs/recordings.md says what moves), which makes the nuisance chains, whose frames repeat,
nearly free. Each run's run.json (settings, columns) and scores.csv (step,metric,score,delta,
as a run directory's) go to `RUNS/<profile>--<start>/` (under a subfolder where the job names
one: scripts/start_smoothness.py keeps each size in its own, `1536px/`); a run already there is
not made again (delete its folder to re-make it: the folder's name does not hold the size). At
most `workers` processes (spawned: torch's thread pools do not survive a fork), the cores shared
between them. A job may smooth its start first
(`SMOOTHINGS`, after the resize to `side`): scripts/start_smoothness.py's variable.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("BANANA_WEIGHTS_DIR", str(REPO.parent / "shared" / "weights"))

EXAMPLES = REPO / "assets" / "examples"
RUNS = REPO / "docs" / "detection_runs"
SCORED_STEPS = (0, 1, 5, 10, 20)  # and the last step, where a run is longer
# The photographic starts, then one flat synthetic render (the others held out for time).
CLEAN_STARTS = ("photo-moss", "photo-nuthatch", "photo-flower", "photo-facade", "clean-dunes")
SIDE = 1536  # px, longest side: the claim is about 2K frames
SUITE_METRICS = ("classics", "rulers")  # psnr and ssim come with every run
LOAD_SECONDS = 1800
# The damage profiles modelled on a measurement (Mi-Ripple's, and Banana100's for the default),
# in the order the tables show them; the older described-only ones run when named.
MEASURED = ("nano-banana-pro", "lattice-ripple", "granular")


def _gaussian(sigma: float):
    def smooth(pixels):
        from scipy import ndimage

        return ndimage.gaussian_filter(pixels, (sigma, sigma, 0))
    return smooth


def _total_variation(pixels):
    """scikit-image's TV denoising (Chambolle 2004) at its own default weight (0.1 on 0..1
    values): flat regions flattened, edges kept, as in the clean look of generated images."""
    from skimage.restoration import denoise_tv_chambolle

    return denoise_tv_chambolle(pixels / 255, weight=0.1, channel_axis=-1) * 255


# A start's smoothing, by name (float pixels 0..255 -> float pixels, rounded to 8 bits after):
# how smooth the start is, as a measured variable (the paper's starts were smooth renders).
SMOOTHINGS = {"gauss-1.0": _gaussian(1.0), "gauss-1.5": _gaussian(1.5),
              "tv": _total_variation}


@dataclass(frozen=True)
class Job:
    profile: str
    start: str  # a file stem in assets/examples
    steps: int
    side: int  # longest side, px
    metrics: tuple[str, ...]
    smoothing: str = ""  # a key of SMOOTHINGS, applied to the start; "": as it is
    folder: str = ""  # the subfolder of the runs folder its run is kept in ("": none)

    @property
    def name(self) -> str:
        return f"{self.profile}--{self.start}" + (f"~{self.smoothing}" if self.smoothing else "")

    def place(self, runs: Path) -> Path:
        """Where its run.json and scores.csv are kept under `runs`."""
        return runs / self.folder / self.name


def start_image(job: Job):
    """The job's start: the file at `side` px on its long side, smoothed as the job says."""
    import numpy as np
    from PIL import Image

    with Image.open(start_path(job.start)) as opened:
        image = opened.convert("RGB")
    image.thumbnail((job.side, job.side), Image.Resampling.LANCZOS)
    if not job.smoothing:
        return image
    smoothed = SMOOTHINGS[job.smoothing](np.asarray(image, dtype=np.float32))
    return Image.fromarray(np.clip(np.rint(smoothed), 0, 255).astype(np.uint8), "RGB")


def start_path(stem: str) -> Path:
    found = sorted(EXAMPLES.glob(f"{stem}.*"))
    if not found:
        raise FileNotFoundError(f"no start named {stem!r} in {EXAMPLES}")
    return found[0]


def done(runs: Path, job: Job) -> bool:
    meta = job.place(runs) / "run.json"
    return meta.is_file() and json.loads(meta.read_text()).get("status") == "completed"


def _run(job: Job, runs: Path) -> tuple[str, float]:
    """One chain, scored at `SCORED_STEPS`; its run.json and scores.csv in `job.place(runs)`."""
    import hashlib
    from dataclasses import asdict

    from banana_space.backends.simulate import SimulateBackend
    from banana_space.chain.runs import scorer_for
    from banana_space.scores.catalog import expand_metric_names
    from banana_space.verdict.history import History

    began = time.monotonic()
    image = start_image(job)
    scorer = scorer_for(expand_metric_names(",".join(job.metrics)), pool=_pool())
    for _ in scorer.load():
        pass
    if scorer.unavailable:  # a run missing a score would quietly shrink the table
        raise RuntimeError(f"{job.name}: unavailable: {scorer.unavailable}")
    backend, history = SimulateBackend(profile=job.profile), History(scorer.infos)
    scored: dict[bytes, dict[str, float]] = {}
    frame = reference = image
    for step in range(job.steps + 1):
        if step:
            frame = backend.edit(frame, "", seed=0, step=step).image
        if step in SCORED_STEPS or step == job.steps:
            key = hashlib.sha256(frame.tobytes() + repr(frame.size).encode()).digest()
            if key not in scored:
                scored[key] = scorer.measure(frame, reference).scores
            history.add(step, scored[key])
    target = job.place(runs)
    target.mkdir(parents=True, exist_ok=True)
    rows = [[step, name, score, history.deltas(name)[step]]
            for step in range(history.last_step + 1) for name, series in history.scores.items()
            if math.isfinite(score := series[step])]
    with (target / "scores.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows([["step", "metric", "score", "delta"], *rows])
    meta = {"status": "completed", "settings": {
        "backend": "simulate", "backend_settings": backend.settings(), "start": job.start,
        "smoothing": job.smoothing,
        "input_size": list(image.size), "steps": job.steps, "seed": 0,
        "scored_steps": sorted({s for s in SCORED_STEPS if s <= job.steps} | {job.steps}),
        "frames_scored": len(scored)}, "unavailable": scorer.unavailable,
        "columns": [asdict(info) for info in scorer.infos],
        "seconds_total": round(time.monotonic() - began, 1)}
    (target / "run.json").write_text(json.dumps(meta, indent=2) + "\n")
    return job.name, time.monotonic() - began


@functools.cache
def _pool():
    """This process's metrics, with time to load on a busy machine (the app's pool gives up
    after 30 s, which 2 cores shared by many processes can take)."""
    from banana_space.scores.pool import MetricPool

    return MetricPool(load_seconds=LOAD_SECONDS)


def _start_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def run_all(jobs: Sequence[Job], runs: Path = RUNS, workers: int = 2) -> None:
    """Make every job not yet in `runs`, `workers` at a time, printing each as it ends."""
    todo = [job for job in jobs if not done(runs, job)]
    print(f"{len(jobs) - len(todo)} runs already made, {len(todo)} to make", file=sys.stderr)
    if not todo:
        return
    threads = max(1, (os.cpu_count() or 1) // workers)
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers, initializer=_start_worker, initargs=(threads,)) as pool:
        results = [pool.apply_async(_run, (job, runs)) for job in todo]
        for result in results:
            name, seconds = result.get()
            print(f"  {name}: {seconds:.0f} s", file=sys.stderr, flush=True)


def read(runs: Path, job: Job):
    """A made run: its run.json and its scores as a `History` (NaN at unscored steps)."""
    from banana_space.store.run import Run, read_history

    run = Run(job.place(runs))
    meta = json.loads(run.meta_file.read_text())
    return meta, read_history(run.scores_file, meta)


def jobs_for(profiles: Sequence[str], starts: Sequence[str], steps: int, side: int,
             metrics: Sequence[str] = SUITE_METRICS, smoothing: str = "",
             folder: str = "") -> list[Job]:
    return [Job(p, s, steps, side, tuple(metrics), smoothing, folder)
            for p in profiles for s in starts]


def main() -> None:
    from banana_space.backends.simulate import PROFILES, profiles_of_kind

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    suite = [*MEASURED, *profiles_of_kind("control"), *profiles_of_kind("nuisance")]
    parser.add_argument("--profiles", default=",".join(suite),
                        help=f"comma-separated, of: {', '.join(PROFILES)}")
    parser.add_argument("--starts", default=",".join(CLEAN_STARTS))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--side", type=int, default=SIDE, help="longest side, px")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=Path, default=RUNS)
    args = parser.parse_args()
    began = time.monotonic()
    starts = args.starts.split(",")
    jobs = jobs_for(args.profiles.split(","), starts, args.steps, args.side)
    # one start's every chain before the next start's: a run cut short leaves whole starts
    run_all(sorted(jobs, key=lambda job: starts.index(job.start)), args.runs, args.workers)
    print(f"({time.monotonic() - began:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
