"""Two chains from one upload, side by side: settings A and B (`sides.Side`), run at once from
the same input, the input scored once.

`start_pair` checks both sides before anything is written (every refusal of `start_run`
applies to each), starts A, then B, and yields both runs' events tagged with their side. If B
cannot start, or fails on the way, A goes on and the comparison says which side failed and
why. Both runs are ordinary runs (each its own folder, zip and link); `compare.json` in each
names the pair (`record.Comparison`, built once and kept up to date as the events pass), and at
the end run A's folder gets the comparison's zip (both runs' zips, the A/B verdict table and
the record). The page and the API call this; nothing here is gradio.
"""

from __future__ import annotations

import contextvars
import copy
import queue
import threading
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..budget import BUDGET, MemoryBudget
from ..chain.runs import Resumption, start_run
from ..common import error_line
from ..events import Event, Finished, Started
from ..scores.pool import POOL, MetricPool
from ..scores.scoring import InputScores
from ..sources.images import LoadedImage
from .record import Comparison
from .sides import Side, check_pair, side_specs


@dataclass(frozen=True)
class SideEvent:
    """One run's event, tagged with its side ("A" or "B")."""

    side: str
    event: Event


@dataclass(frozen=True)
class SideFailed:
    """A side that could not start: the other goes on without it."""

    side: str
    reason: str


_END = object()


def start_pair(loaded: LoadedImage, steps: int, a: Side, b: Side, metrics: Sequence[str],
               root: Path, *, stop: threading.Event | None = None, pool: MetricPool = POOL,
               budget: MemoryBudget = BUDGET, lesson: str | None = None
               ) -> Iterator[SideEvent | SideFailed]:
    """Check both sides and start both chains from one input.

    Args:
        loaded: the checked input image.
        steps: each chain's steps.
        a, b: the two sides' settings (they must differ: `check_pair`).
        metrics: the metrics both sides score with.
        root: the runs folder; each side gets a fresh run directory in it.
        stop: set it to stop both chains after the frames being made.
        pool, budget: as `start_run`'s; each chain reserves its own frames' memory.
        lesson: the lesson's key, recorded with the pair, if it was one.
    Returns:
        Both runs' events as they come (`SideEvent`), `SideFailed` for a side that could not
        start. The comparison (`compare.json`, then its zip) is written as they go.
    Raises:
        ValueError, BackendUnavailable, BadImage: before anything is written, if the pair is
        identical, either side's spec is bad, or A cannot start.
    """
    check_pair(a, b)
    specs = side_specs(loaded, steps, (a, b), metrics)
    stop = stop or threading.Event()
    shared = InputScores()
    first = start_run(specs[0], root, stop=stop, pool=pool, budget=budget, input_scores=shared)
    comparison = Comparison.of(a, b, steps, metrics, lesson)
    try:
        second = start_run(specs[1], root, stop=stop, pool=pool, budget=budget,
                           input_scores=shared)
    except Exception as error:  # noqa: BLE001 - any reason B cannot start is shown; A goes on
        comparison.failed["B"] = error_line(error)
        second = None
    chains = {"A": first, **({"B": second} if second is not None else {})}
    return Paired(comparison, _paired(chains, comparison, root))


def resume_pair(comparison: Comparison, opened: dict[str, Resumption], root: Path, *,
                stop: threading.Event | None = None, pool: MetricPool = POOL,
                key: str | None = None) -> Paired:
    """Go on with a comparison whose chains were stopped or killed, as a pair: each side in
    `opened` (its run opened to go on, `Resumption`) goes on from its last frame under one
    stop flag, each side's scores so far are the record's (a side with nothing left to make
    is opened for its scores and let go), and the record and the comparison's zip are
    written as a new pair's are.

    Raises:
        ValueError, BackendUnavailable: a side cannot go on here (every side is let go).
    """
    stop = stop or threading.Event()
    chains: dict[str, Iterator[Event]] = {}
    try:
        for side, resumption in opened.items():
            comparison.histories[side] = copy.deepcopy(resumption.saved.history)
            if resumption.complete:
                resumption.close()
            else:
                chains[side] = resumption.events(stop=stop, pool=pool, key=key)
                comparison.failed.pop(side, None)  # it goes on: its old failure is history
    except BaseException:
        for events in chains.values():
            events.close()  # type: ignore[attr-defined]
        for resumption in opened.values():
            resumption.close()
        raise
    return Paired(comparison, _paired(chains, comparison, root))


class Paired(Iterator[SideEvent | SideFailed]):
    """A pair's events, and the comparison they make (`Comparison`, kept up to date as they
    pass). Closing it closes both chains."""

    def __init__(self, comparison: Comparison,
                 events: Generator[SideEvent | SideFailed, None, None]) -> None:
        self.comparison = comparison
        self._events = events

    def __next__(self) -> SideEvent | SideFailed:
        return next(self._events)

    def close(self) -> None:
        self._events.close()


def _paired(chains: dict[str, Iterator[Event]], comparison: Comparison,
            root: Path) -> Generator[SideEvent | SideFailed, None, None]:
    """Both chains' events through one queue, each pulled on its own thread (so neither waits
    for the other's reader); the record written once both have started and again when a side
    ends, the zip at the end. Closing this closes both chains at their next event (each is
    then recorded as interrupted, as a lone run whose visitor left)."""
    if "B" in comparison.failed and "B" not in chains:
        yield SideFailed("B", comparison.failed["B"])
    inbox: queue.Queue = queue.Queue()
    abandoned = threading.Event()
    for side, events in chains.items():
        threading.Thread(target=contextvars.copy_context().run,
                         args=(_pump, side, events, inbox, abandoned),
                         name=f"compare-{side}", daemon=True).start()
    running = len(chains)
    try:
        while running:
            side, event = inbox.get()
            if event is _END:
                running -= 1
                continue
            comparison.saw(side, event)
            if isinstance(event, Finished) and event.status == "failed":
                comparison.failed[side] = event.reason or "failed"
            if isinstance(event, (Started, Finished)) and comparison.started(chains):
                comparison.write(root)
            yield SideEvent(side, event)
    finally:
        abandoned.set()  # the pumps close their chains at their next event
    comparison.write_zip(root)


def _pump(side: str, events: Iterator[Event], inbox: queue.Queue,
          abandoned: threading.Event) -> None:
    """Pull one chain's events into `inbox` until it ends, or until its reader has gone."""
    try:
        for event in events:
            if abandoned.is_set():
                break
            inbox.put((side, event))
    except Exception as error:  # noqa: BLE001 - a fault of one side ends that side, said so
        inbox.put((side, Finished("failed", -1, error_line(error))))
    finally:
        events.close()
        inbox.put((side, _END))
