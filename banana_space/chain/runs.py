"""Starting, resuming and opening runs: the engine's front door for the CLI, the app and tests.

`start_run` checks a `RunSpec`, builds the backend, judges and scorer, and returns a generator
of events that is also being written to a fresh run directory. `resume_run` continues a run
directory from its last complete frame with the settings it recorded; `Resumption` is the same
in two halves, for a caller that looks at the run first (read once, under its writer's lock).
Which runs are kept is `store.retention`'s.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..backends import REGISTRY as BACKENDS
from ..backends import Backend, BackendUnavailable, create_backend
from ..budget import BUDGET, MemoryBudget
from ..events import Event, Finished, FrameMade, Notice
from ..judges import create_judges
from ..markup import one_line, without_paths
from ..scores.pool import POOL, MetricPool
from ..scores.scoring import InputScores, Scorer
from ..sources.dispatch import HUB_PREFIX
from ..sources.frames import Frames
from ..store.animation import write_animation
from ..store.diskspace import DiskFull, check_room, is_disk_full
from ..store.run import META_NAME, Run, RunBusy, SavedRun
from ..store.rundir import RunDir, write_zip
from .loop import Chain, replicate
from .persist import push_run
from .producers import Editing, Existing
from .spec import RunSpec, check_spec, from_settings, to_settings

INTERRUPTED = "interrupted: the visitor disconnected"


def _ready_backend(name: str, options: dict[str, Any]) -> Backend:
    """The backend, or `BackendUnavailable` with its how-to before anything is written."""
    backend = create_backend(name, **options)
    reason = backend.unavailable_reason()
    if reason:
        raise BackendUnavailable(reason)
    return backend


def scorer_for(metrics: Sequence[str], judges: Sequence[str] = (),
               judge_options: dict[str, Any] | None = None, *, pool: MetricPool = POOL,
               budget: MemoryBudget = BUDGET, input_scores: InputScores | None = None
               ) -> Scorer:
    """The scorer of a chain: its metrics (with fidelity) and its judges, each judge taking
    the options its info names. The one place a `Scorer` is made."""
    made = create_judges(list(judges), judge_options or {})
    return Scorer(metrics, made, pool, budget, input_scores)


def start_run(spec: RunSpec, root: Path, *, stop: threading.Event | None = None,
              pool: MetricPool = POOL, run_id: str | None = None,
              budget: MemoryBudget = BUDGET, input_scores: InputScores | None = None,
              owners: Sequence[str] = ()) -> Iterator[Event]:
    """Check, build and start a run (the paper's loop, Sec. 3: each output fed back in, every
    frame scored). Raises before anything is written if the spec is bad, the backend cannot
    run here or a frame could never be scored within the memory budget; afterwards every
    problem is an event. Metrics load as the events begin (`Scorer.load`).

    Args:
        spec: what to run (`RunSpec.of_image`, `RunSpec.replay`).
        root: the runs folder; the run gets a fresh directory in it.
        stop: set it to stop after the frame being made (that frame is dropped).
        pool: the metric pool (the process's own by default).
        run_id: the directory's name (the CLI's `--out`); default: a new id.
        budget: the memory budget scoring shares.
        input_scores: the input's scores shared with other chains from the same input
            (a comparison's sides), measured once.
        owners: who made it (opaque keys, `Run.mark_owner`), recorded as its folder is made.
    Returns:
        The run's events (`banana_space.events`), each written to the directory as it is
        yielded: `Started`, then per step `FrameMade` and `FrameScored`, notices, `Finished`.
    Raises:
        ValueError, BackendUnavailable, BadImage: before anything is written.
    """
    check_spec(spec)
    return begin_run(spec, root, stop=stop, pool=pool, run_id=run_id, budget=budget,
                     input_scores=input_scores, owners=owners)


def begin_run(spec: RunSpec, root: Path, *, stop: threading.Event | None = None,
              pool: MetricPool = POOL, run_id: str | None = None,
              budget: MemoryBudget = BUDGET, input_scores: InputScores | None = None,
              owners: Sequence[str] = ()) -> Iterator[Event]:
    """`start_run` of a spec already checked (`check_spec`): a chain's sides are checked,
    then admitted, then begun (`lifecycle.start_chain`)."""
    backend = _ready_backend(spec.backend, spec.backend_options)
    image, notes, steps = spec.image, list(spec.image_notes), spec.steps
    if backend.info.plays_recording:  # the recording brings its own frame 0
        loaded = backend.first_frame()
        image, notes = loaded.image, notes + loaded.notes
        steps = max(step for step in backend.steps if step <= steps)
    if image is None:
        raise ValueError("no input image")
    scorer = scorer_for(spec.metrics, spec.judges, spec.judge_options, pool=pool,
                        budget=budget, input_scores=input_scores)
    scorer.check_fits(image.size)
    check_room(Path(root), image.size)  # frame 0 and the first copy's room, before any folder
    run = RunDir.create(root, run_id, owners)
    settings = to_settings(spec, steps=steps, backend_settings=backend.settings(),
                           input_size=image.size, input_notes=notes)
    chain = Chain(image, Editing(backend, spec.prompt, spec.seed, _recorded_steps(backend)),
                  scorer, steps, judge_at=spec.judge_at, run_dir=run.path,
                  settings=settings, notes=tuple(notes))
    return _recorded(run, replicate(chain, stop))


def play_existing(frames: Frames, root: Path, name: str, metrics: Sequence[str],
                  settings: dict[str, Any], *, patience_s: float = 0.0) -> Path:
    """Frames that exist already (a dataset's chain sampled at some steps), scored through the
    loop against the first (step 0, the input; or step 1 where a chain has no input) and
    written as one finished run `root/name`, its zip and animation made; the steps between have
    no frame and no score. No visitor waits for it: each metric's creation is waited for up
    to `patience_s` first, past the pool's own limit.

    Raises:
        ValueError: a frame could never be scored within the memory budget, or the chain
            failed on the way (its reason).
    """
    produced = Existing(frames)
    scorer = scorer_for(metrics)
    for metric in scorer.wanted:
        scorer.pool.begin(metric).wait(patience_s)
    first = produced.first()
    scorer.check_fits(first.size)
    run = RunDir.create(root, name)
    chain = Chain(first, produced, scorer, frames.steps[-1], produced.first_step,
                  run_dir=run.path, settings=settings, notes=tuple(settings["input_notes"]))
    for event in _recorded(run, replicate(chain), push=False):
        if isinstance(event, Finished) and event.status != "completed":
            raise ValueError(event.reason)
    return run.path


def _recorded_steps(backend: Backend) -> frozenset[int] | None:
    """The steps a recording has frames for (its gaps are not made), or None: a generator
    makes every step."""
    return frozenset(backend.steps) if backend.info.plays_recording else None


def resume_run(path: Path, *, stop: threading.Event | None = None, pool: MetricPool = POOL,
               key: str | None = None) -> Iterator[Event]:
    """Continue a run directory from its last complete frame, with its recorded settings
    (`spec.from_settings`). Secrets are never recorded, so a keyed backend or judge takes
    `key` (in each of its secret options), or the environment's.

    Args:
        path: the run directory.
        stop: set it to stop after the frame being made.
        pool: the metric pool.
        key: a key for a backend or judge that needs one; never written.
    Returns:
        The run's further events, as `start_run`'s, written to the same directory.
    Raises:
        RunBusy: the run is being written (here or by another process).
        FileNotFoundError, ValueError: not a run, or nothing to resume from.
    """
    return Resumption.open(path).events(stop=stop, pool=pool, key=key)


class Resumption:
    """A run opened to go on: its writer's lock held and the run read once (`saved`), so a
    caller can look at it (is it complete? whose? what does the rest cost?) before `events`
    starts it, or `close` lets it go. Seen as a chain of one side ("A"), it answers as a
    chain's `lifecycle.Opened` does (`runs`, `going_on`)."""

    comparison = None  # a lone run: no comparison's record

    def __init__(self, saved: SavedRun, lock: int) -> None:
        self.saved = saved
        self._lock: int | None = lock

    @classmethod
    def open(cls, path: Path) -> Resumption:
        """Take the run's writer lock, then read it.

        Raises:
            RunBusy: the run is being written (here or by another process).
            FileNotFoundError: not a run.
        """
        run = Run(path)
        if not run.exists():
            raise FileNotFoundError(f"{run.id} is not a run directory (no {META_NAME})")
        lock = run.lock()  # before reading: no other writer may change it under us
        try:
            return cls(run.load(), lock)
        except BaseException:
            os.close(lock)
            raise

    @property
    def complete(self) -> bool:
        """Whether the run made every step it was asked for (nothing to resume)."""
        saved = self.saved
        return (saved.meta.get("status") == "completed"
                and saved.last_step >= saved.meta.get("steps", 0))

    @property
    def runs(self) -> dict[str, SavedRun]:
        """The run as read, as side "A"."""
        return {"A": self.saved}

    @property
    def going_on(self) -> list[str]:
        """["A"], or none where the run is complete."""
        return [] if self.complete else ["A"]

    def close(self) -> None:
        """Let the run go without resuming it."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def events(self, *, stop: threading.Event | None = None, pool: MetricPool = POOL,
               key: str | None = None) -> Iterator[Event]:
        """Build the run's generator, judges and scorer from its settings and go on (the lock
        passes to the run's writer); on a refusal the run is let go.

        Raises:
            ValueError, BackendUnavailable: nothing to resume from, or it cannot run here.
        """
        saved, lock = self.saved, self._lock
        assert lock is not None, "a Resumption goes on once"
        try:
            settings = saved.meta["settings"]
            if saved.last_step < 0:
                raise ValueError(f"{saved.path.name} has no complete frame to resume from")
            spec = from_settings(settings, key)
            if (BACKENDS[spec.backend].info.plays_recording
                    and not str(spec.backend_options.get("source", "")).startswith(HUB_PREFIX)):
                raise ValueError("a replayed file is recorded by its name only (never a path "
                                 "on this server): replay it again to score more of it")
            backend = _ready_backend(spec.backend, spec.backend_options)
            scorer = scorer_for(spec.metrics, spec.judges, spec.judge_options, pool=pool)
            check_room(saved.path, tuple(settings.get("input_size") or (0, 0)))
        except BaseException:
            self.close()
            raise
        self._lock = None
        writer = RunDir.reopen(saved, lock)
        chain = Chain(saved.frame(saved.last_step),
                      Editing(backend, spec.prompt, spec.seed, _recorded_steps(backend)),
                      scorer, spec.steps, saved.last_step, resumed=True,
                      reference=saved.frame(0), judge_at=spec.judge_at,
                      run_dir=writer.path, settings=settings,
                      notes=(f"resumed after step {saved.last_step}",))
        return _recorded(writer, replicate(chain, stop))


def _zip_and_keep(run: RunDir, push: bool) -> None:
    if _zip_if_room(run.path) and push:
        push_run(run.path)  # pushed to BANANA_RUNS_REPO, where one is set (persist.py)


def _zip_if_room(path: Path) -> bool:
    """Zip the run and make its animation to share (`animation.write_animation`); on a full
    disk, no zip (and no temporary left): it is made when the run is next opened, and the run
    is shown and served without it meanwhile. The zip first: it checks every frame, so a
    damaged run is refused in one line (`DamagedRun`) before the animation decodes them."""
    try:
        write_zip(path)
        write_animation(Run(path).load())
    except OSError as error:
        if not is_disk_full(error):
            raise
        return False
    return True


def _recorded(run: RunDir, events: Iterator[Event], *, push: bool = True
              ) -> Iterator[Event]:
    """Write every event to the run directory before the caller sees it; the zip is made at
    the end, once the caller has seen the end (a stopped run says so at once; the zip of a 2K
    run takes seconds). The run's writer's lock is held from its creation (or the resume) until
    these events end or are closed. A run whose reader goes away (closes this generator: the
    visitor disconnected) is recorded as stopped, saying why, so that it never reads "running"
    after its writer has gone; one whose reader left right after its end is still zipped."""
    finished = False
    try:
        for event in events:
            event = _public(event)
            if isinstance(event, FrameMade):
                check_room(run.path, event.image.size)
            run.record(event)
            finished = isinstance(event, Finished)
            yield event
            if finished:
                finished = False
                _zip_and_keep(run, push)
    except (DiskFull, OSError) as error:
        if not isinstance(error, DiskFull) and not is_disk_full(error):
            raise
        yield _out_of_room(run, error)
    except GeneratorExit:
        if run.meta.get("status") == "running":
            run.record(Finished("stopped", run.meta.get("last_step", -1), INTERRUPTED))
        if finished:  # the reader left between the end and its zip
            _zip_and_keep(run, push)
        raise
    finally:
        events.close()
        run.close()


def _out_of_room(run: RunDir, error: OSError) -> Finished:
    """The run's end on a full disk: failed, saying so, every complete frame and its scores
    kept (a write that failed left no temporary file: `write_atomic`). Its record is tried;
    where even that does not fit, the run reads "interrupted" once its writer has gone."""
    reason = str(error) if isinstance(error, DiskFull) else (
        "this server's disk is full: older runs are removed to make room; try again later")
    last = run.meta.get("last_step", -1)
    finished = _public(Finished("failed", last, f"failed after step {last}: {reason}"))
    with contextlib.suppress(OSError):
        run.record(finished)
    return finished


def _public(event: Event) -> Event:
    """An event as it may be stored and shown: its text on one line, without server paths
    (a failure's `No such file or directory: '/…/frames/…'` keeps the file's name)."""
    if isinstance(event, Finished):
        return replace(event, reason=one_line(without_paths(event.reason)))
    if isinstance(event, Notice):
        return replace(event, message=one_line(without_paths(event.message)))
    return event


def open_saved(path: Path) -> tuple[SavedRun, bool]:
    """A saved run to show, and whether it is being made right now (live). A finished or
    killed run without a zip is zipped on first sight; a run being written is never zipped
    half-made nor called interrupted. The writer's lock is tried only then, so many visitors
    opening one finished run at once never get in each other's way.

    Args:
        path: a run directory (already confined to the runs folder).
    Returns:
        (the run as saved, live).
    Raises:
        FileNotFoundError: no run there (deleted to make room, or never made).
    """
    run = Run(path)
    saved = run.load()
    live = False
    if saved.meta.get("status") == "running" or not run.zip_path.is_file():
        try:
            lock = run.lock()
        except RunBusy:  # its writer (or someone zipping it) is at work
            live = saved.meta.get("status") == "running"
        else:
            try:
                if not run.zip_path.is_file():
                    _zip_if_room(path)
                saved = run.load()
            finally:
                os.close(lock)
    return saved, live
