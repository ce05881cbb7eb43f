"""The one runner (issue 42): every chain the page or the API starts or resumes goes through
here, so its lifecycle is written once: claim a stop flag, admit its cost, start or resume,
record its owner, hand its events on.

Its interface, for any event that runs a chain (the page's Run, Resume and hub replay, the
API's and MCP's tools, a compare mode):

    with runner.start(request, spec, token=None) as chain:      # a new run
        for event in chain.events: ...                          # engine events, as made
    with runner.resume(request, run_id, key="", token=None) as chain:
        chain.saved                                             # the run as it was read
        ...
    with runner.start_pair(request, loaded, steps, a, b, metrics) as chain:  # a comparison
        for event in chain.events: ...                          # SideEvent / SideFailed

- `token=None`: a browser tab's chain (one per tab, stopped by that tab's Stop); a string: an
  API or MCP chain, stopped by `stop_run(token)` only (blank: by its end, or its caller going
  away). A token is also a credential: the run is its caller's (`page.door.identity`).
- Every refusal (a bad spec, a cap reached, not the owner, the run busy) is raised as a
  `access.Refusal` before any event, with nothing left held; `Complete` says a run has nothing
  left to resume (the page shows it as a note, the API as an error).
- `chain.stop` is the chain's stop flag, `chain.visitor` who asked. Leaving the `with` (the
  events finished, or closed because the caller went away) stops and records the run and lets
  go of the stop flag and the admitted cost.

How the events are shown is the caller's: `handlers.stream` folds them into the page's view,
`api` waits for the end and answers JSON.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from banana_space.compare.pair import Side, SideEvent, SideFailed
from banana_space.compare.pair import start_pair as start_both
from banana_space.events import Event, Started
from banana_space.sources.images import LoadedImage
from banana_space.store.run import RunBusy, SavedRun
from banana_space.chain.runs import Resumption, start_run
from banana_space.chain.spec import RunSpec
from page.door import guard
from page.door.access import REFUSALS, brought_back, claim, mine, owned, refusal, release, tab_of
from page.door.identity import Visitor, visitor_of
from page.settings import SETTINGS

__all__ = ["Chain", "Complete", "resume", "start", "start_pair"]


class Complete(Exception):
    """The run made every step it was asked for: nothing to resume."""

    def __init__(self, steps: int) -> None:
        super().__init__(f"This run is complete: all {steps} steps are made. Resume goes on "
                         "with a stopped or interrupted run; start a new chain for more.")
        self.steps = steps


@dataclass
class Chain:
    """A chain in flight: its events (each already written to its run), its stop flag, who
    asked for it, and (for a resumed run) the run as read before it went on, a copy of its own."""

    events: Iterator[Event]
    stop: threading.Event
    visitor: Visitor
    saved: SavedRun | None = None


@contextlib.contextmanager
def start(request: Any, spec: RunSpec, *, token: str | None = None) -> Iterator[Chain]:
    """A new run of `spec`, admitted at its cost (pixels x steps), owned by who asked."""
    with _stop_flag(request, token) as (stop, visitor), contextlib.ExitStack() as held:
        try:
            held.enter_context(guard.admitted(visitor, guard.chain_cost(spec.image,
                                                                        spec.steps)))
            events = start_run(spec, SETTINGS.runs_root, stop=stop)
        except REFUSALS as error:
            raise refusal(error) from None
        yield from _until_left(Chain(owned(events, visitor), stop, visitor))


@contextlib.contextmanager
def start_pair(request: Any, loaded: LoadedImage, steps: int, a: Side, b: Side,
               metrics: Sequence[str], *, token: str | None = None, lesson: str | None = None
               ) -> Iterator[Chain]:
    """Two chains from one upload (a comparison, `banana_space.compare.pair.start_pair`) under one
    stop flag (Stop stops both), admitted as two chains (their number and each side's cost),
    each side's run owned by who asked; `chain.events` are `SideEvent`s and `SideFailed`."""
    with _stop_flag(request, token) as (stop, visitor), contextlib.ExitStack() as held:
        try:
            guard.room_for_more_chains(visitor, 1)
            cost = guard.chain_cost(loaded.image, steps)
            held.enter_context(guard.admitted(visitor, cost))
            held.enter_context(guard.admitted(visitor, cost))
            events = start_both(loaded, steps, a, b, metrics, SETTINGS.runs_root, stop=stop,
                                lesson=lesson)
        except REFUSALS as error:
            raise refusal(error) from None
        yield from _until_left(Chain(_owned_sides(events, visitor), stop, visitor))


def _owned_sides(events: Iterator[SideEvent | SideFailed], visitor: Visitor
                 ) -> Iterator[SideEvent | SideFailed]:
    """A pair's events, each side's run recorded as the visitor's once it is on disk (as
    `access.owned` does for one run); closing this closes both chains."""
    try:
        for event in events:
            if isinstance(event, SideEvent) and isinstance(event.event, Started):
                guard.started(Path(event.event.run_dir), visitor)
            yield event
    finally:
        events.close()


@contextlib.contextmanager
def resume(request: Any, run_id: Any, *, key: str = "", token: str | None = None
           ) -> Iterator[Chain]:
    """The run `run_id` going on from its last complete frame, read once; only its owner may
    (`access.mine`); `key` goes to every secret option its backend and judges take, never
    written. `Complete` if it has nothing left to make."""
    run = brought_back(run_id)  # a run resumed by its id: fetched again if a restart wiped it
    with _stop_flag(request, token) as (stop, visitor):
        try:
            opened = Resumption.open(run.path)
        except RunBusy as busy:  # its writer still holds it: anyone else hears it is not theirs
            mine(run, visitor)
            raise refusal(busy) from None
        except REFUSALS as error:
            raise refusal(error) from None
        with contextlib.ExitStack() as held:
            held.callback(opened.close)  # a no-op once the run has gone on
            if opened.complete:
                raise Complete(opened.saved.last_step)
            mine(run, visitor)  # only its maker rewrites a run; anyone opens it by its link
            saved = copy.deepcopy(opened.saved)  # the caller's: the writer adds to its own
            try:
                held.enter_context(guard.admitted(visitor, guard.resume_cost(saved)))
                events = opened.events(stop=stop, key=key or None)
            except REFUSALS as error:
                raise refusal(error) from None
            yield from _until_left(Chain(owned(events, visitor), stop, visitor, saved))


@contextlib.contextmanager
def _stop_flag(request: Any, token: str | None) -> Iterator[tuple[threading.Event, Visitor]]:
    """The chain's stop flag, claimed first (Stop works while the metrics and the generator
    load), filed under the tab or the token; and who asks."""
    if token is None:
        tab = tab_of(request)
        flag = claim(tab)
        let_go: Callable[[], None] = lambda: release(tab, flag)  # noqa: E731
    else:
        try:
            flag = guard.claim_token(token)
        except guard.Refused as error:
            raise refusal(error) from None
        let_go = lambda: guard.release_token(token, flag)  # noqa: E731
    try:
        yield flag, visitor_of(request, token or "")
    finally:
        let_go()


def _until_left(chain: Chain) -> Iterator[Chain]:
    """Hand `chain` to the caller's `with`; leaving it closes the chain's events, which stops
    the chain and records the run (as interrupted, if it had not ended)."""
    try:
        yield chain
    finally:
        chain.events.close()
