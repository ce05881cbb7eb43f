"""The one loop every chain runs through (Banana100, arXiv 2604.03400, Sec. 3: ask for a copy,
feed it back in, score every frame), whatever makes its frames (`producers`), and the only
maker of a run's events; its readers fold them with `verdict.history.History.apply`.

Three kinds of work overlap, each in its own thread: a producer asks for the next frame (a
network call, a GPU step, a decode), a scorer scores the frame before it, and the caller of
`replicate` (the run directory, the UI) writes and shows each frame as soon as it exists
(`FrameMade`: the input at once, each copy as the producer makes it, even while the frame before
is still being scored), then its scores once they are ready (`FrameScored`). So a run goes at
the pace of its slowest stage, not of their sum, and the user waits for the generator, never for
us (bench/overlap.py, bench/first_copy.py). Each queue between stages holds one item: the
producer runs at most one step ahead of the scorer, the scorer one frame ahead of the caller,
and a stopped or abandoned run wastes at most one call. Stop ends the run within a poll of the
click: the frame being scored is dropped (its remaining metrics are skipped), and the run ends
after the last scored step.

The judges (VLMs: a network call, a GPU slice, or tens of CPU seconds a frame) work on a fourth
thread, on their own schedule: the scorer hands each frame they rate over without waiting, and
their scores come as `FrameJudged` once ready, so a frame's metrics and its display never wait
for a judge, until `JUDGE_BACKLOG` frames wait for one: then the chain goes at the judge's
pace. Each waiting frame holds its bytes in the memory budget. A completed run ends once the
judges have rated its last frames (the page says how many and about how long, and that Stop
ends it now); a stopped run ends at once, dropping what they had not rated.
"""

from __future__ import annotations

import contextvars
import math
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from ..backends import BackendUnavailable
from ..backends.base import GenerationFailed
from ..budget import Reservation, judged_bytes
from ..events import Event, Finished, FrameJudged, FrameMade, FrameScored, Notice, Started
from ..gpu import GpuRefused
from ..judges import Judge
from ..judges.schedule import rating_at
from ..markup import error_line
from ..scores.catalog import FIDELITY
from ..scores.scoring import FrameScores, Scorer, unavailable_notices
from ..sources.images import BadImage
from ..verdict.analysis import INPUT
from .producers import Made, Producer

POLL_SECONDS = 0.1  # how often a waiting side looks at the stop flag
# Frames waiting for the judges, at most: a generator outpaces a slow judge (a free-tier key
# answering 429) by minutes a frame, so past this the chain goes at the judge's pace.
JUDGE_BACKLOG = 4


@dataclass(frozen=True)
class Chain:
    """What the loop runs: where its frames come from, how they are scored, and what its
    `Started` says (the run's folder and settings)."""

    first: Image.Image  # the frame the chain starts from (or, resumed, goes on from)
    frames: Producer  # what makes every frame after it
    scorer: Scorer
    steps: int  # the last step to make
    start: int = 0  # the step `first` is: 0, the input (a chain with no input: its first copy)
    resumed: bool = False  # `first` was made and scored before: neither again
    reference: Image.Image | None = None  # fidelity's reference: frame 0 (default: `first`)
    judge_at: str = "every"  # which steps the judges rate: every one, or the checkpoints
    run_dir: Path | None = None  # where the run's files are written (None: nowhere)
    settings: dict[str, Any] = field(default_factory=dict)  # what run.json records
    notes: tuple[str, ...] = ()  # facts of the run, said once it has started

    @property
    def first_step(self) -> int:
        """The first step this chain makes (`Started.first_step`)."""
        return self.start + 1 if self.resumed else self.start

    def without_fidelity(self, step: int) -> bool:
        """Whether `step` is the chain's own first copy, scored against itself: a chain with no
        input (numbered from 1) has no fidelity there, only pyiqa's cap for "identical"."""
        return step == self.start != INPUT and not self.resumed


@dataclass(frozen=True)
class _Failed:
    step: int
    reason: str
    status: str = "failed"  # "stopped" where ZeroGPU refused: resumable, not broken


class _Done:
    pass


@dataclass(frozen=True)
class _ToJudge:
    step: int
    image: Image.Image
    judges: tuple[Judge, ...]  # the judges that rate this step
    held: Reservation  # the frame's bytes in the memory budget, until it is rated


class _JudgesDone:
    pass


def replicate(chain: Chain, stop: threading.Event | None = None) -> Iterator[Event]:
    """The replication loop (Sec. 3): each frame is fed back in to make the next (or played,
    where it exists already), and every frame is scored, making and scoring overlapping in
    threads.

    Args:
        chain: where its frames come from, how they are scored, its steps and its run.
        stop: set it to end the run after the frame being made (which is dropped).
    Returns:
        A line per metric awaited while they load, `Started` (the columns that loaded), the
        chain's notes and one line per reason a metric is out; each frame as soon as it exists
        (`FrameMade`), then its scores (`FrameScored`), its judges' scores whenever they are
        ready (`FrameJudged`), notices as they happen, then the end (`Finished`: completed,
        stopped or failed at step k, with every frame before k kept).
    """
    scorer = chain.scorer
    yield from scorer.load()
    yield Started(chain.run_dir, chain.steps, scorer.infos, scorer.unavailable,
                  chain.settings, chain.first_step)
    yield from (Notice(note, chain.start, "info") for note in chain.notes)
    yield from unavailable_notices(scorer.unavailable)
    yield from _frames(chain, stop or threading.Event())


def _frames(chain: Chain, stop: threading.Event) -> Iterator[Event]:
    abandoned = threading.Event()  # set when our consumer goes away (closed generator)
    made: queue.Queue = queue.Queue(maxsize=1)  # producer -> scorer
    scored: queue.Queue = queue.Queue(maxsize=1)  # scorer and judges -> us
    # scorer -> judges: a few frames, each held in the memory budget while it waits, so a
    # slow judge sets the pace once it is JUDGE_BACKLOG frames behind (a 60-step
    # 2K run once held 500 MB here, and its place for 20 minutes after its last frame)
    judging: queue.Queue = queue.Queue(maxsize=JUDGE_BACKLOG)
    pace = {"rated": 0, "seconds": 0.0}  # the judges' own, for the wait they announce
    totals = {"calls": 0, "cost_usd": 0.0}  # the scorer counts; a stop reports what it has
    # Both stages work on the caller's behalf (edits and judges may book a ZeroGPU slice for the
    # visitor whose request started the run), so each keeps the caller's context variables.
    threading.Thread(target=contextvars.copy_context().run,
                     args=(_produce, chain, stop, abandoned, made, scored),
                     name="chain-producer", daemon=True).start()
    threading.Thread(target=contextvars.copy_context().run,
                     args=(_score, chain, stop, abandoned, made, scored, totals, judging),
                     name="chain-scorer", daemon=True).start()
    judges_busy = bool(chain.scorer.judges)
    if judges_busy:
        threading.Thread(target=contextvars.copy_context().run,
                         args=(_judge, chain.scorer, judging, scored, abandoned, pace),
                         name="chain-judges", daemon=True).start()
    last = chain.start  # the newest scored step
    ending: Finished | None = None  # the scorer's end, held while the judges finish
    try:
        if not chain.resumed:  # the first frame, shown at once: it is scored meanwhile
            yield FrameMade(chain.start, chain.first)
        while True:
            try:
                item = scored.get(timeout=POLL_SECONDS)
            except queue.Empty:
                # The scorer is busy with a frame: a stop does not wait for it (a 2K frame's
                # metrics take seconds); that frame is dropped and its scoring cut short.
                # Nor for the judges: what they have not rated yet is dropped.
                if stop.is_set():
                    yield ending or Finished("stopped", last, "stopped by the user",
                                             dict(totals))
                    return
                continue
            if isinstance(item, Exception):  # a stage's own failure is the caller's
                raise item
            if isinstance(item, _JudgesDone):
                judges_busy = False
                if ending is not None:
                    yield ending
                    return
                continue
            if isinstance(item, Finished) and judges_busy and item.status != "stopped":
                ending = item  # the last frames' judge points come before the end
                yield Notice(_last_ratings(chain.scorer.judges, judging.qsize() + 1, pace),
                             None, "info")
                continue
            yield item
            if isinstance(item, FrameScored):
                last = item.step
            if isinstance(item, Finished):
                return
    finally:
        abandoned.set()


def _score(chain: Chain, stop: threading.Event, abandoned: threading.Event,
           made: queue.Queue, outbox: queue.Queue, totals: dict[str, Any],
           judging: queue.Queue) -> None:
    """Score each frame the producer makes, pass it on and hand it to the judges, until the
    run ends; always ends with a `Finished` (or the exception that stopped it) unless our
    consumer went away, and tells the judges no more frames come."""
    try:
        _score_frames(chain, stop, abandoned, made, outbox, totals, judging)
    finally:
        if not _put(judging, None, abandoned):  # the run was left: nobody rates what waits
            _let_go(judging)


def _score_frames(chain: Chain, stop: threading.Event, abandoned: threading.Event,
                  made: queue.Queue, outbox: queue.Queue, totals: dict[str, Any],
                  judging: queue.Queue) -> None:
    def put_all(events: Iterator[object] | list[object]) -> bool:
        return all(_put(outbox, event, abandoned) for event in events)

    reference = chain.reference or chain.first
    last = chain.start
    try:
        if not chain.resumed and not put_all(_scored(
                chain, Made(chain.start, chain.first), reference, abandoned, judging)):
            return
        while not abandoned.is_set():
            try:
                item = made.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if stop.is_set():  # don't wait for a call in flight: its frame is dropped
                    put_all([Finished("stopped", last, "stopped by the user", totals)])
                    return
                continue
            if isinstance(item, Made):
                totals["calls"] += item.calls
                totals["cost_usd"] += item.cost_usd or 0.0
                if stop.is_set():  # made after the click: dropped, never shown
                    put_all([Finished("stopped", last, "stopped by the user", totals)])
                    return
                if not put_all(_scored(chain, item, reference, abandoned, judging)):
                    return
                last = item.step
            elif isinstance(item, Notice):
                put_all([item])
            else:
                put_all([_ending(item, stop, last, totals)])
                return
    except Exception as error:  # handed to the caller, raised there as before
        put_all([error])


def _ending(item: _Failed | _Done, stop: threading.Event, last: int,
            totals: dict[str, Any]) -> Finished:
    if isinstance(item, _Failed) and item.status == "stopped":
        return Finished("stopped", last, item.reason, totals)
    if isinstance(item, _Failed):
        return Finished("failed", last, f"failed at step {item.step}: {item.reason}", totals)
    if stop.is_set():
        return Finished("stopped", last, "stopped by the user", totals)
    return Finished("completed", last, "", totals)


def _put(outbox: queue.Queue, item: object, abandoned: threading.Event) -> bool:
    """Hand `item` on, waiting while the next stage is busy; False if our consumer left."""
    while not abandoned.is_set():
        try:
            outbox.put(item, timeout=POLL_SECONDS)
            return True
        except queue.Full:
            continue
    return False


def _judge(scorer: Scorer, inbox: queue.Queue, outbox: queue.Queue,
           abandoned: threading.Event, pace: dict[str, float]) -> None:
    """Rate each frame the scorer hands over, in order, and pass the ratings on; ends with
    `_JudgesDone` once the scorer says no more come (None), unless our consumer went away.
    Each frame's hold on the memory budget ends once it is rated, or once nobody will."""
    try:
        while not abandoned.is_set():
            try:
                item = inbox.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if item is None:
                break
            result, started = FrameScores({}), time.perf_counter()
            try:
                scorer.ask_judges(item.image, result, item.judges)
            finally:
                item.held.release()
            pace["rated"] += 1
            pace["seconds"] += time.perf_counter() - started
            events = [FrameJudged(item.step, result.scores, result.judge_text),
                      *(Notice(warning, item.step) for warning in result.warnings)]
            if not all(_put(outbox, event, abandoned) for event in events):
                return
    except Exception as error:  # handed to the caller, raised there
        _put(outbox, error, abandoned)
        return
    finally:
        _let_go(inbox)
    _put(outbox, _JudgesDone(), abandoned)


def _let_go(inbox: queue.Queue) -> None:
    """Release the budget of the frames still waiting for a judge that will not rate them."""
    while True:
        try:
            item = inbox.get_nowait()
        except queue.Empty:
            return
        if isinstance(item, _ToJudge):
            item.held.release()


def _last_ratings(judges: tuple[Judge, ...] | list[Judge], waiting: int,
                  pace: dict[str, float]) -> str:
    """What the page says while the judges rate the last frames: how many, about how long at
    their pace so far, and that Stop ends the run now (keeping every frame and score)."""
    labels = ", ".join(judge.info.label for judge in judges)
    took = (f", about {waiting * pace['seconds'] / pace['rated']:.0f} s at "
            f"{pace['seconds'] / pace['rated']:.1f} s a frame" if pace["rated"] else "")
    return (f"{labels}: rating the last frames ({waiting} at most{took}); Stop ends the run "
            "now, keeping every frame and score made")


def _scored(chain: Chain, made: Made, reference: Image.Image, abandoned: threading.Event,
            judging: queue.Queue) -> Iterator[FrameScored | Notice]:
    scorer = chain.scorer  # the frame is shown already (`FrameMade`): its scores follow
    # The metrics wait their turn in the process's memory budget: the frame is kept, never
    # dropped. Judges are asked on their own thread, holding no memory of the budget.
    reservation = scorer.budget.request(scorer.memory_needed(made.image.size, reference.size))
    try:
        if not reservation.granted:
            yield Notice("waiting for memory: other runs' frames are being scored", made.step,
                         "info")
            if not reservation.wait(abandoned.is_set):
                return
        started = time.perf_counter()
        # Between metrics: skip the rest once the run has ended without this frame.
        result = scorer.measure(made.image, reference, cancelled=abandoned.is_set)
    finally:
        reservation.release()
    if abandoned.is_set():
        return
    # Until `FrameJudged` comes (or for good: a step no judge rates is a gap in their curves,
    # no GPU booked), the judges' cells are NaN.
    result.scores.update({judge.info.name: math.nan for judge in scorer.judges})
    if chain.without_fidelity(made.step):
        result.scores.update({name: math.nan for name in FIDELITY if name in result.scores})
    yield FrameScored(made.step, made.image, result.scores, made.text, "",
                      made.seconds, time.perf_counter() - started, made.calls, made.cost_usd)
    # After FrameScored went out: it comes first.
    if judges := rating_at(scorer.judges, made.step, chain.steps, chain.judge_at):
        # Held in the budget while it waits; past JUDGE_BACKLOG frames, the scorer waits too.
        held = scorer.budget.request(judged_bytes(made.image.size))
        if not held.wait(abandoned.is_set):
            return
        if not _put(judging, _ToJudge(made.step, made.image, judges, held), abandoned):
            held.release()
            return
    for warning in result.warnings:
        yield Notice(warning, made.step)


def _produce(chain: Chain, stop: threading.Event, abandoned: threading.Event,
             outbox: queue.Queue, shown: queue.Queue) -> None:
    """Make each step (`chain.frames`: from the one before, or played), hand each frame to our
    caller to show at once (`shown`: a frame made after a stop is dropped, never shown) and to
    the scorer (`outbox`)."""
    def put(item: object) -> bool:
        return _put(outbox, item, abandoned)

    image = chain.first
    for step in chain.frames.steps_after(chain.start, chain.steps):
        if stop.is_set() or abandoned.is_set():
            break
        try:
            made = chain.frames.make(image, step, lambda m, s=step: put(Notice(m, s, "info")))
        except GpuRefused as refused:  # the visitor's GPU quota, not the run, gave out
            put(_Failed(step, refused.at_step(step), "stopped"))
            return
        except Exception as error:  # any failure ends the run, keeping what was made
            put(_Failed(step, _describe(error)))
            return
        if stop.is_set() or not _put(shown, FrameMade(step, made.image), abandoned) \
                or not put(made):
            return
        image = made.image
    put(_Done())


def _describe(error: Exception) -> str:
    """Our own errors are worded for the user; anything else also names its type."""
    text = str(error).strip()
    if isinstance(error, (GenerationFailed, BackendUnavailable, BadImage)) and text:
        return text
    return error_line(error)
