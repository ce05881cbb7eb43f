"""The one runner: every chain the page or the API starts or resumes goes through
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
    with runner.resume_pair(request, run_a, key="") as chain:  # a comparison going on
        chain.pair_saved                                        # each side's run as read

- `token=None`: a browser tab's chain (one per tab, stopped by that tab's Stop); a string: an
  API or MCP chain, stopped by `stop_run(token)` only (blank: by its end, or its caller going
  away). A token is also a credential: the run is its caller's (`page.door.identity`).
- Every refusal (a bad spec, a cap reached, not the owner, the run busy) is raised as a
  `access.Refusal` before any event, with nothing left held; `Complete` says a run has nothing
  left to resume (the page shows it as a note, the API as an error).
- `chain.stop` is the chain's stop flag, `chain.visitor` who asked, `chain.run_id` its run (run
  A of a pair) once it has started, `chain.comparison` a pair's record. Leaving the `with` (the
  events finished, or closed because the caller went away) stops and records the run and lets
  go of the stop flag and the admitted cost.

How the events are shown is the caller's, through one of two ends: `stream` folds them into a
view of the page's and sends each screen (the Run and Compare tabs), `until_end` waits for the
end (the API's tools, which answer JSON).
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from banana_space.chain.runs import Resumption, start_run
from banana_space.chain.spec import RunSpec, check_spec
from banana_space.compare.pair import SideEvent, SideFailed
from banana_space.compare.pair import resume_pair as resume_both
from banana_space.compare.pair import start_pair as start_both
from banana_space.compare.record import Comparison
from banana_space.compare.sides import Side
from banana_space.events import Event, Started
from banana_space.sources.images import LoadedImage
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

__all__ = ["Chain", "Complete", "resume", "resume_pair", "start", "start_pair", "stream",
           "until_end"]
Screen = TypeVar("Screen")
Shown = TypeVar("Shown")


class Complete(Exception):
    """The run made every step it was asked for: nothing to resume."""

    def __init__(self, steps: int) -> None:
        super().__init__(f"This run is complete: all {steps} steps are made. Resume goes on "
                         "with a stopped or interrupted run; start a new chain for more.")
        self.steps = steps


@dataclass
class Chain:
    """A chain in flight: its events (each already written to its run), its stop flag, who
    asked for it, (for a resumed run) the run as read before it went on, a copy of its own, and
    (for a comparison) the pair's record; `run_id` is its run (run A of a pair) once started."""

    events: Iterator[Event] | Iterator[SideEvent | SideFailed]
    stop: threading.Event
    visitor: Visitor
    saved: SavedRun | None = None
    comparison: Comparison | None = None
    run_id: str | None = None
    pair_saved: dict[str, SavedRun] | None = None  # a resumed pair's runs, as read


class View(Protocol[Screen]):
    """A page's view of a chain: each event folded in gives what to show now."""

    def apply(self, event: Any) -> Screen: ...

    def screen(self) -> Screen: ...


def stream(chain: Chain, view: View[Screen], show: Callable[[Screen, bool, bool], Shown]
           ) -> Iterator[Shown]:
    """Fold a chain's events into `view` and send each screen as it changes, as
    `show(screen, stopping, last)`; `last` is True once, for the screen after the end (a run's
    zip is made after its end is shown, so one more screen offers it). When the visitor
    disconnects, gradio closes this generator: the chain stops and its run is recorded as
    interrupted."""
    for event in chain.events:
        yield show(view.apply(event), chain.stop.is_set(), False)
    yield show(view.screen(), chain.stop.is_set(), True)


def until_end(chain: Chain, request: Any) -> Run:
    """Consume a chain's events; its run (run A of a pair). A caller that disconnects stops
    it within a step: closing its events records the run as interrupted."""
    for _ in chain.events:
        if not join.alive(request):
            chain.events.close()
            break
    assert chain.run_id is not None, "a run always starts with Started (a pair with its A)"
    return Run(SETTINGS.runs_root / chain.run_id)


@contextlib.contextmanager
def start(request: Any, spec: RunSpec, *, token: str | None = None) -> Iterator[Chain]:
    """A new run of `spec`, admitted at its cost (pixels x steps), owned by who asked."""
    with _stop_flag(request, token) as (stop, visitor), contextlib.ExitStack() as held:
        try:
            check_spec(spec)  # its steps in range before they are a cost
            held.enter_context(guard.admitted(visitor, guard.chain_cost(spec.image,
                                                                        spec.steps)))
            events = start_run(spec, SETTINGS.runs_root, stop=stop)
        except REFUSALS as error:
            raise refusal(error) from None
        yield from _until_left(_owned(Chain(events, stop, visitor)))


@contextlib.contextmanager
def start_pair(request: Any, loaded: LoadedImage, steps: int, a: Side, b: Side,
               metrics: Sequence[str], *, token: str | None = None, lesson: str | None = None
               ) -> Iterator[Chain]:
    """Two chains from one upload (a comparison, `banana_space.compare.pair.start_pair`) under one
    stop flag (Stop stops both), admitted as two chains (their number and each side's cost),
    each side's run owned by who asked; `chain.events` are `SideEvent`s and `SideFailed`."""
    with _stop_flag(request, token) as (stop, visitor), contextlib.ExitStack() as held:
        try:
            cost = guard.chain_cost(loaded.image, steps)
            held.enter_context(guard.admitted(visitor, cost, cost))  # both at once
            events = start_both(loaded, steps, a, b, metrics, SETTINGS.runs_root, stop=stop,
                                lesson=lesson)
        except REFUSALS as error:
            raise refusal(error) from None
        yield from _until_left(_owned(Chain(events, stop, visitor,
                                            comparison=events.comparison)))


@contextlib.contextmanager
def resume_pair(request: Any, run_id: Any, *, key: str = "") -> Iterator[Chain]:
    """The comparison whose run A is `run_id` going on as a pair (`compare.pair.resume_pair`):
    both runs read once and held, only their owner may (`access.mine`, each side), admitted
    as the chains it resumes (their number and each one's cost); `chain.comparison` has each
    side's scores so far and `chain.pair_saved` each side's run as it was read. `Complete` if
    neither side has anything left to make."""
    comparison = Comparison.read(brought_back(run_id))
    if comparison is None or comparison.a != Run(SETTINGS.runs_root / str(run_id)).id:
        raise Refusal("That run is not side A of a comparison: open the comparison's link "
                      "(?compare=<run A>) to resume it.")
    runs = {side: brought_back(comparison.run_id(side)) for side in SIDES
            if comparison.run_id(side)}
    with _stop_flag(request, None) as (stop, visitor), contextlib.ExitStack() as held:
        opened: dict[str, Resumption] = {}
        for side, run in runs.items():
            mine(run, visitor)  # only its maker rewrites a run; anyone opens it by its link
            try:
                opened[side] = Resumption.open(run.path)
            except REFUSALS as error:
                raise refusal(error) from None
            held.callback(opened[side].close)  # a no-op once it has gone on
        going_on = [side for side, resumption in opened.items() if not resumption.complete]
        if not going_on:
            raise Complete(max(r.saved.last_step for r in opened.values()))
        saved = {side: copy.deepcopy(resumption.saved) for side, resumption in opened.items()}
        try:
            held.enter_context(guard.admitted(  # the sides it resumes, at once
                visitor, *(guard.resume_cost(saved[side]) for side in going_on)))
            events = resume_both(comparison, opened, SETTINGS.runs_root, stop=stop,
                                 key=key or None)
        except REFUSALS as error:
            raise refusal(error) from None
        yield from _until_left(_owned(Chain(events, stop, visitor, comparison=comparison,
                                            run_id=comparison.a, pair_saved=saved)))


def _owned(chain: Chain) -> Chain:
    """The chain with its events wrapped so that each new run (each side's, for a pair) is
    recorded as the visitor's (and old runs pruned, `guard.started`) once its first event is on
    disk, and its run id noted (run A's, for a pair): the one place the page and the API do
    this. Closing the events closes the run's (or both runs') at once (a visitor who goes away
    stops the chain)."""
    events = chain.events

    def owned() -> Iterator[Any]:
        try:
            for event in events:
                side, made = (event.side, event.event) if isinstance(event, SideEvent) \
                    else ("A", event)
                if isinstance(made, Started):
                    guard.started(Path(made.run_dir), chain.visitor)
                    if side == "A" and chain.run_id is None:
                        chain.run_id = Path(made.run_dir).name
                yield event
        finally:
            events.close()

    chain.events = owned()
    return chain


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
            yield from _until_left(_owned(Chain(events, stop, visitor, saved)))


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


def _until_left(chain: Chain) -> Iterator[Chain]:
    """Hand `chain` to the caller's `with`; leaving it closes the chain's events, which stops
    the chain and records the run (as interrupted, if it had not ended)."""
    try:
        yield chain
    finally:
        chain.events.close()
