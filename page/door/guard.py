"""The visitor guard: how much of what everyone shares one visitor may hold. The page's,
beside `page/run_tab/handlers.py`; the engine never sees a request.

A visitor is a browser or an account, or an API caller's token (`identity`); an address is
only a ceiling on top, for one machine minting new browsers. What one visitor may hold, and
(the ceiling) all the visitors of one address together; each limit is a field of
`page.settings.SETTINGS` (its `BANANA_*` variable), and each is checked in one room of the door:
- chains queued or running, and previews, counted from gradio's queue when an event joins it,
  with every number field checked there (`join.py`);
- chains running, where each starts (`admitted`, here, for every route that starts one): at
  most `chains_per_visitor` (`chains_per_address` per address), a comparison two at once,
  worth at most `cost_per_visitor` megapixel-steps (pixels x steps) together
  (`cost_per_address` per address); chains with none of the visitor's beside them are
  admitted at any cost, so nothing a single visitor may ask for is refused for its size;
- its share of the runs kept (`started`, here: `runs_per_visitor`, `run_bytes_per_visitor`);
- uploads, and hub files fetched for its replays, within `uploads_keep_s` (`uploads.py`);
- who may stop a chain in flight (`stop_flags.py`).

A visitor sees and resumes only the runs it made (`owns`); any other run opens by its link,
read-only.
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image

from banana_space.sources.images import MAX_SIDE
from banana_space.store.diskspace import frame_bytes
from banana_space.store.retention import clear_orphans, prune_runs
from banana_space.store.run import Run, SavedRun, runs_in
from page.door.identity import Visitor
from page.settings import SETTINGS

# A folder in the runs folder without run.json this old never became a run (its start failed):
# removed. A run's start writes run.json once its metrics load (BANANA_METRIC_LOAD_S, 30 s).
ORPHAN_GRACE_S = 600

_cost_lock = threading.Lock()
_costs: dict[str, list[float]] = defaultdict(list)  # share or address -> its chains' costs


class Refused(Exception):
    """A request one visitor may not make now; the message is safe to show."""


class Served:
    """The page being served, once its queue is checked (`join.install`): what the door reads
    of gradio's queue and uploads."""

    demo: gr.Blocks | None = None


def owns(visitor: Visitor, run: Run) -> bool:
    """Whether `visitor` made `run` (under any credential it holds now: its account, its
    browser, the token it gave)."""
    return not run.owners.isdisjoint(visitor.keys())


def own_runs(visitor: Visitor) -> list[str]:
    """The ids of the runs `visitor` made, newest first."""
    mine = visitor.keys()
    return sorted((run.id for run in runs_in(SETTINGS.runs_root)
                   if not run.owners.isdisjoint(mine)), reverse=True) if mine else []


def chain_cost(image: Image.Image | None, steps: int) -> float:
    """A chain's cost for admission: pixels x steps (a replay's frames: the largest there are)."""
    width, height = image.size if image is not None else (MAX_SIDE, MAX_SIDE)
    return float(width * height * steps)


def resume_cost(saved: SavedRun) -> float:
    """A resume's cost for admission: frame 0's pixels x the steps it has still to make."""
    with Image.open(saved.run.frame_path(0)) as first:  # the header only
        return float(first.width * first.height
                     * max(int(saved.meta.get("steps", 0)) - saved.last_step, 0))


def restored(run_dir: Path) -> None:
    """After a run was brought back (`persist.restore`): the runs kept within their number
    and bytes, the restored one spared this once (it is about to be shown) but counted."""
    prune_runs(SETTINGS.runs_root, SETTINGS.keep_runs, active=[run_dir], **_shares())


def started(run_dir: Path) -> None:
    """Once a run's first event is on disk (its owners recorded as it was made, `runner`):
    old runs are pruned, its maker's own beyond their share first (the new run counts toward
    both)."""
    prune_runs(SETTINGS.runs_root, SETTINGS.keep_runs, owner=Run(run_dir).made_by, **_shares())
    clear_orphans(SETTINGS.runs_root, ORPHAN_GRACE_S)


def _shares() -> dict[str, Any]:
    """What retention keeps (`prune_runs`): the runs' bytes, each visitor's share, and the age
    under which no run is evicted for someone else's."""
    return {"keep_bytes": SETTINGS.runs_bytes, "owner_keep": SETTINGS.runs_per_visitor,
            "owner_bytes": SETTINGS.run_bytes_per_visitor,
            "min_age_s": SETTINGS.run_min_age_s,
            "min_free_bytes": frame_bytes((MAX_SIDE, MAX_SIDE))}  # room for the largest frame


@contextlib.contextmanager
def admitted(visitor: Visitor, *costs: float) -> Iterator[None]:
    """Hold chains while they run, one `costs` (pixels x steps) each, admitted together (a
    comparison's two at once), or `Refused`: wherever a chain starts, at most
    `chains_per_visitor` of the visitor's run at once (`chains_per_address` of its address's),
    worth at most `cost_per_visitor` (`cost_per_address`) together; chains with none of the
    visitor's beside them are admitted at any cost."""
    address = "address " + visitor.address
    with _cost_lock:
        mine, here = _costs.get(visitor.share, []), _costs.get(address, [])
        _check_count(len(mine), len(here), len(costs))
        if mine and sum(mine) + sum(costs) > SETTINGS.cost_per_visitor:
            raise Refused(f"Your chains in flight come to {sum(mine) / 1e6:,.0f} megapixel-"
                          f"steps and this to {sum(costs) / 1e6:,.0f}; at most "
                          f"{SETTINGS.cost_per_visitor / 1e6:,.0f} per visitor at once. Wait "
                          "for one to end, or use fewer steps or a smaller picture.")
        if here and sum(here) + sum(costs) > SETTINGS.cost_per_address:
            raise Refused(f"The chains in flight from your network come to "
                          f"{sum(here) / 1e6:,.0f} megapixel-steps and this to "
                          f"{sum(costs) / 1e6:,.0f}; at most "
                          f"{SETTINGS.cost_per_address / 1e6:,.0f} per address at once. Try "
                          "again in a few minutes.")
        for who in (visitor.share, address):
            _costs[who].extend(costs)
    try:
        yield
    finally:
        with _cost_lock:
            for who in (visitor.share, address):
                for cost in costs:
                    _costs[who].remove(cost)
                if not _costs[who]:
                    del _costs[who]


def _check_count(mine: int, here: int, more: int) -> None:
    """`Refused` where `more` chains beside the visitor's `mine` (its address's `here`) pass
    their caps."""
    asked = "this one" if more == 1 else f"these {more} (a comparison runs two)"
    if mine + more > SETTINGS.chains_per_visitor:
        raise Refused(f"You have {mine} chains running; with {asked}, more than "
                      f"{SETTINGS.chains_per_visitor} per visitor. Wait for one to end, or "
                      "stop one.")
    if here + more > SETTINGS.chains_per_address:
        raise Refused(f"{here} chains are running from your network; with {asked}, more "
                      f"than {SETTINGS.chains_per_address} per address. Try again in a few "
                      "minutes.")
