"""The one runner: every chain the page or the API starts or resumes goes through
here, so its lifecycle is written once: claim a stop flag, admit its cost, start or resume,
record its owner, hand its events on.

A chain has one side (a run: `RunSpec`) or two (a comparison: `PairSpec`); both go through
the same two doors and the engine's one lifecycle (`banana_space.chain.lifecycle`), for any
event that runs a chain (the page's Run, Resume and hub replay, the Compare tab, the API's and
MCP's tools):

    with runner.start(request, spec, token=None) as flight:       # a new chain
        for event in flight.events: ...                           # engine events, as made
    with runner.resume(request, run_id, key="", token=None, pair=False) as flight:
        flight.saved                                              # each side's run as read
        ...

A run's events are `banana_space.events`; a comparison's are `SideEvent`s and `SideFailed`
(`banana_space.chain.lifecycle`), each tagged with its side.

- `token=None`: a browser tab's chain (one per tab, stopped by that tab's Stop); a string: an
  API or MCP chain, stopped by `stop_run(token)` only (blank: by its end, or its caller going
  away). A token is also a credential: the run is its caller's (`page.door.identity`).
- Every refusal (a bad spec, a cap reached, not the owner, the run busy) is raised as a
  `access.Refusal` before any event, with nothing left held; `Complete` says a chain has nothing
  left to resume (the page shows it as a note, the API as an error).
- `flight.stop` is the chain's stop flag, `flight.visitor` who asked, `flight.run_id` its run
  (run A of a pair) once it has started, `flight.comparison` a pair's record. Leaving the
  `with` (the events finished, or closed because the caller went away) stops and records the
  run (or both) and lets go of the stop flag and the admitted cost.

How the events are shown is the caller's, through one of two ends: `stream` folds them into a
view of the page's and sends each screen (the Run and Compare tabs), `until_end` waits for the
end (the API's tools, which answer JSON).
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from banana_space.chain.comparison import Comparison
from banana_space.chain.lifecycle import ChainSpec, Opened, Paired, SideEvent, start_chain
from banana_space.chain.spec import RunSpec
from banana_space.events import Started
from banana_space.store.run import Run, RunBusy, SavedRun
from banana_space.verdict.columns import SIDES
from page.door import guard, join, stop_flags
from page.door.access import (
    REFUSALS,
    Refusal,
    brought_back,
    claim,
    mine,
    refusal,
    release,
    tab_of,
)
from page.door.identity import Visitor, visitor_of
from page.settings import SETTINGS

__all__ = ["Complete", "Flight", "resume", "start", "stream", "until_end"]
Screen = TypeVar("Screen")
Sent = TypeVar("Sent")


class Complete(Exception):
    """The chain made every step it was asked for: nothing to resume."""

    def __init__(self, steps: int) -> None:
        super().__init__(f"This run is complete: all {steps} steps are made. Resume goes on "
                         "with a stopped or interrupted run; start a new chain for more.")
        self.steps = steps


@dataclass
class Flight:
    """A chain in flight: its events (each already written to its run), its stop flag, who
    asked for it, each side's run as it was read before it went on (a resume; a copy of its
    own, "A" alone for a lone run), and a pair's record; `run_id` is its run (run A of a pair)
    once started."""

    events: Iterator[Any]
    stop: threading.Event
    visitor: Visitor
    saved: dict[str, SavedRun] = field(default_factory=dict)
    comparison: Comparison | None = None
    run_id: str | None = None


class View(Protocol[Screen]):
    """A page's view of a chain: each event folded in gives what to show now."""

    def apply(self, event: Any) -> Screen: ...

    def screen(self) -> Screen: ...


def stream(flight: Flight, view: View[Screen], show: Callable[[Screen, bool, bool], Sent]
           ) -> Iterator[Sent]:
    """Fold a chain's events into `view` and send each screen as it changes, as
    `show(screen, stopping, last)`; `last` is True once, for the screen after the end (a run's
    zip is made after its end is shown, so one more screen offers it). When the visitor
    disconnects, gradio closes this generator: the chain stops and its run is recorded as
    interrupted."""
    for event in flight.events:
        yield show(view.apply(event), flight.stop.is_set(), False)
    yield show(view.screen(), flight.stop.is_set(), True)


def until_end(flight: Flight, request: Any) -> Run:
    """Consume a chain's events; its run (run A of a pair). A caller that disconnects stops
    it within a step: closing its events records the run as interrupted."""
    for _ in flight.events:
        if not join.alive(request):
            flight.events.close()
            break
    assert flight.run_id is not None, "a run always starts with Started (a pair with its A)"
    return Run(SETTINGS.runs_root / flight.run_id)


@contextlib.contextmanager
def start(request: Any, spec: ChainSpec, *, token: str | None = None) -> Iterator[Flight]:
    """A new chain of one side (`RunSpec`) or two (`PairSpec`: under one stop flag, so Stop
    stops both), its sides checked, then admitted at their cost (each side's pixels x steps,
    a pair's two at once), each side's run owned by who asked."""
    with _stop_flag(request, token) as (stop, visitor), contextlib.ExitStack() as held:
        def admit(sides: list[RunSpec]) -> None:
            held.enter_context(guard.admitted(
                visitor, *(guard.chain_cost(side.image, side.steps) for side in sides)))

        try:
            events = start_chain(spec, SETTINGS.runs_root, stop=stop, admit=admit,
                                 owners=visitor.owner_keys())
        except REFUSALS as error:
            raise refusal(error) from None
        comparison = events.comparison if isinstance(events, Paired) else None
        yield from _until_left(_owned(Flight(events, stop, visitor, comparison=comparison)))


@contextlib.contextmanager
def resume(request: Any, run_id: Any, *, key: str = "", token: str | None = None,
           pair: bool = False) -> Iterator[Flight]:
    """The run `run_id` (with `pair`, the comparison whose run A it is, both runs) going on
    from its last complete frame, each run read once; only its owner may (`access.mine`, each
    side); `key` goes to every secret option its backends and judges take, never written.
    Admitted as the sides it resumes (their number and each one's cost). `Complete` if it has
    nothing left to make."""
    with _stop_flag(request, token) as (stop, visitor), contextlib.ExitStack() as held:
        runs, record = _to_resume(run_id, visitor, pair)
        try:
            opened = Opened.open(runs, record)
        except RunBusy as busy:  # its writer still holds it: anyone else hears it is not theirs
            for run in runs.values():
                mine(run, visitor)
            raise refusal(busy) from None
        except REFUSALS as error:
            raise refusal(error) from None
        held.callback(opened.close)  # a no-op once it has gone on
        if opened.complete:
            raise Complete(max(saved.last_step for saved in opened.runs.values()))
        for run in runs.values():
            mine(run, visitor)  # only its maker rewrites a run; anyone opens it by its link
        saved = copy.deepcopy(opened.runs)  # the caller's: the writers add to their own
        try:
            held.enter_context(guard.admitted(  # the sides it resumes, at once
                visitor, *(guard.resume_cost(saved[side]) for side in opened.going_on)))
            events = opened.events(stop=stop, key=key or None)
        except REFUSALS as error:
            raise refusal(error) from None
        yield from _until_left(_owned(Flight(events, stop, visitor, saved, record,
                                             run_id=record.a if record else None)))


def _to_resume(run_id: Any, visitor: Visitor, pair: bool
               ) -> tuple[dict[str, Run], Comparison | None]:
    """The runs a resume opens: the run `run_id` alone (side "A"), or both runs of the
    comparison whose run A it is and its record, each fetched again if a restart wiped it. A
    comparison's owner is checked before its runs are opened."""
    run = brought_back(run_id)
    if not pair:
        return {"A": run}, None
    record = Comparison.read(run)
    if record is None or record.a != Run(SETTINGS.runs_root / str(run_id)).id:
        raise Refusal("That run is not side A of a comparison: open the comparison's link "
                      "(?compare=<run A>) to resume it.")
    runs = {side: brought_back(record.run_id(side)) for side in SIDES if record.run_id(side)}
    for side_run in runs.values():
        mine(side_run, visitor)
    return runs, record


def _owned(flight: Flight) -> Flight:
    """The flight with its events wrapped so that old runs are pruned once each new run's (each
    side's, for a pair) first event is on disk (`guard.started`: the new run's owners were
    recorded as its folder was made), and its run id noted (run A's, for a pair): the one
    place the page and the API do this. Closing the events closes the run's (or both runs') at
    once (a visitor who goes away stops the chain)."""
    events = flight.events

    def owned() -> Iterator[Any]:
        try:
            for event in events:
                side, made = (event.side, event.event) if isinstance(event, SideEvent) \
                    else ("A", event)
                if isinstance(made, Started) and made.run_dir is not None:
                    guard.started(Path(made.run_dir))
                    if side == "A" and flight.run_id is None:
                        flight.run_id = Path(made.run_dir).name
                yield event
        finally:
            events.close()

    flight.events = owned()
    return flight


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
            flag = stop_flags.claim_token(token)
        except guard.Refused as error:
            raise refusal(error) from None
        let_go = lambda: stop_flags.release_token(token, flag)  # noqa: E731
    try:
        yield flag, visitor_of(request, token or "")
    finally:
        let_go()


def _until_left(flight: Flight) -> Iterator[Flight]:
    """Hand `flight` to the caller's `with`; leaving it closes the chain's events, which stops
    the chain and records the run (as interrupted, if it had not ended)."""
    try:
        yield flight
    finally:
        flight.events.close()
