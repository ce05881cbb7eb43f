"""The visitor guard: how much of what everyone shares one visitor may hold (issues 22, 42).
The page's, beside `page/run_tab/handlers.py`; the engine never sees a request.

A visitor is a browser or an account, or an API caller's token (`page.door.identity`); an address
is only a ceiling on top, for one machine minting new browsers. Browser tabs keep their own
session for Stop; API and MCP calls have no session slot at all (gradio's MCP server is
stateless: every MCP call reaches the app through one loopback client and one session hash).

What one visitor may hold, and (the ceiling) all the visitors of one address together:
- at most `chains_per_visitor` chains queued or running (`chains_per_address` per address),
  counted from gradio's own queue when a chain joins it, and at most `chains_waiting` chains
  wait in all. Cheap events (page load, Stop, opening a run, list_options) are never refused:
  the queue itself has no size limit, only chains do;
- chains in flight worth at most `cost_per_visitor` megapixel-steps (pixels x steps) together
  (`cost_per_address` per address; `admitted`); one chain alone is always admitted, so
  nothing a single visitor may ask for is refused for its size;
- uploads of at most `upload_bytes_per_visitor` within `uploads_keep_s`
  (`upload_bytes_per_address` per address; `UploadGuard`);
- its share of the runs kept (`started`: `runs_per_visitor`, `run_bytes_per_visitor`);
- hub files fetched for its replays within `uploads_keep_s` (`count_hub_bytes`);
- at most `PREVIEWS_PER_VISITOR` previews of its upload queued or running (each decodes the
  whole upload, within the memory budget), `PREVIEWS_AT_ONCE` of everyone's at once;
- every number field a real number (`_check_numbers`), checked when the event joins.

A visitor sees and resumes only the runs it made (`owns`); any other run opens by its link,
read-only.

Each limit is a field of `page.settings.SETTINGS` (its `BANANA_*` variable).

Every chain in flight has a stop flag, filed in one registry (`STOP_FLAGS`) under who may stop
it: a browser tab's chain under its tab (`access.claim`, one at a time), an API or MCP chain
under the token its caller gave it (`claim_token`), and only that token stops it; a chain
whose caller disconnected is stopped by its handler (`alive`).

File arguments are the files gradio received (`received_file`): never a folder, never a path a
client names. A URL given as a file is never fetched by gradio: when the event joins the queue,
an https URL to a public address is fetched by `page.door.url_inputs` into the upload folder,
counted like an upload and named as one; any other URL is refused (`_fetch_urls`).

What this reads of gradio's queue is `page.door.gradio_patches`'.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import stat
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
from gradio.context import LocalContext
from PIL import Image
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from banana_space.store.diskspace import frame_bytes
from banana_space.sources.images import MAX_SIDE
from banana_space.store.run import Run, SavedRun, runs_in
from banana_space.chain.runs import clear_orphans, prune_runs
from page.door import body_limit as bodies
from page.door import disk
from page.door import gradio_patches
from page.door import url_inputs
from page.door.identity import Visitor, visitor_of
from page.settings import SETTINGS

CHAIN_GROUP = "runs"  # the concurrency id every chain event shares (app.py)
PREVIEW_GROUP = "previews"  # the upload's preview (app.py): PREVIEWS_AT_ONCE decode at once
PREVIEWS_AT_ONCE = 2
# Queued or running: a page asks twice per change of its upload (the preview and the start's
# condition, app.py), and its load may overlap its first change.
PREVIEWS_PER_VISITOR = 4
PREVIEWS_WAITING = 32
# A folder in the runs folder without run.json this old never became a run (its start failed):
# removed. A run's start writes run.json once its metrics load (BANANA_METRIC_LOAD_S, 30 s).
ORPHAN_GRACE_S = 600
MIN_TOKEN = 16  # an API caller's stop token is a secret: a short one would be guessable

_demo: gr.Blocks | None = None
_cost_lock = threading.Lock()
_costs: dict[str, list[float]] = defaultdict(list)  # share or address -> its chains' costs
_upload_lock = threading.Lock()
_uploads: dict[str, deque[tuple[float, int]]] = defaultdict(deque)  # who -> (time, bytes)
_hub_bytes: dict[str, deque[tuple[float, int]]] = defaultdict(deque)  # the same, for replays


class Refused(Exception):
    """A request one visitor may not make now; the message is safe to show."""


def owns(visitor: Visitor, run: Run) -> bool:
    """Whether `visitor` made `run` (under any credential it holds now: its account, its
    browser, the token it gave)."""
    made_by = run.made_by
    return made_by is not None and made_by in visitor.keys()


def own_runs(visitor: Visitor) -> list[str]:
    """The ids of the runs `visitor` made, newest first."""
    mine = visitor.keys()
    return sorted((run.id for run in runs_in(SETTINGS.runs_root) if run.made_by in mine),
                  reverse=True) if mine else []


# --- the queue ----------------------------------------------------------------------------------

def install(demo: gr.Blocks) -> None:
    """Check every chain that joins `demo`'s queue (after `demo.queue()`), once gradio is the
    one `page.door.gradio_patches` was written for."""
    global _demo
    gradio_patches.check()
    _demo = demo
    gradio_patches.wrap_join(demo._queue, lambda body, request: _join_refusal(demo, body,
                                                                             request))
    gradio_patches.file_without_litter()


async def _join_refusal(demo: gr.Blocks, body: Any, request: Any) -> str | None:
    """Why an event may not join the queue now, or None (its URL files fetched first)."""
    fn = demo.fns.get(body.fn_index) if body.fn_index is not None else None
    try:
        if fn is not None:
            _check_numbers(fn.inputs, body.data)
            await _fetch_urls(body.data, request)
        if fn is not None and fn.concurrency_id == CHAIN_GROUP:
            _check_chain_room(demo, visitor_of(request))
        if fn is not None and fn.concurrency_id == PREVIEW_GROUP:
            _check_preview_room(demo, visitor_of(request))
    except Refused as refusal:
        return str(refusal)
    return None


def _check_numbers(inputs: list[Any], data: Any) -> None:
    """gradio's Number and Slider take `true` as 1, round 1.5 where a precision is set, and
    answer a string, null or NaN with ~30 lines of traceback (issue 41): a number field's value
    is a finite number (or blank, in a Number: an option left to its default) before the event
    joins the queue, else one line saying so. The value itself is not echoed."""
    for block, value in zip(inputs, data if isinstance(data, list) else [], strict=False):
        if not isinstance(block, gr.Number | gr.Slider) or (
                value is None and isinstance(block, gr.Number)):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            kind = ("true or false" if isinstance(value, bool) else "blank" if value is None
                    else "NaN or infinite" if isinstance(value, float) else "text"
                    if isinstance(value, str) else f"a {type(value).__name__}")
            raise Refused(f"{block.label or 'A number field'} must be a number, not {kind}.")


async def _fetch_urls(data: Any, request: Any) -> None:
    """Each file argument gradio would download (a FileData whose path is a URL), fetched here
    instead (`page.door.url_inputs`) and given as an upload of the caller's, or `Refused`."""
    for file_data in _url_file_data(data):
        try:
            path = await url_inputs.fetch(file_data["path"], Path(disk.UPLOADS) / "urls",
                                          _demo.max_file_size or bodies.UPLOAD_BYTES)
        except url_inputs.UrlRefused as error:
            raise Refused(str(error)) from None
        try:
            _admit_bytes(request, path.stat().st_size)  # counted as an upload of that size
        except Refused:
            path.unlink(missing_ok=True)
            raise
        file_data.update(path=str(path), url=None)
        _demo.upload_file_set.add(str(path))


def _url_file_data(data: Any) -> Iterator[dict]:
    """File arguments gradio would download: a FileData whose path is an http(s) URL."""
    if isinstance(data, dict):
        path = data.get("path")
        if isinstance(path, str) and path.startswith(("http://", "https://")):
            yield data
        for value in data.values():
            yield from _url_file_data(value)
    elif isinstance(data, list):
        for value in data:
            yield from _url_file_data(value)


def _check_preview_room(demo: gr.Blocks, visitor: Visitor) -> None:
    """A preview decodes a whole upload (a flat 8000² PNG of 200 KB is 1 GB decoded): each
    visitor has at most `PREVIEWS_PER_VISITOR` queued or running, and `PREVIEWS_WAITING`
    wait in all (issue 41: thirty previews of one such PNG once peaked at 9 GB)."""
    waiting, running = gradio_patches.events_in_flight(demo._queue, PREVIEW_GROUP)
    if sum(visitor_of(event.request).share == visitor.share for event in waiting + running) >= \
            PREVIEWS_PER_VISITOR:
        raise Refused(f"You have {PREVIEWS_PER_VISITOR} previews being made; wait for them.")
    if len(waiting) >= PREVIEWS_WAITING:
        raise Refused("Many previews are being made; try again in a moment.")


def _check_chain_room(demo: gr.Blocks, visitor: Visitor) -> None:
    waiting, running = gradio_patches.events_in_flight(demo._queue, CHAIN_GROUP)
    others = [visitor_of(event.request) for event in waiting + running]
    mine = sum(other.share == visitor.share for other in others)
    if mine >= SETTINGS.chains_per_visitor:
        raise Refused(f"You have {mine} chains queued or running; at most "
                      f"{SETTINGS.chains_per_visitor} per visitor. Wait for one to end, or "
                      "stop one.")
    here = sum(other.address == visitor.address for other in others)
    if here >= SETTINGS.chains_per_address:
        raise Refused(f"{here} chains are queued or running from your network already; at most "
                      f"{SETTINGS.chains_per_address} per address. Try again in a few minutes.")
    if len(waiting) >= SETTINGS.chains_waiting:
        raise Refused(f"{len(waiting)} chains are waiting already; try again in a few minutes.")


def room_for_more_chains(visitor: Visitor, more: int) -> None:
    """`Refused` where `more` chains beyond the one this event is would pass the visitor's
    cap (`SETTINGS.chains_per_visitor`): a comparison runs two chains in one queued event, and
    counts as two."""
    if _demo is None:
        return
    waiting, running = gradio_patches.events_in_flight(_demo._queue, CHAIN_GROUP)
    mine = sum(visitor_of(event.request).share == visitor.share for event in waiting + running)
    if mine + more > SETTINGS.chains_per_visitor:
        raise Refused(f"A comparison runs {more + 1} chains, and you have {mine} queued or "
                      f"running counting it as one; at most {SETTINGS.chains_per_visitor} per "
                      "visitor. Wait for one to end, or stop one.")


def alive(request: gr.Request) -> bool:
    """False once the client that asked for this event has gone; True outside the queue."""
    if _demo is None or request is None:
        return True
    return not gradio_patches.is_dead(_demo._queue, request.request)


# --- stop flags: a chain in flight is stopped by whoever may stop it ----------------------------

class StopFlags:
    """The stop flags of the chains in flight, filed under who may stop them (`tab_key`,
    `token_key`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flags: dict[str, set[threading.Event]] = {}

    def claim(self, who: str, alone: bool = False) -> threading.Event | None:
        """A new stop flag filed under `who`; None if `alone` and `who` has one already."""
        with self._lock:
            if alone and who in self._flags:
                return None
            flag = threading.Event()
            self._flags.setdefault(who, set()).add(flag)
        return flag

    def release(self, who: str, flag: threading.Event) -> None:
        with self._lock:
            flags = self._flags.get(who, set())
            flags.discard(flag)
            if not flags:
                self._flags.pop(who, None)

    def of(self, who: str) -> list[threading.Event]:
        """The stop flags of `who`'s chains in flight."""
        with self._lock:
            return list(self._flags.get(who, ()))


STOP_FLAGS = StopFlags()


def tab_key(tab: str) -> str:
    """Where a browser tab's chain files its stop flag (`access.tab_of` names the tab)."""
    return f"tab {tab}"


def token_key(token: str) -> str:
    """Where an API chain files its stop flag: its caller's token, digested."""
    return "token " + hashlib.sha256(token.encode()).hexdigest()


def claim_token(token: str) -> threading.Event:
    """The stop flag of an API chain, filed under its caller's `token` (if any) for
    `token_flags`: only whoever knows the token can stop the chain."""
    if not token:
        return threading.Event()
    if len(token) < MIN_TOKEN:
        raise Refused(f"A token is a secret of at least {MIN_TOKEN} characters.")
    return STOP_FLAGS.claim(token_key(token))


def release_token(token: str, flag: threading.Event) -> None:
    STOP_FLAGS.release(token_key(token), flag)


def token_flags(token: str) -> list[threading.Event]:
    """The stop flags of the chains in flight under `token`."""
    return STOP_FLAGS.of(token_key(token))


# --- shares -------------------------------------------------------------------------------------

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


def started(run_dir: Path, visitor: Visitor) -> None:
    """Once a new run's first event is on disk: its owner is recorded and old runs are pruned,
    the owner's own beyond its share first (the new run counts toward both). A caller with no
    credential (no browser, account or token) owns nothing: its run is anyone's to open by its
    link, and no one's to resume."""
    owner = visitor.owner
    run = Run(run_dir)
    if owner is not None and run.made_by is None:  # a resumed run keeps its owner
        run.mark_owner(owner)
    prune_runs(SETTINGS.runs_root, SETTINGS.keep_runs, owner=owner, **_shares())
    clear_orphans(SETTINGS.runs_root, ORPHAN_GRACE_S)


def _shares() -> dict[str, Any]:
    """What retention keeps (`prune_runs`): the runs' bytes, each visitor's share, and the age
    under which no run is evicted for someone else's."""
    return {"keep_bytes": SETTINGS.runs_bytes, "owner_keep": SETTINGS.runs_per_visitor,
            "owner_bytes": SETTINGS.run_bytes_per_visitor,
            "min_age_s": SETTINGS.run_min_age_s,
            "min_free_bytes": frame_bytes((MAX_SIDE, MAX_SIDE))}  # room for the largest frame


@contextlib.contextmanager
def admitted(visitor: Visitor, cost: float) -> Iterator[None]:
    """Hold `cost` (pixels x steps) of the visitor's share, and of its address's ceiling, while
    a chain runs, or `Refused`."""
    address = "address " + visitor.address
    with _cost_lock:
        mine, here = _costs[visitor.share], _costs[address]
        if mine and sum(mine) + cost > SETTINGS.cost_per_visitor:
            raise Refused(f"Your chains in flight come to {sum(mine) / 1e6:,.0f} megapixel-"
                          f"steps and this one to {cost / 1e6:,.0f}; at most "
                          f"{SETTINGS.cost_per_visitor / 1e6:,.0f} per visitor at once. Wait "
                          "for one to end, or use fewer steps or a smaller picture.")
        if here and sum(here) + cost > SETTINGS.cost_per_address:
            raise Refused(f"The chains in flight from your network come to "
                          f"{sum(here) / 1e6:,.0f} megapixel-steps and this one to "
                          f"{cost / 1e6:,.0f}; at most {SETTINGS.cost_per_address / 1e6:,.0f} "
                          "per address at once. Try again in a few minutes.")
        mine.append(cost)
        here.append(cost)
    try:
        yield
    finally:
        with _cost_lock:
            for who in (visitor.share, address):
                _costs[who].remove(cost)
                if not _costs[who]:
                    del _costs[who]


# --- files --------------------------------------------------------------------------------------

def received_file(path: Any) -> str:
    """`path` if it is a regular file gradio received from a client (an upload, or a file its
    MCP server made from a data: URL and uploaded), else `Refused`: never a folder, a link or
    any other server path (gradio lets a client name any file under a static path)."""
    blocks = LocalContext.blocks.get(None) or _demo
    received = set(getattr(blocks, "upload_file_set", ()))
    if blocks is not None:
        for block in blocks.blocks.values():
            received |= getattr(block, "temp_files", set())
    if not isinstance(path, str) or os.path.abspath(path) not in received:
        raise Refused("Upload the file: a file argument must be a file you sent.")
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        raise Refused("That upload is gone (uploads are kept for a while): upload it "
                      "again.") from None
    if not stat.S_ISREG(mode):
        raise Refused("Upload a file: a folder or a link is not a file argument.")
    return path


class UploadGuard:
    """ASGI middleware on gradio's upload route: a visitor's uploads within the window are
    bounded, and the upload folder is kept within its share of the disk (oldest first)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if (scope["type"] == "http" and scope["method"] == "POST"
                and scope["path"].endswith("/upload")):
            try:
                _admit_upload(Request(scope))
            except Refused as refusal:
                await PlainTextResponse(str(refusal), status_code=429)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _admit_upload(request: Request) -> None:
    length = request.headers.get("content-length", "")
    if not length.isdigit():
        raise Refused("An upload must say its length (Content-Length).")
    _admit_bytes(request, int(length))


def _admit_bytes(request: Any, size: int) -> None:
    """`size` more bytes in the upload folder from `request`'s visitor, or `Refused`."""
    # Behind the proxy, only the app's own MCP client uploads without the proxy's header: MCP
    # callers' files are bounded by the upload folder's share alone.
    if not (SETTINGS.trust_proxy and "x-forwarded-for" not in request.headers):
        visitor = visitor_of(request)
        _count(_uploads, [(visitor.share, SETTINGS.upload_bytes_per_visitor, "visitor"),
                          ("address " + visitor.address, SETTINGS.upload_bytes_per_address,
                           "address")], size, "uploads")
    disk.make_room(Path(disk.UPLOADS), size, SETTINGS.uploads_bytes)


def count_hub_bytes(visitor: Visitor, size: int) -> None:
    """Add `size` (what a replay fetches from the hub) to the visitor's share within the
    upload window, or `Refused` past it (`SETTINGS.hub_bytes_per_visitor`)."""
    _count(_hub_bytes, [(visitor.share, SETTINGS.hub_bytes_per_visitor, "visitor")], size,
           "replays from the hub")


def _count(ledger: dict[str, deque[tuple[float, int]]], shares: list[tuple[str, int, str]],
           size: int, what: str) -> None:
    """Add `size` to each (who, cap, per what) of `shares` within the window, or `Refused`
    (adding to none) where one would pass its cap."""
    now = time.monotonic()
    with _upload_lock:
        for who, cap, per in shares:
            recent = ledger[who]
            while recent and now - recent[0][0] > SETTINGS.uploads_keep_s:
                recent.popleft()
            sent = sum(nbytes for _, nbytes in recent)
            if sent + size > cap:
                whose = "Your" if per == "visitor" else "Your network's"
                raise Refused(f"{whose} {what} came to {_mb(sent)} recently and this needs "
                              f"{_mb(size)} more; at most {_mb(cap)} per {per} within "
                              f"{SETTINGS.uploads_keep_s / 3600:g} h.")
        for who, _, _ in shares:
            ledger[who].append((now, size))


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:,.0f} MB" if nbytes >= 1e7 else f"{nbytes / 1e6:.2g} MB"
