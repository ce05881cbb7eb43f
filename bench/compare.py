"""Issue 45: what a comparison costs. Two 10-step chains from the page's default example
(app.DEFAULT_EXAMPLE, photo-moss.png, 2048 x 1280), the lesson "model-like static vs white
noise" (`simulate`'s nano-banana-pro and white-noise profiles), the four classic metrics +
psnr and ssim, run two ways, each in a fresh process after one warm-up frame:

- as a comparison (`lifecycle.start_chain`): both chains at once, the input scored once;
- the same two runs one after the other (`runs.start_run` twice), the input scored twice.

Reports the wall time, the CPU seconds, how many times the input was scored and the peak RSS.
The machine's load average is printed with the numbers: on a shared machine they are noisy.

    .venv/bin/python bench/compare.py [--steps 10]
"""

from __future__ import annotations

import argparse
import json
import os

import _setup

EXAMPLE = _setup.REPO / "assets" / "examples" / "photo-moss.png"  # app.DEFAULT_EXAMPLE


def one_way(way: str, steps: int) -> dict:
    """One way of running the pair, in this process (a child started by `main`)."""
    import shutil
    import tempfile
    import time
    from pathlib import Path

    from PIL import Image

    from banana_space.chain.comparison import PairSpec
    from banana_space.chain.lifecycle import start_chain
    from banana_space.chain.runs import RunSpec, start_run
    from banana_space.chain.sides import side_specs
    from banana_space.compare.lessons import LESSONS
    from banana_space.events import Finished
    from banana_space.scores.catalog import CPU_DEFAULTS, to_tensor
    from banana_space.scores.pool import POOL
    from banana_space.sources.images import LoadedImage

    lesson = LESSONS["static-vs-noise"]
    with Image.open(EXAMPLE) as original:
        loaded = LoadedImage(original.convert("RGB"), [])
    root = Path(tempfile.mkdtemp(prefix="banana-bench-compare-"))
    input_scored = 0
    score = POOL.score

    def counted(name, image, reference=None):  # the input: frame 0, scored against itself
        nonlocal input_scored
        if name == "brisque" and image.shape == first_shape and bool((image == first).all()):
            input_scored += 1
        return score(name, image, reference)

    try:
        list(start_run(RunSpec(loaded.image.resize((256, 160)), 1, metrics=CPU_DEFAULTS), root))
        first = to_tensor(loaded.image)
        first_shape = first.shape
        POOL.score = counted
        load_before = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        if way == "comparison":
            pair = PairSpec(loaded, steps, lesson.a, lesson.b, CPU_DEFAULTS)
            events = [e.event for e in start_chain(pair, root) if hasattr(e, "event")]
        else:
            events = []
            for spec in side_specs(loaded, steps, (lesson.a, lesson.b), CPU_DEFAULTS):
                events += list(start_run(spec, root))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ends = [e for e in events if isinstance(e, Finished)]
    assert [e.status for e in ends] == ["completed"] * 2, ends
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "input_scored": input_scored,
            "peak_rss_mb": round(_setup.peak_rss_mb()),
            "load_before": round(load_before, 1), "load_after": round(os.getloadavg()[0], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--child", choices=("comparison", "one after the other"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_way(args.child, args.steps)))
        return
    rows = []
    for way in ("comparison", "one after the other"):
        result = _setup.child_result(__file__, "--child", way, "--steps", str(args.steps))
        rows.append([way, result["wall_s"], result["cpu_s"], result["input_scored"],
                     result["peak_rss_mb"],
                     f"{result['load_before']} → {result['load_after']}"])
    print(_setup.describe_machine())
    _setup.print_table(
        f"two chains from {EXAMPLE.name} (2048 x 1280), {args.steps} steps each, model-like "
        "static vs white noise, brisque, niqe, piqe, entropy + psnr, ssim",
        ["way", "wall s", "CPU s", "input scored (times)", "peak RSS MB",
         "load average (1 min) before → after"], rows)


if __name__ == "__main__":
    main()
