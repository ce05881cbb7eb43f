"""The command line: the same engine as the app, with a progress bar.

    banana-space run IMAGE --steps N --backend simulate [--profile NAME] --out DIR
    banana-space score FRAMES --out DIR      (a folder, zip, animated GIF/WebP, run directory
                                              or hf://datasets/OWNER/NAME/PATH)
    banana-space resume DIR
    banana-space table SOURCE... --metrics LIST --out DIR [--workers N] [--ray [ADDRESS]]
    banana-space deploy OWNER/NAME [--hardware zero-a10g] [--private] [--secrets] [--bucket NAME]
                        [--dry-run]
    banana-space leaderboard [--out DIR] [--add SOURCE]... [--workers N] [--ray [ADDRESS]]
    banana-space check ORIGINAL EDITED...    (has an edit degraded the image? JSON)
    banana-space why RUN --metric brisque|niqe --step K [--json]
                                             (what moved the score from step 1 to step K)
    banana-space votes RUN [--json]          (the room's votes: each pair's share for its
                                              earlier step, with its 95% Wilson interval)

(`python -m banana_space …` is the same command from a checkout.)

Keys are read from the environment only (GEMINI_API_KEY), never from the command line, where
they would land in the shell's history.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .backends import OPTIONS as BACKEND_OPTIONS
from .events import Event, Finished, FrameJudged, FrameScored, Notice, Started
from .prompts import DEFAULT_PROMPT
from .scores.catalog import CPU_DEFAULTS, PRESET_KEYS, parse_metric_names
from .sources.images import BadImage, load_image

EXIT_CODES = {"completed": 0, "failed": 1, "stopped": 130}

# CLI flag -> backend option, one per option a backend declares (never a secret: keys come
# from the environment); only the flags a user gives are passed on.
BACKEND_FLAGS = {name: option for name, option in BACKEND_OPTIONS.items()
                 if option.flag and not option.secret}


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a replication chain on an image")
    run.add_argument("image", type=Path)
    run.add_argument("--steps", type=int, default=10)
    run.add_argument("--backend", default="simulate")
    run.add_argument("--prompt", default=DEFAULT_PROMPT)
    for flag, option in BACKEND_FLAGS.items():
        run.add_argument("--" + flag.replace("_", "-"), dest=flag, type=option.kind,
                         default=None, help=option.help or option.label or None)
    score = commands.add_parser("score", help="score a recorded chain (the replay backend)")
    score.add_argument("frames", help="a folder, zip, animated GIF/WebP, run directory, or "
                       "hf://datasets/OWNER/NAME/PATH")
    table = commands.add_parser("table", help="the paper's table over many chains")
    table.add_argument("sources", nargs="+", help="folders (chains at any depth), zips, "
                       "GIFs, run directories, or hf://datasets/OWNER/NAME[/PATH]")
    table.add_argument("--workers", type=int, default=None,
                       help="worker processes (default: the cores); with --ray, actors "
                       "(default: one per GPU, else one per CPU)")
    table.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                       help="score on Ray: alone, a local Ray; or a cluster's ADDRESS (auto)")
    for command in (run, score, table):
        command.add_argument("--metrics", default=",".join(CPU_DEFAULTS),
                             help="comma-separated no-reference metric names or presets ("
                                  f"{', '.join(PRESET_KEYS)}), e.g. rulers,brisque")
    table.add_argument("--out", type=Path, required=True, help="the table's folder")
    for command in (run, score):
        command.add_argument("--judges", default="", help="comma-separated judge names")
        command.add_argument("--seed", type=int, default=0)
        command.add_argument("--out", type=Path, required=True, help="the run directory")
    resume = commands.add_parser("resume", help="continue a killed or stopped run")
    resume.add_argument("run_dir", type=Path)
    _deploy_parser(commands)
    _leaderboard_parser(commands)
    check = commands.add_parser("check", help="has an edit degraded the image? (JSON: the "
                                "quality gate for editing agents)")
    check.add_argument("original", type=Path)
    check.add_argument("edited", type=Path, nargs="+", help="one edit, or a chain in order")
    why = commands.add_parser("why", help="what moved a score from step 1 to step K: our exact "
                              "decomposition over its model's feature groups (brisque, niqe)")
    why.add_argument("run_dir", type=Path, metavar="RUN", help="a run directory")
    why.add_argument("--metric", required=True, help="brisque or niqe")
    why.add_argument("--step", type=int, required=True, help="K, compared with step 1")
    why.add_argument("--json", action="store_true", help="print one JSON object")
    votes = commands.add_parser("votes", help="the room's votes on a run's pairs of frames, "
                                "with 95%% Wilson intervals")
    votes.add_argument("run_dir", type=Path, metavar="RUN", help="a run directory")
    votes.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _deploy_parser(commands: Any) -> None:
    deploy = commands.add_parser("deploy", help="publish this checkout as a Hugging Face Space")
    deploy.add_argument("space", metavar="OWNER/NAME")
    deploy.add_argument("--hardware", default=None, help="a new Space: zero-a10g (ZeroGPU, the "
                        "one a free account may use); cpu-basic, l4x1, … need a paid plan")
    deploy.add_argument("--private", action="store_true", help="a private Space")
    deploy.add_argument("--secrets", action="store_true", help="copy GEMINI_API_KEY, "
                        "HF_TOKEN and BANANA_OWNER_KEY from this environment into the Space's "
                        "secrets")
    deploy.add_argument("--bucket", default=None, metavar="NAME", help="keep the runs on this "
                        "Storage Bucket (OWNER/NAME, or NAME beside the Space), created if "
                        "needed and mounted read-write")
    deploy.add_argument("--dry-run", action="store_true", help="list what would be uploaded")
    deploy.add_argument("--source", type=Path, default=Path(), help="the checkout (default: .)")


def _leaderboard_parser(commands: Any) -> None:
    from .leaderboard import Suite

    board = commands.add_parser("leaderboard", help="rank every score on the replication "
                                "suite (regenerates docs/leaderboard)")
    board.add_argument("--out", type=Path, default=Path("docs/leaderboard"))
    board.add_argument("--add", action="append", default=[], metavar="SOURCE",
                       help="real chains to add: a folder or hf://datasets/OWNER/NAME[/PATH]")
    board.add_argument("--metrics", default="", help="default: every no-reference metric, our "
                       "rulers and installed plug-ins")
    board.add_argument("--starts", default=",".join(Suite.starts), help="clean starts")
    board.add_argument("--profiles", default="", help="simulate profiles (default: all)")
    board.add_argument("--size", type=int, default=Suite.size, help="long side, px")
    board.add_argument("--steps", type=int, default=Suite.steps)
    board.add_argument("--every-frame", action="store_true", help="score every frame (default: "
                       "the steps the verdicts read, 0, 1, 5, 10, 20 and the last)")
    board.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    board.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS")
    board.add_argument("--retime", action="store_true", help="measure each score's "
                       "availability and cost again (default: kept from a previous run in DIR)")


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _events(args: argparse.Namespace, stop: threading.Event) -> Iterator[Event]:
    from .chain.runs import resume_run, start_run
    from .chain.spec import RunSpec

    if args.command == "resume":
        return resume_run(args.run_dir, stop=stop)
    chosen = {"seed": args.seed, "judges": _split(args.judges),
              "metrics": parse_metric_names(args.metrics)}
    if args.command == "score":
        spec = RunSpec.replay(str(args.frames), **chosen)
    else:
        options = {k: getattr(args, k) for k in BACKEND_FLAGS if getattr(args, k) is not None}
        spec = RunSpec.of_image(load_image(args.image), args.steps, args.backend,
                                backend_options=options, prompt=args.prompt, **chosen)
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
            bar.update(event.step + 1 - bar.n)  # a recording's gap is a step not made
            bar.set_postfix({k: f"{v:.3g}" for k, v in list(event.scores.items())[:4]})
        elif isinstance(event, FrameJudged):
            scores = ", ".join(f"{k} {v:.3g}" for k, v in event.scores.items())
            tqdm.write(f"step {event.step} judged: {scores}")
        elif isinstance(event, Notice):
            where = f"step {event.step}: " if event.step is not None else ""
            tqdm.write(f"{event.level}: {where}{event.message}")
        elif isinstance(event, Finished):
            finished = event
    if bar is not None:
        bar.close()
    return finished


def _summary(run_dir: Path) -> str:
    from .store.run import Run
    from .verdict.analysis import (
        CHECKPOINTS,
        FLOOR_RULE,
        SINCE_INPUT_HEADER,
        checkpoints,
        paper_test,
        steps_text,
    )
    from .verdict.columns import cli_cells, cli_header

    history = Run(run_dir).load().history
    rows, used = history.verdict(), checkpoints(history.last_step)
    lines = [cli_header()]
    for r in rows:
        notes = [n for n in (r.undecided_because, r.input_contrast) if n]
        lines.append(cli_cells(r) + "".join(f"  {note}" for note in notes))
    read = [f"Δ{step}" for step in used if step in CHECKPOINTS]
    lines.append(f"detects: {paper_test(used)}; "
                 + (f"{', '.join(read)} {'is' if len(read) == 1 else 'are'} from step 1, the "
                    "first copy" if read else "every Δ is from step 1, the first copy")
                 + ("" if len(read) == len(CHECKPOINTS) else "; '-': the run has no such step"))
    lines.append(f"beyond floor: at {steps_text(used) if used else 'every checkpoint'}, "
                 f"{FLOOR_RULE}")
    lines.append(f"{SINCE_INPUT_HEADER}: the change at the last step against the input (ours)")
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "banana-space") -> int:
    """The `banana-space` command (pip's console script) and `python -m banana_space`."""
    args = _parser(prog).parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())  # Ctrl-C: stop cleanly, keep frames
    try:
        if args.command == "table":
            return _table(args, stop)
        if args.command == "deploy":
            from .deploy import run_deploy

            return run_deploy(args.space, args.source, hardware=args.hardware,
                              private=args.private, secrets=args.secrets, bucket=args.bucket,
                              dry_run=args.dry_run)
        if args.command == "leaderboard":
            return _leaderboard(args, stop)
        if args.command == "check":
            return _check(args)
        if args.command == "why":
            return _why(args)
        if args.command == "votes":
            return _votes(args)
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


def _table(args: argparse.Namespace, stop: threading.Event) -> int:
    """The dataset table: what was found first, then bars for chains and frames."""
    from tqdm import tqdm

    from .table import find_chains, found_text, run_table

    metrics = parse_metric_names(args.metrics)
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    workers = args.workers or (None if args.ray else os.cpu_count() or 1)
    refs = find_chains(args.sources)
    print(found_text(refs))
    bars: list[Any] = []

    def start(todo: list, done: list[str]) -> None:
        if done:
            print(f"{len(done)} chain(s) already scored in {args.out}: not scored again")
        known = [ref.frames_known for ref in todo]
        bars.append(tqdm(total=len(todo), unit="chain", position=0))
        bars.append(tqdm(total=sum(known) if None not in known else None, unit="frame",
                         position=1))

    def chain_done(result: Any) -> None:
        if result.error:
            tqdm.write(f"skipped broken chain {result.name}: {result.error}")
        bars[0].update(1)

    completed = run_table(refs, metrics, args.out, workers=workers,
                          ray=args.ray is not None,
                          address=None if args.ray in (None, "local") else args.ray,
                          stop=stop, on_start=start, on_frames=lambda n: bars[1].update(n),
                          on_chain=chain_done)
    for bar in bars:
        bar.close()
    print(("completed" if completed else "stopped: run the same command again to continue")
          + f"; outputs in {args.out}: scores.csv, verdicts.csv, table.csv, report.html")
    return 0 if completed else EXIT_CODES["stopped"]


def _leaderboard(args: argparse.Namespace, stop: threading.Event) -> int:
    import csv

    from .leaderboard import Suite, run_leaderboard
    from .leaderboard.columns import cli_lines
    from .scores.catalog import no_reference_names

    suite = Suite(starts=tuple(_split(args.starts)), size=args.size, steps=args.steps,
                  every_frame=args.every_frame,
                  **({"profiles": tuple(_split(args.profiles))} if args.profiles else {}))
    metrics = parse_metric_names(args.metrics, blank=no_reference_names())
    completed = run_leaderboard(args.out, suite, sources=args.add, metrics=metrics,
                                workers=args.workers, ray=args.ray is not None,
                                address=None if args.ray in (None, "local") else args.ray,
                                stop=stop, retime=args.retime)
    with (args.out / "leaderboard.csv").open(newline="") as handle:
        print("\n".join(cli_lines(list(csv.DictReader(handle)))))
    print(("completed" if completed else "stopped: run the same command again to continue")
          + f"; outputs in {args.out}: leaderboard.csv, artifacts.csv, leaderboard.html")
    return 0 if completed else EXIT_CODES["stopped"]


def _check(args: argparse.Namespace) -> int:
    import json

    from .gate import check_degradation, edits_in

    original = load_image(args.original).image
    edited = [image for path in args.edited for image in edits_in(path)]
    print(json.dumps(check_degradation(original, edited), indent=1))
    return 0


def _why(args: argparse.Namespace) -> int:
    """The decomposition of one score's change in a run: its sentence and one line per
    feature group, or the JSON object (docs/cli.md)."""
    import json

    from .explain.why import WHY_LABEL, explain_step

    explanation = explain_step(args.run_dir, args.metric, args.step)
    if args.json:
        print(json.dumps(explanation.as_json(), indent=1, ensure_ascii=False))
        return 0
    decomposition = explanation.decomposition
    print(explanation.sentence())
    for group, value in decomposition.contributions.items():
        print(f"  {group:<28}{value:+12.4g}")
    print(f"  {'sum: the change':<28}{decomposition.delta:+12.4g}")
    print(WHY_LABEL)
    return 0


def _votes(args: argparse.Namespace) -> int:
    import json

    from .store.run import Run
    from .votes.report import as_json, as_lines

    run = Run(args.run_dir)
    if not run.exists():
        raise FileNotFoundError(f"{args.run_dir} is not a run directory "
                                f"(no {run.meta_file.name})")
    pairs = run.ledger().pairs()
    print(json.dumps(as_json(pairs)) if args.json else as_lines(pairs))
    return 0
