"""The visitor guard: who a request comes from, and how much of what everyone shares one visitor
may hold (issue 22). The page's, beside `page/handlers.py`; the engine never sees a request.

A visitor, for fairness, is a client address: on a Space the proxy's `X-Forwarded-For` (its
last entry over every line of the header: the address the proxy itself saw; earlier entries,
and earlier lines, are whatever the client wrote), elsewhere the socket's peer.
Browser tabs keep their own session for Stop; API and MCP calls
have no session slot at all (gradio's MCP server is stateless: every MCP call reaches the app
through one loopback client and one session hash).

What one address may hold:
- at most `chains_per_visitor` chains queued or running, counted from gradio's own queue when a
  chain joins it, and at most `chains_waiting` chains wait in all. Cheap events (page load,
  Stop, opening a run, list_options) are never refused: the queue itself has no size limit,
  only chains do;
- chains in flight worth at most `cost_per_visitor` megapixel-steps (pixels x steps) together
  (`admitted`); one chain alone is always admitted, so nothing a single visitor may ask for is
  refused for its size;
- uploads of at most `upload_bytes_per_visitor` within `uploads_keep_s` (`UploadGuard`);
- its share of the runs kept (`started`: `runs_per_visitor`, `run_bytes_per_visitor`);
- hub files fetched for its replays within `uploads_keep_s` (`count_hub_bytes`).

A visitor sees and resumes only the runs it made (`owns`); any other run opens by its link,
read-only.

Each limit is a field of `page.settings.SETTINGS` (its `BANANA_*` variable).

Every chain in flight has a stop flag, filed in one registry (`STOP_FLAGS`) under who may stop
it: a browser tab's chain under its tab (`access.claim`, one at a time), an API or MCP chain
under the token its caller gave it (`claim_token`), and only that token stops it; a chain
whose caller disconnected is stopped by its handler (`alive`).

File arguments are the files gradio received (`received_file`): never a folder, never a path a
client names. A URL given as a file is never fetched by gradio: when the event joins the queue,
an https URL to a public address is fetched by `page.url_inputs` into the upload folder,
counted like an upload and named as one; any other URL is refused (`_fetch_urls`).

This wraps gradio 6.31's queue (`Blocks._queue.push`, its `event_queue_per_concurrency_id` and
`active_jobs`): gradio has no per-client limit of its own. requirements.txt pins that gradio.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import gradio_client.utils as client_utils
from gradio.context import LocalContext
from gradio.utils import NamedString
from PIL import Image
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from banana_space.images import MAX_SIDE
from banana_space.run import Run, runs_in
from banana_space.runs import prune_runs
from page import disk, url_inputs
from page.settings import SETTINGS

CHAIN_GROUP = "runs"  # the concurrency id every chain event shares (app.py)
MIN_TOKEN = 16  # an API caller's stop token is a secret: a short one would be guessable
_SALT = secrets.token_bytes(16)  # owners are unknowable from a run's files, even offline

_demo: gr.Blocks | None = None
_cost_lock = threading.Lock()
_costs: dict[str, list[float]] = defaultdict(list)  # address -> costs of its chains in flight
_upload_lock = threading.Lock()
_uploads: dict[str, deque[tuple[float, int]]] = defaultdict(deque)  # address -> (time, bytes)
_hub_bytes: dict[str, deque[tuple[float, int]]] = defaultdict(deque)  # the same, for replays


class Refused(Exception):
    """A request one visitor may not make now; the message is safe to show."""


def client_address(request: Any) -> str:
    """The client address of a starlette request or a `gr.Request` (see the module's docstring
    for when X-Forwarded-For is trusted)."""
    headers = request.headers
    # Every line of the header, in order: a proxy may add its own line after the client's.
    lines = (headers.getlist("x-forwarded-for") if hasattr(headers, "getlist") else
             [headers.get("x-forwarded-for", "")]) if SETTINGS.trust_proxy else []
    hops = [hop.strip() for line in lines for hop in line.split(",") if hop.strip()]
    if hops:
        return hops[-1]
    client = getattr(request, "client", None)
    return getattr(client, "host", None) or "unknown"


def owner_key(request: Any) -> str:
    """A run's owner as stored beside it: the address, keyed with this process's secret."""
    return hmac.new(_SALT, client_address(request).encode(), hashlib.sha256).hexdigest()[:24]


def owns(request: Any, run: Run) -> bool:
    """Whether `request` comes from the visitor who made `run` (in this process's life:
    the key's secret is new at every start, so after a restart nobody owns an old run)."""
    return run.made_by == owner_key(request)


def own_runs(request: Any) -> list[str]:
    """The ids of the runs `request`'s visitor made, newest first."""
    mine = owner_key(request)
    return sorted((run.id for run in runs_in(SETTINGS.runs_root) if run.made_by == mine),
                  reverse=True)


# --- the queue ----------------------------------------------------------------------------------

def install(demo: gr.Blocks) -> None:
    """Check every chain that joins `demo`'s queue (after `demo.queue()`)."""
    global _demo
    _demo = demo
    queue = demo._queue
    join = queue.push

    async def push(body: Any, request: Any, username: str | None) -> Any:
        fn = demo.fns.get(body.fn_index) if body.fn_index is not None else None
        try:
            if fn is not None:
                await _fetch_urls(body.data, request)
            if fn is not None and fn.concurrency_id == CHAIN_GROUP:
                _check_chain_room(queue, client_address(request))
        except Refused as refusal:
            return False, str(refusal), "error"
        return await join(body, request, username)

    queue.push = push
    gr.File._process_single_file = _filepath_without_litter
    _quiet_refusals()


def _quiet_refusals() -> None:
    """A `gr.Error` is this app's answer to a visitor (bad input, a cap reached), never a
    fault, yet gradio 6.31 prints each one's traceback (~40 lines) unless it is made with
    `print_exception=False`: one visitor's refusals would flood the log. This makes that the
    default for every `gr.Error`; a fault (any other exception) is still printed in full."""
    init = gr.Error.__init__
    names = init.__code__.co_varnames[1:init.__code__.co_argcount]
    defaults = dict(zip(names[-len(init.__defaults__):], init.__defaults__, strict=True))
    defaults["print_exception"] = False
    init.__defaults__ = tuple(defaults.values())


def _filepath_without_litter(self: gr.File, payload: Any) -> Any:
    """gradio 6.31's `gr.File(type="filepath")` makes an empty temporary file in the upload
    folder for every file it is given, and forgets it: one more per call, forever. This is its
    preprocessing without that file (the type check as gradio's own)."""
    if self.type != "filepath":
        return _file_preprocess(self, payload)
    if self.file_types and not client_utils.is_valid_file(payload.path, self.file_types):
        raise gr.Error("Invalid file type. Please upload a file that is one of these formats: "
                       f"{self.file_types}")
    return NamedString(payload.path)


_file_preprocess = gr.File._process_single_file


async def _fetch_urls(data: Any, request: Any) -> None:
    """Each file argument gradio would download (a FileData whose path is a URL), fetched here
    instead (`page.url_inputs`) and given as an upload of the caller's, or `Refused`."""
    for file_data in _url_file_data(data):
        try:
            path = await url_inputs.fetch(file_data["path"], Path(disk.UPLOADS) / "urls",
                                          _demo.max_file_size or url_inputs.MAX_BYTES)
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


def _chain_events(queue: Any) -> tuple[list[Any], list[Any]]:
    """(waiting, running) chain events in gradio's queue."""
    group = queue.event_queue_per_concurrency_id.get(CHAIN_GROUP)
    waiting = list(group.queue) if group is not None else []
    running = [event for job in list(queue.active_jobs) if job for event in job
               if event.concurrency_id == CHAIN_GROUP]
    return waiting, running


def _check_chain_room(queue: Any, who: str) -> None:
    waiting, running = _chain_events(queue)
    mine = sum(client_address(event.request) == who for event in waiting + running)
    if mine >= SETTINGS.chains_per_visitor:
        raise Refused(f"You have {mine} chains queued or running; at most "
                      f"{SETTINGS.chains_per_visitor} per visitor. Wait for one to end, or "
                      "stop one.")
    if len(waiting) >= SETTINGS.chains_waiting:
        raise Refused(f"{len(waiting)} chains are waiting already; try again in a few minutes.")


def alive(request: gr.Request) -> bool:
    """False once the client that asked for this event has gone (gradio marks its queue event
    dead when the event stream disconnects); True outside the queue."""
    if _demo is None or request is None:
        return True
    for job in list(_demo._queue.active_jobs):
        for event in job or ():
            if event.request is request.request:
                return event.alive
    return True


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


def resume_cost(run: Run) -> float:
    """A resume's cost for admission: frame 0's pixels x the steps it has still to make."""
    saved = run.load()
    with Image.open(run.frame_path(0)) as first:  # the header only
        return float(first.width * first.height
                     * max(int(saved.meta.get("steps", 0)) - saved.last_step, 0))


def restored(run_dir: Path) -> None:
    """After a run was brought back (`persist.restore`): the runs kept within their number
    and bytes, the restored one spared this once (it is about to be shown) but counted."""
    prune_runs(SETTINGS.runs_root, SETTINGS.keep_runs, active=[run_dir],
               keep_bytes=SETTINGS.runs_bytes)


def started(run_dir: Path, request: gr.Request) -> None:
    """Once a new run's first event is on disk: its owner is recorded and old runs are pruned,
    the owner's own beyond its share first (the new run counts toward both)."""
    owner = owner_key(request)
    run = Run(run_dir)
    if run.made_by is None:  # a resumed run keeps its owner
        run.mark_owner(owner)
    prune_runs(SETTINGS.runs_root, SETTINGS.keep_runs, keep_bytes=SETTINGS.runs_bytes,
               owner=owner, owner_keep=SETTINGS.runs_per_visitor,
               owner_bytes=SETTINGS.run_bytes_per_visitor)


@contextlib.contextmanager
def admitted(request: gr.Request, cost: float) -> Iterator[None]:
    """Hold `cost` (pixels x steps) of this visitor's share while a chain runs, or `Refused`."""
    who = client_address(request)
    with _cost_lock:
        held = _costs[who]
        if held and sum(held) + cost > SETTINGS.cost_per_visitor:
            raise Refused(f"Your chains in flight come to {sum(held) / 1e6:,.0f} megapixel-"
                          f"steps and this one to {cost / 1e6:,.0f}; at most "
                          f"{SETTINGS.cost_per_visitor / 1e6:,.0f} per visitor at once. Wait "
                          "for one to end, or use fewer steps or a smaller picture.")
        held.append(cost)
    try:
        yield
    finally:
        with _cost_lock:
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
        _count_upload(client_address(request), size)
    disk.make_room(Path(disk.UPLOADS), size, SETTINGS.uploads_bytes)


def _count_upload(who: str, size: int) -> None:
    """Add `size` to what `who` uploaded within the window, or `Refused` past the cap."""
    _count(_uploads, who, size, SETTINGS.upload_bytes_per_visitor, "uploads")


def count_hub_bytes(request: Any, size: int) -> None:
    """Add `size` (what a replay fetches from the hub) to the visitor's share within the
    upload window, or `Refused` past it (`SETTINGS.hub_bytes_per_visitor`)."""
    _count(_hub_bytes, client_address(request), size, SETTINGS.hub_bytes_per_visitor,
           "replays from the hub")


def _count(ledger: dict[str, deque[tuple[float, int]]], who: str, size: int, cap: int,
           what: str) -> None:
    now = time.monotonic()
    with _upload_lock:
        recent = ledger[who]
        while recent and now - recent[0][0] > SETTINGS.uploads_keep_s:
            recent.popleft()
        sent = sum(nbytes for _, nbytes in recent)
        if sent + size > cap:
            raise Refused(f"Your {what} came to {_mb(sent)} recently and this needs "
                          f"{_mb(size)} more; at most {_mb(cap)} per visitor within "
                          f"{SETTINGS.uploads_keep_s / 3600:g} h.")
        recent.append((now, size))


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:,.0f} MB" if nbytes >= 1e7 else f"{nbytes / 1e6:.2g} MB"
