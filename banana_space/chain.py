"""The replication chain of Banana100 (arXiv 2604.03400, Sec. 3): ask the generator for a copy,
feed the copy back in, and score every frame on the way.

Two kinds of work overlap. A producer thread asks the backend for frame i+1 (a network call or
a GPU step) while this generator scores frame i and yields it, so the user waits for the
generator and never for us. The queue between them holds one frame: the producer runs at most
one step ahead, and a stopped or abandoned run wastes at most one call.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from PIL import Image

from .backends import Backend, BackendUnavailable
from .backends.base import GenerationFailed
from .events import Finished, FrameScored, Notice
from .images import BadImage, load_image
from .prompts import repeats_for
from .scoring import Scorer

POLL_SECONDS = 0.1  # how often a waiting side looks at the stop flag


@dataclass(frozen=True)
class Chain:
    image: Image.Image  # the frame the chain continues from (frame 0 unless resuming)
    backend: Backend
    scorer: Scorer
    steps: int  # the last step to make
    prompt: str
    seed: int
    start: int = 0  # the step `image` is; > 0 when resuming from a run directory
    reference: Image.Image | None = None  # frame 0, when resuming


@dataclass(frozen=True)
class _Made:
    step: int
    image: Image.Image
    text: str
    seconds: float
    calls: int
    cost_usd: float | None


@dataclass(frozen=True)
class _Failed:
    step: int
    reason: str


class _Done:
    pass


def run_chain(chain: Chain, stop: threading.Event | None = None
              ) -> Iterator[FrameScored | Notice | Finished]:
    """Yield each scored frame as soon as it exists, notices as they happen, then the end."""
    stop = stop or threading.Event()
    abandoned = threading.Event()  # set when our consumer goes away (closed generator)
    outbox: queue.Queue = queue.Queue(maxsize=1)
    producer = threading.Thread(target=_produce, args=(chain, stop, abandoned, outbox),
                                name="chain-producer", daemon=True)
    producer.start()
    reference = chain.reference or chain.image
    totals = {"calls": 0, "cost_usd": 0.0}
    last = chain.start
    try:
        if chain.start == 0:
            yield from _scored(chain.scorer, _Made(0, chain.image, "", 0.0, 0, None), reference)
        while True:
            try:
                item = outbox.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if stop.is_set():  # don't wait for a call in flight: its frame is dropped
                    yield Finished("stopped", last, "stopped by the user", totals)
                    return
                continue
            if isinstance(item, Notice):
                yield item
            elif isinstance(item, _Made):
                totals["calls"] += item.calls
                totals["cost_usd"] += item.cost_usd or 0.0
                yield from _scored(chain.scorer, item, reference)
                last = item.step
            elif isinstance(item, _Failed):
                yield Finished("failed", last, f"failed at step {item.step}: {item.reason}",
                               totals)
                return
            else:
                status = "stopped" if stop.is_set() else "completed"
                yield Finished(status, last, "stopped by the user" if stop.is_set() else "",
                               totals)
                return
    finally:
        abandoned.set()


def _scored(scorer: Scorer, made: _Made, reference: Image.Image
            ) -> Iterator[FrameScored | Notice]:
    started = time.perf_counter()
    result = scorer.score(made.image, reference)
    yield FrameScored(made.step, made.image, result.scores, made.text, result.judge_text,
                      made.seconds, time.perf_counter() - started, made.calls, made.cost_usd)
    for warning in result.warnings:
        yield Notice(warning, made.step)


def _produce(chain: Chain, stop: threading.Event, abandoned: threading.Event,
             outbox: queue.Queue) -> None:
    def put(item: object) -> bool:
        while not abandoned.is_set():
            try:
                outbox.put(item, timeout=POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    image = chain.image
    for step in range(chain.start + 1, chain.steps + 1):
        if stop.is_set() or abandoned.is_set():
            break
        try:
            made = _make_step(chain, image, step, lambda m, s=step: put(Notice(m, s, "info")))
        except Exception as error:  # any failure ends the run, keeping what was made
            put(_Failed(step, _describe(error)))
            return
        if not put(made):
            return
        image = made.image
    put(_Done())


def _make_step(chain: Chain, image: Image.Image, step: int, report) -> _Made:
    """One chain step: `repeats` calls with the prompt (e.g. "mirror it" twice)."""
    started = time.perf_counter()
    texts, calls, cost = [], 0, None
    for _ in range(repeats_for(chain.prompt)):
        edit = chain.backend.edit(image, chain.prompt, seed=chain.seed, step=step,
                                  report=report)
        loaded = load_image(edit.image)
        image, calls = loaded.image, calls + edit.calls
        texts += [t for t in (edit.text, *loaded.notes) if t]
        if edit.cost_usd is not None:
            cost = (cost or 0.0) + edit.cost_usd
    return _Made(step, image, "\n".join(texts), time.perf_counter() - started, calls, cost)


def _describe(error: Exception) -> str:
    """Our own errors are worded for the user; anything else also names its type."""
    text = str(error).strip()
    if isinstance(error, (GenerationFailed, BackendUnavailable, BadImage)) and text:
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
