"""One 2048 x 2048 frame scored with brisque, niqe, piqe, entropy, psnr and ssim: the engine
against bare pyiqa, side by side in one run (issue 12's goals: <= 1/3 of the time, <= 2 GB
added to the peak; issue 35's: <= 0.15 of the time, memory as before or less). The engine
before issue 35 (issue 12's equivalents only: entropy, ssim in 128² tiles) runs beside them.

Each way runs in its own child process (bare pyiqa peaks near 10 GB at 2K, so it runs once, not
in a loop): every metric is created once and warmed up on a small frame, then the 2K frame (a
real photo, and one `simulate` step of it as the frame) is scored once and timed metric by
metric. Peak memory is the kernel's high-water mark (VmHWM) reset just before scoring, minus the
resident memory at that moment. The scores of both ways must agree to 1e-6 relative. A third
child is the engine with THP_MEM_ALLOC_ENABLE=1 (torch's CPU allocator on transparent huge
pages, which the engine once turned on and now leaves off: see budget.return_freed_memory).
Check `free -g` first: nothing else heavy should run meanwhile.

    .venv/bin/python bench/scoring_2k.py [--side 2048] [--skip-bare]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import _setup

NO_REFERENCE = ("brisque", "niqe", "piqe", "entropy")
FIDELITY = ("psnr", "ssim")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def frames(side: int) -> tuple:
    from banana_space.backends.simulate import SimulateBackend

    reference = _setup.photo(side)
    return SimulateBackend().edit(reference, "", seed=0, step=1).image, reference


def engine(side: int, before: bool = False) -> dict:
    """The engine's Scorer, as a run scores a frame (memory budget and all); `before`: with
    only issue 12's exact equivalents."""
    if before:
        _setup.use_equivalents_before_issue_35()
    from banana_space.scores.scoring import Scorer

    scorer = Scorer(NO_REFERENCE)
    list(scorer.load())
    assert scorer.metrics == [*NO_REFERENCE, *FIDELITY], scorer.unavailable
    scorer.score(*frames(256))
    per_metric: dict[str, float] = {}
    pool_score = scorer.pool.score

    def timed(name: str, *args: object) -> float:  # the pool's own call, with a stopwatch
        started = time.perf_counter()
        value = pool_score(name, *args)
        per_metric[name] = time.perf_counter() - started
        return value

    scorer.pool.score = timed
    image, reference = frames(side)
    resident = rss_mb()
    _setup.reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    scores = scorer.score(image, reference).scores
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
            "peak_added": _setup.peak_since_reset_mb() - resident, "scores": scores,
            "per_metric": per_metric}


def bare(side: int) -> dict:
    """pyiqa itself: metrics created once, called on tensors, one after another."""
    import pyiqa
    import torch

    from banana_space.scores.catalog import seed_weights, to_tensor

    seed_weights(_setup.WEIGHTS)  # as the engine does before its first pyiqa metric
    metrics = {name: pyiqa.create_metric(name, device="cpu")
               for name in (*NO_REFERENCE, *FIDELITY)}

    def score_all(image, reference, per_metric: dict) -> dict:
        x, ref = to_tensor(image), to_tensor(reference)
        scores = {}
        with torch.inference_mode():
            for name, metric in metrics.items():
                started = time.perf_counter()
                scores[name] = float(metric(x, ref) if name in FIDELITY else metric(x))
                per_metric[name] = time.perf_counter() - started
        return scores

    score_all(*frames(256), {})
    image, reference = frames(side)
    before, per_metric = rss_mb(), {}
    _setup.reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    scores = score_all(image, reference, per_metric)
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
            "peak_added": _setup.peak_since_reset_mb() - before, "scores": scores,
            "per_metric": per_metric}


def in_child(way: str, side: int, **env: str) -> dict:
    load = os.getloadavg()[0]
    return {**_setup.child_result(__file__, "--child", way, "--side", str(side), env=env),
            "load": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=2048)
    parser.add_argument("--skip-bare", action="store_true")
    parser.add_argument("--thp", action="store_true")
    parser.add_argument("--child", choices=("engine", "before", "bare"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        work = {"engine": engine, "before": lambda side: engine(side, before=True),
                "bare": bare}[args.child]
        print(json.dumps(work(args.side)))
        return
    results = {"engine": in_child("engine", args.side),
               "engine before issue 35": in_child("before", args.side)}
    if args.thp:
        results["engine, THP on"] = in_child("engine", args.side, THP_MEM_ALLOC_ENABLE="1")
    if not args.skip_bare:
        results["bare pyiqa"] = in_child("bare", args.side)
    reference = results.get("bare pyiqa", results["engine"])["scores"]
    for result in results.values():
        for name, value in result["scores"].items():
            assert abs(value - reference[name]) <= 1e-10 * abs(reference[name]), (name, value)
    floor = results.get("bare pyiqa", results["engine"])
    print(_setup.describe_machine())
    _setup.print_table(
        f"one {args.side} x {args.side} frame, {', '.join((*NO_REFERENCE, *FIDELITY))}; goals: "
        "engine <= 0.15 of bare pyiqa's time (issue 35), <= 2048 MB added (issue 12)",
        ["way", "wall s", "CPU s", "peak MB added", "wall / bare", "CPU / bare", "load (1 min)"],
        [[way, r["wall"], r["cpu"], round(r["peak_added"]), round(r["wall"] / floor["wall"], 3),
          round(r["cpu"] / floor["cpu"], 3), round(r["load"], 1)] for way, r in results.items()])
    for way, result in results.items():
        print(f"{way}, wall seconds by metric: " + ", ".join(
            f"{name} {seconds:.2f}" for name, seconds in result["per_metric"].items()))
    print("scores (engine): " + ", ".join(f"{name} {value:.6g}" for name, value in
                                          results["engine"]["scores"].items()))


if __name__ == "__main__":
    main()
