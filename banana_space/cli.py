"""The command line: the same engine as the app, with a progress bar.

    python -m banana_space run IMAGE --steps N --backend simulate [--profile NAME] --out DIR
    python -m banana_space score FRAMES --out DIR      (a folder, zip or animated GIF/WebP)
    python -m banana_space resume DIR

Keys are read from the environment only (GEMINI_API_KEY), never from the command line, where
they would land in the shell's history.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .events import Event, Finished, FrameScored, Notice, Started
from .images import BadImage, load_image
from .metrics import CPU_DEFAULTS
from .prompts import DEFAULT_PROMPT

EXIT_CODES = {"completed": 0, "failed": 1, "stopped": 130}

# CLI flag -> backend option; only the flags a user gives are passed on.
BACKEND_FLAGS = {"strength": float, "profile": str, "temperature": float, "resolution": str,
                 "guidance_scale": float, "num_inference_steps": int}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m banana_space", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a replication chain on an image")
    run.add_argument("image", type=Path)
    run.add_argument("--steps", type=int, default=10)
    run.add_argument("--backend", default="simulate")
    run.add_argument("--prompt", default=DEFAULT_PROMPT)
    for flag, kind in BACKEND_FLAGS.items():
        run.add_argument("--" + flag.replace("_", "-"), dest=flag, type=kind, default=None)
    score = commands.add_parser("score", help="score a recorded chain (the replay backend)")
    score.add_argument("frames", type=Path, help="a folder, zip, or animated GIF/WebP")
    for command in (run, score):
        command.add_argument("--metrics", default=",".join(CPU_DEFAULTS),
                             help="comma-separated pyiqa no-reference metric names")
        command.add_argument("--judges", default="", help="comma-separated judge names")
        command.add_argument("--seed", type=int, default=0)
        command.add_argument("--out", type=Path, required=True, help="the run directory")
    resume = commands.add_parser("resume", help="continue a killed or stopped run")
    resume.add_argument("run_dir", type=Path)
    return parser


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _events(args: argparse.Namespace, stop: threading.Event) -> Iterator[Event]:
    from .runs import RunSpec, resume_run, start_run

    if args.command == "resume":
        return resume_run(args.run_dir, stop=stop)
    if args.command == "score":
        spec = RunSpec(None, 100, "replay", {"source": str(args.frames)})
    else:
        loaded = load_image(args.image)
        options = {k: getattr(args, k) for k in BACKEND_FLAGS if getattr(args, k) is not None}
        spec = RunSpec(loaded.image, args.steps, args.backend, options, args.prompt,
                       image_notes=loaded.notes)
    spec.seed, spec.metrics, spec.judges = args.seed, _split(args.metrics), _split(args.judges)
    out = args.out.resolve()
    return start_run(spec, out.parent, stop=stop, run_id=out.name)


def _show(events: Iterator[Event]) -> Finished:
    from tqdm import tqdm

    bar: Any = None
    finished = Finished("failed", -1, "the run ended without saying why")
    for event in events:
        if isinstance(event, Started):
            bar = tqdm(total=event.steps + 1, initial=event.first_step, unit="frame")
            tqdm.write(f"run directory: {event.run_dir}")
        elif isinstance(event, FrameScored):
            bar.update(1)
            bar.set_postfix({k: f"{v:.3g}" for k, v in list(event.scores.items())[:4]})
        elif isinstance(event, Notice):
            where = f"step {event.step}: " if event.step is not None else ""
            tqdm.write(f"{event.level}: {where}{event.message}")
        elif isinstance(event, Finished):
            finished = event
    if bar is not None:
        bar.close()
    return finished


def _summary(run_dir: Path) -> str:
    from .rundir import load_run

    rows = load_run(run_dir).history.verdict()
    lines = [f"{'metric':<14}{'Δ5':>10}{'Δ10':>10}{'Δ20':>10}  detects  ρ vs PSNR"]
    for r in rows:
        cells = "".join(f"{v:>10.3g}" if not math.isnan(v) else f"{'-':>10}"
                        for v in (r.delta_5, r.delta_10, r.delta_20))
        detects = {True: "yes", False: "no", None: "?"}[r.detects]
        lines.append(f"{r.metric:<14}{cells}  {detects:<7}  {r.spearman_vs_psnr:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())  # Ctrl-C: stop cleanly, keep frames
    try:
        events = _events(args, stop)
        finished = _show(events)
    except (BadImage, ValueError, FileNotFoundError, FileExistsError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    run_dir = args.run_dir if args.command == "resume" else args.out
    print(f"{finished.status}" + (f": {finished.reason}" if finished.reason else ""))
    if finished.last_step >= 0:
        print(_summary(run_dir))
    return EXIT_CODES[finished.status]
