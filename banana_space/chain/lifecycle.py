"""One lifecycle for a chain of one side (a run: `RunSpec`) or two (a comparison: `PairSpec`):
`start_chain` checks a spec's sides, lets the caller admit them, and starts them; `Opened` opens
a chain's runs to go on (each side's `runs.Resumption`). A lone run's events come as they are;
a pair's are tagged with their side and merged (`SideEvent`, `SideFailed`), its record
(`comparison.Comparison`) kept up to date as they pass.

A pair's two runs start from the same input, scored once. If B cannot start, or fails on the
way, A goes on and the comparison says which side failed and why. Both runs are ordinary runs
(each its own folder, zip and link); `compare.json` in each names the pair, and at the end run
A's folder gets the comparison's zip (both runs' zips, the A/B verdict table and the record).
The page and the API call this through the runner; the CLI, the scripts and the tests call it
directly; nothing here is gradio.
"""

from __future__ import annotations

import contextvars
import copy
import queue
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..budget import BUDGET, MemoryBudget
from ..events import Event, Finished, Started
from ..markup import error_line
from ..scores.pool import POOL, MetricPool
from ..scores.scoring import InputScores
from ..store.run import Run, SavedRun
from .comparison import Comparison
from .runs import Resumption, begin_run
from .spec import RunSpec


class ChainSpec(Protocol):
    """A chain of one side or two: `RunSpec` (one) or `comparison.PairSpec` (two)."""

    def checked_sides(self) -> dict[str, RunSpec]:
        """Each side's spec by its side ("A", "B"), checked (`spec.check_spec`)."""

    def record(self) -> Comparison | None:
        """A pair's record, before either run exists; None for a lone run."""


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


def start_chain(spec: ChainSpec, root: Path, *, stop: threading.Event | None = None,
                admit: Callable[[list[RunSpec]], Any] = lambda sides: None,
                owners: Sequence[str] = (), pool: MetricPool = POOL,
                budget: MemoryBudget = BUDGET) -> Iterator[Any]:
    """Check a chain's sides, have the caller `admit` them (all at once: a cap is checked
    before anything is built or written), and start them from one input.

    Args:
        spec: a run's `RunSpec` or a comparison's `PairSpec`.
        root: the runs folder; each side gets a fresh run directory in it.
        stop: set it to stop every side after the frame being made.
        admit: the caller's admission of the checked sides (it raises to refuse them).
        owners: who asked (opaque keys, `Run.mark_owner`), each side's run's owners from the
            moment its folder is made.
        pool, budget: as `runs.start_run`'s; each side reserves its own frames' memory.
    Returns:
        A lone run's events (`runs.start_run`'s); a pair's as `Paired`: both runs' events as
        they come (`SideEvent`), `SideFailed` for a side that could not start, the comparison
        (`compare.json`, then its zip) written as they go.
    Raises:
        ValueError, BackendUnavailable, BadImage: before anything is written, if a side's spec
        is bad (or the pair identical), or the first side cannot start.
    """
    sides, record = spec.checked_sides(), spec.record()
    admit(list(sides.values()))
    stop = stop or threading.Event()
    if record is None:
        return begin_run(sides["A"], root, stop=stop, pool=pool, budget=budget, owners=owners)
    shared = InputScores()
    chains = {"A": begin_run(sides["A"], root, stop=stop, pool=pool, budget=budget,
                             input_scores=shared, owners=owners)}
    try:
        chains["B"] = begin_run(sides["B"], root, stop=stop, pool=pool, budget=budget,
                                input_scores=shared, owners=owners)
    except Exception as error:  # noqa: BLE001 - any reason B cannot start is shown; A goes on
        record.failed["B"] = error_line(error)
    return Paired(record, _paired(chains, record, root))


class Opened:
    """A chain's runs opened to go on (each side's `Resumption`: its writer lock held and its
    run read once), so a caller can look at them (`runs`, `complete`, `going_on`) before
    `events` starts the sides that have steps left, or `close` lets them go."""

    def __init__(self, opened: dict[str, Resumption], record: Comparison | None) -> None:
        self.opened, self.record = opened, record

    @classmethod
    def open(cls, runs: dict[str, Run], record: Comparison | None = None) -> Opened:
        """Open each side's run (a lone run is side "A" with no record); on a refusal, the
        sides opened are let go.

        Raises:
            RunBusy, FileNotFoundError: as `Resumption.open`, for any side.
        """
        opened: dict[str, Resumption] = {}
        try:
            for side, run in runs.items():
                opened[side] = Resumption.open(run.path)
        except BaseException:
            for resumption in opened.values():
                resumption.close()
            raise
        return cls(opened, record)

    @property
    def runs(self) -> dict[str, SavedRun]:
        """Each side's run as read."""
        return {side: resumption.saved for side, resumption in self.opened.items()}

    @property
    def going_on(self) -> list[str]:
        """The sides with steps left to make."""
        return [side for side, resumption in self.opened.items() if not resumption.complete]

    @property
    def complete(self) -> bool:
        return not self.going_on

    def close(self) -> None:
        """Let every side go (a no-op for a side that has gone on)."""
        for resumption in self.opened.values():
            resumption.close()

    def events(self, *, stop: threading.Event | None = None, pool: MetricPool = POOL,
               key: str | None = None) -> Iterator[Any]:
        """Go on: each side with steps left goes on from its last frame under one stop flag. A
        lone run's events are `Resumption.events`'; a pair's are `Paired`, each side's scores
        so far the record's (a side with nothing left to make is opened for its scores and
        let go), the record and the comparison's zip written as a new pair's are.

        Raises:
            ValueError, BackendUnavailable: a side cannot go on here (every side is let go).
        """
        stop = stop or threading.Event()
        if self.record is None:
            return self.opened["A"].events(stop=stop, pool=pool, key=key)
        record, root = self.record, self._root()
        chains: dict[str, Iterator[Event]] = {}
        try:
            for side, resumption in self.opened.items():
                record.histories[side] = copy.deepcopy(resumption.saved.history)
                if resumption.complete:
                    resumption.close()
                else:
                    chains[side] = resumption.events(stop=stop, pool=pool, key=key)
                    record.failed.pop(side, None)  # it goes on: its old failure is history
        except BaseException:
            for events in chains.values():
                events.close()  # type: ignore[attr-defined]
            self.close()
            raise
        return Paired(record, _paired(chains, record, root))

    def _root(self) -> Path:
        """The runs folder the runs lie in."""
        return next(iter(self.opened.values())).saved.path.parent


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
