"""Everything this app does to gradio's (and uvicorn's) internals, in one room.

Where gradio 6.31 has a public way, the app uses it instead: `gr.Error(print_exception=False)`
for a refusal (`access.Refusal`), per-event `concurrency_limit` and `concurrency_id`, the
queue's `max_size`. What is left has no public equivalent; each patch below says why, and
which gradio function it replaces or reads. `check()` runs at start-up (`install`): a gradio
other than `GRADIO_VERSION`, or one whose patched functions changed shape, stops the app at
once instead of breaking it silently. tests/test_gradio_patches.py checks the same shapes.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import gradio as gr
import gradio_client.utils as client_utils
from gradio.oauth import _get_valid_oauth_info_from_session
from gradio.queueing import Queue
from gradio.utils import NamedString

__all__ = ["GRADIO_VERSION", "SHAPES", "check", "events_in_flight", "file_without_litter",
           "is_dead", "signed_in_user", "trust_no_proxy", "wrap_join"]

GRADIO_VERSION = "6.31.0"  # requirements.txt pins it
# Each patched or read function, and the parameters it must still take.
SHAPES: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    "Queue.push": (Queue.push, ("self", "body", "request", "username")),
    "File._process_single_file": (gr.File._process_single_file, ("self", "f")),
    "oauth._get_valid_oauth_info_from_session": (_get_valid_oauth_info_from_session,
                                                 ("session",)),
}
Join = Callable[[Any, Any, str | None], Awaitable[Any]]


def check() -> None:
    """Stop the app if gradio is not the version these patches were written for, or if a
    patched function changed its parameters."""
    if gr.__version__ != GRADIO_VERSION:
        raise RuntimeError(f"page/door/gradio_patches.py is written for gradio {GRADIO_VERSION}, "
                           f"not {gr.__version__}: check each patch against the new gradio")
    for name, (function, parameters) in SHAPES.items():
        found = tuple(inspect.signature(function).parameters)
        if found != parameters:
            raise RuntimeError(f"gradio's {name} now takes {found}, not {parameters}")
    queue = Queue.__init__.__code__.co_names
    for attribute in ("event_queue_per_concurrency_id", "active_jobs"):
        if attribute not in queue:
            raise RuntimeError(f"gradio's Queue has no {attribute} any more")


def trust_no_proxy() -> None:
    """uvicorn (as gradio starts it) trusts X-Forwarded-For from 127.0.0.1, so a local client,
    or gradio's own MCP loopback client forwarding a caller's headers, could choose its address.
    gradio passes no `forwarded_allow_ips` to `uvicorn.Config`, which then reads this variable:
    trust no one; `page.door.identity` reads the header itself where BANANA_TRUST_PROXY says so."""
    os.environ["FORWARDED_ALLOW_IPS"] = ""


def wrap_join(queue: Queue, check_join: Callable[[Any, Any], Awaitable[str | None]]) -> None:
    """Replaces `Queue.push` (gradio's queue/join route calls it for every event): gradio has no
    per-client limit of its own, nor a hook that runs before an event takes a place in the
    queue (an event's `validator=` runs once it is processed). `check_join(body, request)`
    answers a refusal's text, or None to let the event join."""
    join: Join = queue.push

    async def push(body: Any, request: Any, username: str | None) -> Any:
        refused = await check_join(body, request)
        if refused is not None:
            return False, refused, "error"
        return await join(body, request, username)

    queue.push = push  # type: ignore[method-assign]


def events_in_flight(queue: Queue, concurrency_id: str) -> tuple[list[Any], list[Any]]:
    """(waiting, running) events of one concurrency group: gradio has no public view of its
    queue; this reads `Queue.event_queue_per_concurrency_id` and `Queue.active_jobs`."""
    group = queue.event_queue_per_concurrency_id.get(concurrency_id)
    waiting = list(group.queue) if group is not None else []
    running = [event for job in list(queue.active_jobs) if job for event in job
               if event.concurrency_id == concurrency_id]
    return waiting, running


def is_dead(queue: Queue, request: Any) -> bool:
    """Whether the client of `request`'s event has gone (gradio marks its queue event dead when
    the event stream disconnects; a handler is told nothing): reads `Queue.active_jobs`."""
    for event in _running(queue):
        if event.request is request:
            return not event.alive
    return False


def _running(queue: Queue) -> Iterator[Any]:
    for job in list(queue.active_jobs):
        yield from job or ()


def signed_in_user(scope: dict[str, Any]) -> str | None:
    """The Hugging Face account signed in on this request's session (gradio's OAuth routes put
    it there), or None: gradio offers it only as a handler's `gr.OAuthProfile` parameter, and
    the guard needs it before a handler runs (a chain joining the queue). Reads the session as
    `gradio.oauth._get_valid_oauth_info_from_session` does, an expired sign-in being none."""
    session = scope.get("session")
    if not isinstance(session, dict):  # no OAuth on this server: no SessionMiddleware
        return None
    info = _get_valid_oauth_info_from_session(session) or {}
    name = (info.get("userinfo") or {}).get("preferred_username")
    return name if isinstance(name, str) and name else None


def file_without_litter() -> None:
    """Replaces `gr.File._process_single_file`: gradio 6.31's `gr.File(type="filepath")` makes
    an empty temporary file in the upload folder for every file it is given, and forgets it:
    one more per call, forever. This is its preprocessing without that file (the type check
    as gradio's own); other types keep gradio's."""
    original = gr.File._process_single_file

    def process(self: gr.File, f: Any) -> Any:
        if self.type != "filepath":
            return original(self, f)
        if self.file_types and not client_utils.is_valid_file(f.path, self.file_types):
            raise gr.Error("Invalid file type. Please upload a file that is one of these "
                           f"formats: {self.file_types}", print_exception=False)
        return NamedString(f.path)

    gr.File._process_single_file = process  # type: ignore[method-assign]
