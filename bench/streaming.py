"""How long a frame's update takes to leave the server once its scores are ready.

Everything the app does between "frame i is scored" and "the update is on the wire", in the
order it happens: `RunDir.record` (the scores' CSVs and run.json; the frame's PNG was written
when it was made, while it was being scored), `RunView.apply` (plot, table, strip),
`page.run_tab.outputs.shown` (the strip's HTML), gradio's `Blocks.postprocess_data` for the run
endpoint's outputs (gr.Plot serialises the figure to JSON, gr.Image and gr.ImageSlider hash the
current frames into gradio's cache), the streaming diff against the previous update, and the JSON of
the message. It is measured at steps 10, 50 and 100 with 25 score columns, on a run directory
of 1024 x 1024 PNG frames, because every one of these costs can grow with the step number.
Goal: < 50 ms per update, flat in the step number.

    .venv/bin/python bench/streaming.py
"""

from __future__ import annotations

import asyncio
import copy
import os
import shutil
import socket
import statistics
import tempfile
import time
from pathlib import Path

import _setup
import numpy as np
import orjson

COLUMNS = 25
STEPS = (10, 50, 100)
REPEATS = 5
FRAME_SIDE = 1024


def _history(steps: int):
    """25 columns (2 fidelity, 23 metrics), each a seeded random walk over `steps` steps."""
    from banana_space.events import ScoreInfo
    from banana_space.verdict.history import History

    infos = [ScoreInfo("psnr", "fidelity", False), ScoreInfo("ssim", "fidelity", False)]
    infos += [ScoreInfo(f"metric_{i:02d}", "metric", i % 2 == 0) for i in range(COLUMNS - 2)]
    history = History(infos)
    rng = np.random.default_rng(0)
    walks = np.cumsum(rng.normal(0, 1, (steps + 1, COLUMNS)), axis=0) + 50
    for step in range(steps + 1):
        history.add(step, {info.name: float(v) for info, v in zip(infos, walks[step],
                                                                     strict=True)})
    return history


def _run_dir(root: Path, frame, frames: int) -> Path:
    """A run directory as the engine writes it, holding `frames` frames: frame 0 written by
    `RunDir`, the others copies of its files (the same bytes to hash as real frames)."""
    from banana_space.events import FrameMade
    from banana_space.store.rundir import RunDir

    run = RunDir.create(root / "runs", "bench-run")
    run.record(FrameMade(0, frame))
    for first in run.path.rglob("*step_000.*"):
        for step in range(1, frames):
            shutil.copyfile(first, first.with_name(first.name.replace("000", f"{step:03d}")))
    return run.path


def _recorder(root: Path, history, step: int):
    """A fresh `RunDir` holding steps 0..step-1 of `history`, ready to record frame `step`."""
    from banana_space.events import Started
    from banana_space.store.rundir import RunDir
    from banana_space.verdict.history import StepRow

    run = RunDir.create(root / "recorded")
    run.record(Started(run.path, 100, list(history.infos.values()), {}, {}))
    run.history = copy.deepcopy(history)
    run.history.steps = {s: StepRow(s, 1.0, 3.0, 1) for s in range(step)}
    return run


async def _postprocess(demo, block_fn, outputs: list) -> list:
    """gradio's postprocessing of one update, inside the app's context like a live request."""
    from gradio.context import LocalContext

    LocalContext.blocks.set(demo)
    return await demo.postprocess_data(block_fn, outputs, None)


def _timed(times: dict[str, float], name: str, work):
    started = time.perf_counter()
    result = work()
    times[name] = time.perf_counter() - started
    return result


def _one_update(demo, block_fn, view, run, made, scored, session: str) -> dict[str, float]:
    """Time each stage of the update that shows frame i's scores, once they are ready. Frame i
    itself was written and shown while it was being scored (the `FrameMade` update, whose
    screen primes gradio's diff state here)."""
    from page.run_tab.outputs import shown

    times: dict[str, float] = {}
    _timed(times, "(write frame)", lambda: run.record(made))
    previous = asyncio.run(_postprocess(demo, block_fn, list(shown(view.apply(made)))))
    _timed(times, "record", lambda: run.record(scored))
    screen = _timed(times, "apply", lambda: view.apply(scored))
    outputs = _timed(times, "shown", lambda: list(shown(screen)))
    data = _timed(times, "postprocess", lambda: asyncio.run(_postprocess(demo, block_fn, outputs)))
    demo.handle_streaming_diffs(block_fn, previous, session, "run", final=False)
    message = _timed(times, "diff+json", lambda: orjson.dumps({"output": {
        "data": demo.handle_streaming_diffs(block_fn, data, session, "run", final=False)}}))
    demo.handle_streaming_diffs(block_fn, data, session, "run", final=True)
    times["update"] = sum(t for stage, t in times.items() if stage != "(write frame)")
    times["kB sent"] = len(message) / 1024
    return times


def measure(demo, root: Path, frame, step: int) -> dict[str, float]:
    """Median over REPEATS of the update for frame `step`, everything holding 0..step-1."""
    from banana_space.events import FrameMade, FrameScored
    from banana_space.view import RunView

    block_fn = next(fn for fn in demo.fns.values() if fn.api_name == "run")
    full = _history(step)
    before = copy.deepcopy(full)
    for series in before.scores.values():
        del series[step:]
    made = FrameMade(step, frame)
    scored = FrameScored(step, frame, {n: s[step] for n, s in full.scores.items()})
    run_dir = root / "runs" / "bench-run"
    samples = []
    for repeat in range(REPEATS):
        view = RunView(run_dir=run_dir, steps=100, history=copy.deepcopy(before),
                       last_step=step - 1)
        samples.append(_one_update(demo, block_fn, view, _recorder(root, before, step), made,
                                   scored, f"s{step}-{repeat}"))
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def main() -> None:
    from banana_space.backends.simulate import SimulateBackend

    root = Path(tempfile.mkdtemp(prefix="banana-bench-streaming-"))
    os.environ["GRADIO_TEMP_DIR"] = str(root / "gradio-cache")
    os.environ["BANANA_RUNS_DIR"] = str(root / "runs")
    try:
        import app

        frame = SimulateBackend().edit(_setup.photo(FRAME_SIDE), "", seed=0, step=1).image
        _run_dir(root, frame, max(STEPS) + 1)
        # Launched as app.py launches it, so gradio checks each file's path as it does live.
        demo = app.build()
        demo.launch(prevent_thread_lock=True, quiet=True, server_name="127.0.0.1",
                    server_port=_free_port(), allowed_paths=[str(app.SETTINGS.runs_root)])
        results = {step: measure(demo, root, frame, step) for step in STEPS}
        demo.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(_setup.describe_machine())
    headers = list(results[STEPS[0]])
    _setup.print_table(
        f"One streamed update, {COLUMNS} curves, {FRAME_SIDE}px frames, median of {REPEATS} "
        "(ms); goal: update < 50 ms and flat in the step",
        ["step", *headers],
        [[step, *(round(v, 1) if k == "kB sent" else round(v * 1000, 1) for k, v in r.items())]
         for step, r in results.items()])
    print("update = record (the scores' files) + apply + shown + postprocess + diff+json. "
          "(write frame), the frame and its thumbnail, is done when the frame is made, while "
          "the scorer scores it: off this path.")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


if __name__ == "__main__":
    main()
