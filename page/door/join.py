"""The queue's door: every event that joins gradio's queue is checked here first, once gradio is
the one `gradio_patches` was written for (`install`).

- every argument given, every number field a real number, every file argument a file the
  caller sent or a URL (`_check_arguments`, `_check_numbers`): gradio answers each of these
  with an error it does not show;
- a URL given as a file is never fetched by gradio: an https URL to a public address, given as
  a chain's or a preview's file and once that event's caps admit it, is fetched by
  `url_inputs` into the upload folder, its bytes counted like an upload's as they arrive, and
  named as an upload; at most `FETCHES_PER_VISITOR` of a visitor's at once,
  `FETCHES_AT_ONCE` of everyone's; any other URL is refused before anything is fetched
  (`_url_files`, `_fetch_urls`);
- a chain (`CHAIN_GROUP`; a comparison's event is two, `runs_two_chains`): at most
  `chains_per_visitor` queued or running per visitor (`chains_per_address` per address),
  `chains_waiting` waiting in all (and the per-visitor and per-address counts again where
  a chain starts, `guard.admitted`);
  cheap events (page load, Stop, opening a run, list_options) are never refused: the queue
  itself has no size limit;
- a preview (`PREVIEW_GROUP`): at most `PREVIEWS_PER_VISITOR` of a visitor's queued or running
  (each decodes the whole upload, within the memory budget), `PREVIEWS_AT_ONCE` of everyone's
  at once.
A chain whose caller disconnected is stopped by its handler (`alive`). What this reads of
gradio's queue is `gradio_patches`'.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr

from page.door import body_limit as bodies
from page.door import disk, gradio_patches, url_inputs
from page.door.guard import Refused, Served
from page.door.identity import Visitor, visitor_of
from page.door.uploads import arriving, received_file
from page.settings import SETTINGS

CHAIN_GROUP = "runs"  # the concurrency id every chain event shares
# Scoring is CPU-bound and a small Space has 2 cores: 4 chains at once share them (each waits
# mostly on its generator anyway), set on every chain event (gradio takes a group's limit from
# the first event it sees, so one event without it once let 8 run).
CHAINS_AT_ONCE = 4
CHAIN_EVENTS = {"concurrency_id": CHAIN_GROUP, "concurrency_limit": CHAINS_AT_ONCE,
                "show_progress": "hidden"}  # a chain's status line says what is happening
# The page's plumbing is private: reachable only by what the page posts (and confined there
# like everything else), never listed or offered to API clients or agents.
PLUMBING = {"api_visibility": "private"}
PREVIEW_GROUP = "previews"  # the upload's preview: PREVIEWS_AT_ONCE decode at once
PREVIEWS_AT_ONCE = 2
# Queued or running: a page asks twice per change of its upload (the preview and the start's
# condition), and its load may overlap its first change.
PREVIEWS_PER_VISITOR = 4
PREVIEWS_WAITING = 32
# The events whose file argument may be a URL to fetch: those whose caps are checked here.
FETCHING_GROUPS = (CHAIN_GROUP, PREVIEW_GROUP)
# URL fetches at once (each holds a connection and up to 30 s): a comparison of two URLs
# fetches one after the other.
FETCHES_PER_VISITOR = 2
FETCHES_AT_ONCE = 8
_PAIRS: set[int] = set()  # the events (by index) that run two chains: a comparison's
_fetching: Counter[str] = Counter()  # share -> its fetches in flight (read on the event loop)


def install(demo: gr.Blocks) -> None:
    """Check every chain that joins `demo`'s queue (after `demo.queue()`), once gradio is the
    one `page.door.gradio_patches` was written for."""
    gradio_patches.check()
    Served.demo = demo
    gradio_patches.wrap_join(demo._queue, lambda body, request: _join_refusal(demo, body,
                                                                             request))
    gradio_patches.file_without_litter()


async def _join_refusal(demo: gr.Blocks, body: Any, request: Any) -> str | None:
    """Why an event may not join the queue now, or None. Its URL files are fetched last, once
    everything else admits it, and its caps are checked again after (the fetch took time)."""
    fn = demo.fns.get(body.fn_index) if body.fn_index is not None else None
    if fn is None:
        return None
    try:
        _check_arguments(fn, body.data)
        _check_numbers(fn.inputs, body.data)
        urls = _url_files(fn, body.data)
        _check_room(demo, fn, request)
        if urls:
            await _fetch_urls(urls, request)
            _check_room(demo, fn, request)
    except Refused as refusal:
        return str(refusal)
    return None


def _check_room(demo: gr.Blocks, fn: Any, request: Any) -> None:
    """The caps of the event's group, or `Refused`."""
    if fn.concurrency_id == CHAIN_GROUP:
        _check_chain_room(demo, visitor_of(request), _chains(fn))
    if fn.concurrency_id == PREVIEW_GROUP:
        _check_preview_room(demo, visitor_of(request))


def _check_numbers(inputs: list[Any], data: Any) -> None:
    """gradio's Number and Slider take `true` as 1, round 1.5 where a precision is set, and
    answer a string, null or NaN with ~30 lines of traceback: a number field's value
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


def _check_arguments(fn: Any, data: Any) -> None:
    """Every argument the event takes, and every file argument's path a URL or a file the
    caller sent (`received_file`: never a server path, nor a data: URL, which only the MCP
    server turns into an upload), or `Refused`."""
    values = data if isinstance(data, list) else []
    if len(values) < len(fn.inputs):
        raise Refused(f"This takes {len(fn.inputs)} arguments and {len(values)} were given.")
    for block, value in zip(fn.inputs, values, strict=False):
        for file_data in _file_data(value) if isinstance(block, gr.File) else ():
            if not _is_url(file_data["path"]):
                received_file(file_data["path"])


def _url_files(fn: Any, data: Any) -> list[dict]:
    """The file arguments gradio would download (a FileData whose path is a URL), or `Refused`
    where one is not an event's file argument that may be fetched (`FETCHING_GROUPS`)."""
    values = data if isinstance(data, list) else [data]
    urls = []
    for index, value in enumerate(values):
        found = [found for found in _file_data(value) if _is_url(found["path"])]
        block = fn.inputs[index] if index < len(fn.inputs) else None
        if found and not (isinstance(block, gr.File) and fn.concurrency_id in FETCHING_GROUPS):
            raise Refused("A URL is taken only as the image or frames of a chain; upload the "
                          "file here instead.")
        urls += found
    return urls


async def _fetch_urls(urls: list[dict], request: Any) -> None:
    """Each URL file fetched here instead of by gradio (`page.door.url_inputs`), its bytes
    counted as they arrive against the caller's uploads, and given as an upload of theirs;
    or `Refused`, with nothing kept."""
    share = visitor_of(request).share if urls else ""
    for file_data in urls:
        if _fetching[share] >= FETCHES_PER_VISITOR:
            raise Refused(f"You have {FETCHES_PER_VISITOR} URLs being fetched; wait for them.")
        if _fetching.total() >= FETCHES_AT_ONCE:
            raise Refused("Many URLs are being fetched; try again in a moment.")
        _fetching[share] += 1
        try:
            with arriving(request) as arrived:
                path = await url_inputs.fetch(file_data["path"], Path(disk.UPLOADS) / "urls",
                                              Served.demo.max_file_size or bodies.UPLOAD_BYTES,
                                              arrived=arrived)
        except url_inputs.UrlRefused as error:
            raise Refused(str(error)) from None
        finally:
            _fetching[share] -= 1
            if not _fetching[share]:
                del _fetching[share]
        file_data.update(path=str(path), url=None)
        Served.demo.upload_file_set.add(str(path))


def _file_data(data: Any) -> Iterator[dict]:
    """Every FileData (a dict with a path) in an argument."""
    if isinstance(data, dict):
        if isinstance(data.get("path"), str):
            yield data
        for value in data.values():
            yield from _file_data(value)
    elif isinstance(data, list):
        for value in data:
            yield from _file_data(value)


def _is_url(path: str) -> bool:
    """Whether gradio would download `path`, or should: `HTTPS://` is a URL too (gradio reads
    it as a server path, and refuses it without a word)."""
    return path[:8].lower().startswith(("http://", "https://"))


def _check_preview_room(demo: gr.Blocks, visitor: Visitor) -> None:
    """A preview decodes a whole upload (a flat 8000² PNG of 200 KB is 1 GB decoded): each
    visitor has at most `PREVIEWS_PER_VISITOR` queued or running, and `PREVIEWS_WAITING`
    wait in all (thirty previews of one such PNG once peaked at 9 GB)."""
    waiting, running = gradio_patches.events_in_flight(demo._queue, PREVIEW_GROUP)
    if sum(visitor_of(event.request).share == visitor.share for event in waiting + running) >= \
            PREVIEWS_PER_VISITOR:
        raise Refused(f"You have {PREVIEWS_PER_VISITOR} previews being made; wait for them.")
    if len(waiting) >= PREVIEWS_WAITING:
        raise Refused("Many previews are being made; try again in a moment.")


def _check_chain_room(demo: gr.Blocks, visitor: Visitor, chains: int) -> None:
    """`chains` more (a comparison is two) within the caps, or `Refused`."""
    waiting, running = gradio_patches.events_in_flight(demo._queue, CHAIN_GROUP)
    others = [(visitor_of(event.request), _chains(event.fn)) for event in waiting + running]
    mine = sum(count for other, count in others if other.share == visitor.share)
    this = "" if chains == 1 else f" and this comparison runs {chains}"
    if mine + chains > SETTINGS.chains_per_visitor:
        raise Refused(f"You have {mine} chains queued or running{this}; at most "
                      f"{SETTINGS.chains_per_visitor} per visitor. Wait for one to end, or "
                      "stop one.")
    here = sum(count for other, count in others if other.address == visitor.address)
    if here + chains > SETTINGS.chains_per_address:
        raise Refused(f"{here} chains are queued or running from your network already{this}; "
                      f"at most {SETTINGS.chains_per_address} per address. Try again in a few "
                      "minutes.")
    if len(waiting) >= SETTINGS.chains_waiting:
        raise Refused(f"{len(waiting)} chains are waiting already; try again in a few minutes.")


def runs_two_chains(dependency: dict[str, Any]) -> None:
    """Mark an event (as `.click` returns it, wired with `CHAIN_EVENTS`) as a comparison's:
    it counts as two chains where it joins the queue."""
    _PAIRS.add(dependency["id"])


def _chains(fn: Any) -> int:
    """How many chains an event of the chain group runs."""
    return 2 if fn._id in _PAIRS else 1


def alive(request: gr.Request) -> bool:
    """False once the client that asked for this event has gone; True outside the queue."""
    if Served.demo is None or request is None:
        return True
    return not gradio_patches.is_dead(Served.demo._queue, request.request)
