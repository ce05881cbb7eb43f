"""Starting, resuming and pruning runs: the engine's front door for the CLI, the app and tests.

`start_run` checks a `RunSpec`, builds the backend, judges and scorer, and returns a generator
of events that is also being written to a fresh run directory. `resume_run` continues a run
directory from its last complete frame with the settings it recorded. `prune_runs` keeps the
runs folder within a count and a byte budget.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from PIL import Image

from .backends import REGISTRY as BACKENDS
from .backends import Backend, BackendUnavailable, create_backend
from .budget import BUDGET, MemoryBudget
from .chain import Chain, run_chain
from .events import Event, Finished, Notice, Started
from .judges import REGISTRY as JUDGES
from .judges import create_judges
from .markup import one_line, without_paths
from .metrics import CPU_DEFAULTS, MAX_METRICS_PER_RUN, POOL, MetricPool, check_metric_names
from .persist import keep
from .prompts import DEFAULT_PROMPT
from .quota import judged_steps
from .rundir import RunBusy, RunDir, load_run, lock_writer, write_atomic, write_zip
from .scoring import Scorer, unavailable_notices
from .sources import HUB_PREFIX

MAX_STEPS = 100
MAX_PROMPT_CHARS = 4000  # the paper's prompt is 72; run.json and the zip copy it
MAX_SEED = 2**32 - 1  # numpy's and torch's generators take 0 .. 2**32 - 1
SECRET_OPTIONS = frozenset({"api_key"})  # never written, logged or shown back
OWNER_NAME = ".owner"  # who made a run, for retention shares (mark_owner)
INTERRUPTED = "interrupted: the visitor disconnected"


@dataclass
class RunSpec:
    image: Image.Image | None  # frame 0 (None for a backend that brings its own, e.g. replay)
    steps: int
    backend: str = "simulate"
    backend_options: dict[str, Any] = field(default_factory=dict)
    prompt: str = DEFAULT_PROMPT
    seed: int = 0
    metrics: Sequence[str] = CPU_DEFAULTS
    judges: Sequence[str] = ()
    judge_options: dict[str, Any] = field(default_factory=dict)
    image_notes: list[str] = field(default_factory=list)
    judge_at: str = "every"  # or "checkpoints" (quota.py: the ZeroGPU default)


def check_spec(spec: RunSpec) -> None:
    """Raise ValueError with a message that lists what is valid."""
    if not _is_whole(spec.steps) or not 1 <= spec.steps <= MAX_STEPS:
        raise ValueError(f"steps must be a whole number between 1 and {MAX_STEPS}, got "
                         f"{spec.steps!r}")
    if not _is_whole(spec.seed) or not 0 <= spec.seed <= MAX_SEED:
        raise ValueError(f"the seed must be a whole number between 0 and {MAX_SEED}, got "
                         f"{spec.seed!r}")
    if spec.backend not in BACKENDS:
        raise ValueError(f"unknown backend {spec.backend!r}; valid backends: "
                         f"{', '.join(BACKENDS)}")
    unknown = [j for j in spec.judges if j not in JUDGES]
    if unknown:
        raise ValueError(f"unknown judge(s) {', '.join(unknown)}; valid judges: "
                         f"{', '.join(JUDGES) or 'none'}")
    takes = BACKENDS[spec.backend].info.options
    extra = sorted(set(spec.backend_options) - set(takes))
    if extra:
        raise ValueError(f"backend {spec.backend!r} takes no option(s) {', '.join(extra)}; it "
                         f"takes: {', '.join(takes) or 'none'}")
    if len(set(spec.metrics)) > MAX_METRICS_PER_RUN:
        raise ValueError(f"{len(set(spec.metrics))} metrics asked for; one run may score with "
                         f"at most {MAX_METRICS_PER_RUN}")
    check_metric_names(list(spec.metrics))
    judged_steps(spec.steps, spec.judge_at)  # a ValueError names the valid choices
    if not spec.prompt.strip():
        raise ValueError("the prompt is empty")
    if len(spec.prompt) > MAX_PROMPT_CHARS:
        raise ValueError(f"the prompt is {len(spec.prompt)} characters long; at most "
                         f"{MAX_PROMPT_CHARS} are taken")


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def public_options(options: dict[str, Any]) -> dict[str, Any]:
    """The options that may be recorded: plain values, never a secret, never a path on this
    server (a replayed file is recorded by its name)."""
    return {k: Path(v).name if isinstance(v, str) and os.path.isabs(v) else v
            for k, v in options.items()
            if k not in SECRET_OPTIONS and isinstance(v, (str, int, float, bool, type(None)))}


def _ready_backend(name: str, options: dict[str, Any]) -> Backend:
    """The backend, or `BackendUnavailable` with its how-to before anything is written."""
    backend = create_backend(name, **options)
    reason = backend.unavailable_reason()
    if reason:
        raise BackendUnavailable(reason)
    return backend


def start_run(spec: RunSpec, root: Path, *, stop: threading.Event | None = None,
              pool: MetricPool = POOL, run_id: str | None = None,
              budget: MemoryBudget = BUDGET) -> Iterator[Event]:
    """Check, build and start a run. Raises before anything is written if the spec is bad, the
    backend cannot run here or a frame could never be scored within the memory budget;
    afterwards every problem is an event. Metrics load as the events begin (`Scorer.load`)."""
    check_spec(spec)
    backend = _ready_backend(spec.backend, spec.backend_options)
    image, notes, steps = spec.image, list(spec.image_notes), spec.steps
    if backend.info.plays_recording:  # the recording brings its own frame 0
        loaded = backend.first_frame()
        image, notes = loaded.image, notes + loaded.notes
        steps = min(steps, backend.frame_count - 1)
    if image is None:
        raise ValueError("no input image")
    judges = create_judges(list(spec.judges), spec.judge_options)
    scorer = Scorer(spec.metrics, judges, pool, budget)
    scorer.check_fits(image.size)
    run = RunDir.create(root, run_id)
    settings = {
        "backend": spec.backend, "backend_options": public_options(spec.backend_options),
        "backend_settings": backend.settings(), "prompt": spec.prompt, "steps": steps,
        "seed": spec.seed, "metrics": list(spec.metrics), "judges": list(spec.judges),
        "judge_options": public_options(spec.judge_options), "input_size": list(image.size),
        "input_notes": notes, "judge_at": spec.judge_at}
    opening = _opening(scorer, run.path, steps, settings, 0,
                       [Notice(note, 0, "info") for note in notes])
    chain = Chain(image, backend, scorer, steps, spec.prompt, spec.seed,
                  judged=judged_steps(steps, spec.judge_at))
    return _recorded(run, opening, run_chain(chain, stop))


def resume_run(path: Path, *, stop: threading.Event | None = None, pool: MetricPool = POOL,
               api_key: str | None = None) -> Iterator[Event]:
    """Continue a run directory from its last complete frame, with its recorded settings.
    Keys are never recorded, so a keyed backend or judge takes `api_key`, or the environment's.
    A run that is being written (here or by another process) raises `RunBusy`."""
    if not (Path(path) / "run.json").is_file():
        raise FileNotFoundError(f"{Path(path).name} is not a run directory (no run.json)")
    lock = lock_writer(path)  # before reading: no other writer may change it under us
    try:
        saved = load_run(path)
        settings = saved.meta["settings"]
        if saved.last_step < 0:
            raise ValueError(f"{saved.path.name} has no complete frame to resume from")
        secret = {"api_key": api_key} if api_key else {}
        options = dict(settings.get("backend_options", {}))
        if (BACKENDS[settings["backend"]].info.plays_recording
                and not str(options.get("source", "")).startswith(HUB_PREFIX)):
            raise ValueError("a replayed file is recorded by its name only (never a path on "
                             "this server): replay it again to score more of it")
        if "api_key" in BACKENDS[settings["backend"]].info.options:
            options.update(secret)
        backend = _ready_backend(settings["backend"], options)
        judges = create_judges(settings["judges"],
                               {**settings.get("judge_options", {}), **secret})
        scorer = Scorer(settings["metrics"], judges, pool)
    except BaseException:
        os.close(lock)
        raise
    run = RunDir.reopen(saved, lock)
    opening = _opening(scorer, run.path, settings["steps"], settings, saved.last_step + 1,
                       [Notice(f"resumed after step {saved.last_step}", saved.last_step, "info")])
    chain = Chain(saved.frame(saved.last_step), backend, scorer, settings["steps"],
                  settings["prompt"], settings["seed"], start=saved.last_step,
                  reference=saved.frame(0),
                  judged=judged_steps(settings["steps"], settings.get("judge_at", "every")))
    return _recorded(run, opening, run_chain(chain, stop))


def _opening(scorer: Scorer, path: Path, steps: int, settings: dict[str, Any],
             first_step: int, notices: list[Notice]) -> Iterator[Event]:
    """The metrics load (with a line saying which one is awaited), then `Started` with the
    columns that loaded, then the run's own notices and one line per reason a metric is out."""
    yield from scorer.load()
    yield Started(path, steps, scorer.infos, scorer.unavailable, settings, first_step)
    yield from notices
    yield from unavailable_notices(scorer.unavailable)


def _zip_and_keep(run: RunDir) -> None:
    write_zip(run.path)
    keep(run.path)  # pushed to BANANA_RUNS_REPO, where one is set (persist.py)


def _recorded(run: RunDir, opening: Iterable[Event], events: Iterator[Event]
              ) -> Iterator[Event]:
    """Write every event to the run directory before the caller sees it; the zip is made at
    the end, once the caller has seen the end (a stopped run says so at once; the zip of a 2K
    run takes seconds). The run's writer lock is held from its creation (or the resume) until
    these events end or are closed. A run whose reader goes away (closes this generator: the
    visitor disconnected) is recorded as stopped, saying why, so that it never reads "running"
    after its writer has gone; one whose reader left right after its end is still zipped."""
    finished = False
    try:
        for event in opening:
            event = _public(event)
            run.record(event)
            yield event
        for event in events:
            event = _public(event)
            run.record(event)
            finished = isinstance(event, Finished)
            yield event
            if finished:
                finished = False
                _zip_and_keep(run)
    except GeneratorExit:
        if run.meta.get("status") == "running":
            run.record(Finished("stopped", run.meta.get("last_step", -1), INTERRUPTED))
        if finished:  # the reader left between the end and its zip
            _zip_and_keep(run)
        raise
    finally:
        events.close()
        run.close()


def _public(event: Event) -> Event:
    """An event as it may be stored and shown: its text on one line, without server paths
    (a failure's `No such file or directory: '/…/frames/…'` keeps the file's name)."""
    if isinstance(event, Finished):
        return replace(event, reason=one_line(without_paths(event.reason)))
    if isinstance(event, Notice):
        return replace(event, message=one_line(without_paths(event.message)))
    return event


def directory_bytes(path: Path) -> int:
    """Bytes on disk under `path`; files that vanish meanwhile (a writer's temporaries, a run
    another prune deletes) count as nothing."""
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.path.getsize(os.path.join(folder, name))
    return total


def _modified(run: Path) -> float:
    try:
        return (run / "run.json").stat().st_mtime
    except FileNotFoundError:  # deleted meanwhile: the oldest, and gone when we get to it
        return 0.0


def mark_owner(run: Path, owner: str) -> None:
    """Record who made `run` (an opaque key, never an address) for `prune_runs`' shares: a
    dot-file, so never zipped or replayed."""
    write_atomic(Path(run) / OWNER_NAME, owner.encode())


def _owner(run: Path) -> str | None:
    try:
        return (run / OWNER_NAME).read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def prune_runs(root: Path, keep: int, active: Iterable[Path] = (),
               keep_bytes: int | None = None, owner: str | None = None,
               owner_keep: int | None = None, owner_bytes: int | None = None) -> list[Path]:
    """Delete the oldest run directories beyond the newest `keep`, or beyond `keep_bytes` on
    disk all together (zips included), never one being written (by any thread or process:
    its writer lock is held) nor one in `active`. Those spared still count toward both.
    With `owner`, that owner's own runs beyond its newest `owner_keep` (or `owner_bytes`) go
    first, so one visitor's flood of runs evicts only its own."""
    protected = {Path(p).resolve() for p in active}
    runs = sorted((p.parent for p in Path(root).glob("*/run.json")), key=_modified,
                  reverse=True)
    doomed = []
    if owner is not None:
        mine = [run for run in runs if _owner(run) == owner]
        doomed = _beyond(mine, owner_keep or len(mine), owner_bytes, protected)
        runs = [run for run in runs if run not in doomed]
    return doomed + _beyond(runs, keep, keep_bytes, protected)


def _beyond(runs: list[Path], keep: int, keep_bytes: int | None, protected: set[Path]
            ) -> list[Path]:
    """Delete the runs (newest first) beyond `keep` of them or `keep_bytes`; the deleted."""
    kept, used, doomed = 0, 0, []
    for directory in runs:
        size = directory_bytes(directory)
        fits = kept < keep and (keep_bytes is None or used + size <= keep_bytes)
        if fits or directory.resolve() in protected or not _delete_unless_busy(directory):
            kept, used = kept + 1, used + size
        else:
            doomed.append(directory)
    return doomed


def _delete_unless_busy(directory: Path) -> bool:
    try:
        lock = lock_writer(directory)
    except (RunBusy, FileNotFoundError):
        return False
    try:
        shutil.rmtree(directory, ignore_errors=True)
    finally:
        os.close(lock)
    return True


