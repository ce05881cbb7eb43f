"""Who may do what, for the page's handlers and the API's tools alike: every refusal as a
`gr.Error` a visitor may read, a run id confined to the runs folder, a file argument that
gradio itself received, one chain per browser tab, and a new run marked with its owner.

Everything a visitor sends is untrusted: a run is named only by a run id, resolved inside the
runs folder (`banana_space.store.runids`); a file argument is a file gradio received (`guard.py`);
each browser tab has at most one chain in flight, with a stop flag that exists from the moment
the request arrives; an API or MCP chain is stopped by the token its caller gave it; every
refusal is a `gr.Error` whose text is escaped (toasts render HTML) and holds no server path.
"""

from __future__ import annotations

import html
import re
import tempfile
import threading
from collections.abc import Sequence
from typing import Any

import gradio as gr

from banana_space.backends import REGISTRY as BACKENDS
from banana_space.backends import BackendUnavailable
from banana_space.chain.persist import restore
from banana_space.markup import without_paths
from banana_space.scores.catalog import (
    CPU_DEFAULTS,
    check_visitor_metrics,
    parse_metric_names,
    visitor_metrics,
)
from banana_space.sources.images import BadImage
from banana_space.store.run import Run, RunBusy
from banana_space.store.runids import BadRunId, open_run, run_path
from page.door import guard, stop_flags, uploads
from page.door.identity import Visitor
from page.settings import RECORDED, REPO, SETTINGS

ALREADY_RUNNING = ("A chain is already running for you: press Stop (or wait for it to end) "
                   "before starting another.")
# Errors the engine raises for bad input or a run that cannot go ahead: shown, never a crash.
# The largest whole number a form field may hold: a double's exact integers (every field's
# own range, steps or a seed, is far inside it and checked where it is used).
WHOLE_NUMBER_LIMIT = 2**53
REFUSALS = (BadImage, BadRunId, ValueError, BackendUnavailable, FileExistsError,
            FileNotFoundError, RunBusy, guard.Refused)


def public_text(text: str) -> str:
    """`text` without this server's paths: a file under the upload cache, the runs folder or
    the app keeps only its name (a toast is no place for /tmp/gradio/<hash>/…)."""
    roots = {str(SETTINGS.runs_root), str(REPO), tempfile.gettempdir(), str(SETTINGS.uploads)}
    for root in sorted(roots, key=len, reverse=True):
        text = re.sub(re.escape(root) + r"(?:/[^/\s'\"]+)*/([^/\s'\"]+)", r"\1", text)
    return text


class Refusal(gr.Error):
    """A `gr.Error` that is this app's answer to a visitor (bad input, a cap reached), never a
    fault: gradio prints no traceback for it (gradio prints one, ~40 lines, for every other
    `gr.Error`, so one visitor's refusals would flood the log). Every refusal is one."""

    def __init__(self, message: str) -> None:
        super().__init__(message, print_exception=False)


def refusal(error: Exception) -> Refusal:
    """The error a visitor sees: no server path, no markup, and no traceback in the log."""
    return Refusal(html.escape(without_paths(public_text(str(error))), quote=False))


def visitor_metric_names(names: str | Sequence[str] | None,
                         blank: Sequence[str] = CPU_DEFAULTS) -> list[str]:
    """A visitor's metric list (the page, the API, MCP), read as `parse_metric_names` reads
    it and held to the metrics this server offers visitors (`catalog.visitor_metrics`, widened
    by BANANA_VISITOR_METRICS), or a `gr.Error` listing them: before anything is built."""
    try:
        chosen = parse_metric_names(names, blank)
        check_visitor_metrics(chosen, visitor_metrics(SETTINGS.visitor_metrics))
    except ValueError as error:
        raise refusal(error) from None
    return chosen


def mine(run: Run, visitor: Visitor) -> Run:
    """`run` if `visitor` made it, else a refusal: only its maker resumes (rewrites) a run;
    anyone else opens it by its link, read-only."""
    if not guard.owns(visitor, run):
        raise Refusal("Only the visitor who started this run can resume it (a link opens a "
                      "run read-only); press Run to make a chain of your own.")
    return run


def tab_of(request: gr.Request) -> str:
    """Which browser tab is asking (gradio's session), for the page's one chain per tab. API
    and MCP chains have no such slot (`stop_flags.claim_token`): gradio's MCP server sends every
    MCP call through one client, so a session would be every MCP client's at once."""
    return request.session_hash or "anonymous"


def received(path: Any) -> str:
    """A file argument as a path gradio received, or a clear `gr.Error`
    (`uploads.received_file`)."""
    try:
        return uploads.received_file(path)
    except guard.Refused as error:
        raise refusal(error) from None


def claim(tab: str) -> threading.Event:
    """The stop flag of `tab`'s new chain (`stop_flags.STOP_FLAGS`); a second chain while one is
    in flight is refused."""
    flag = stop_flags.STOP_FLAGS.claim(stop_flags.tab_key(tab), alone=True)
    if flag is None:
        raise Refusal(ALREADY_RUNNING)
    return flag


def release(tab: str, flag: threading.Event) -> None:
    stop_flags.STOP_FLAGS.release(stop_flags.tab_key(tab), flag)


def running_for(tab: str) -> threading.Event | None:
    """The stop flag of `tab`'s chain in flight, if any."""
    flags = stop_flags.STOP_FLAGS.of(stop_flags.tab_key(tab))
    return flags[0] if flags else None


def confined(run_id: Any) -> Run:
    """A visitor's run id as a run inside the runs folder, or a clear `gr.Error`. It only
    looks: a run that is not on disk stays missing (`brought_back` fetches one)."""
    try:
        return open_run(SETTINGS.runs_root, run_id)
    except BadRunId as error:
        raise refusal(error) from None


def brought_back(run_id: Any) -> Run:
    """`confined`, once the run is brought back where a restart wiped it (a bundled recording
    copied in, or the run kept on the hub fetched: `persist.restore`): for a run opened or
    resumed by its id or link, never for a lookup while it is on screen."""
    try:
        if restore(SETTINGS.runs_root, run_id, RECORDED, max_bytes=SETTINGS.runs_bytes):
            guard.restored(run_path(SETTINGS.runs_root, run_id))  # within retention
    except BadRunId as error:
        raise refusal(error) from None
    return confined(run_id)


def whole_number(value: Any, what: str) -> int:
    """A whole number from a form field (which sends 2.5 as readily as 2), or a `gr.Error`;
    never `true` (Python's bool is an int)."""
    if isinstance(value, bool):
        raise Refusal(f"{what} must be a whole number, not true or false.")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise Refusal(f"{what} must be a whole number.") from None
    if not number.is_integer():
        raise Refusal(f"{what} must be a whole number, not {number:g}.")
    if abs(number) > WHOLE_NUMBER_LIMIT:  # 1e308 is whole, and overflows a cost
        raise Refusal(f"{what} must be a whole number, not one as large as {number:g}.")
    return int(number)


def generator_of(generator: str, profile: str, side: str = "") -> tuple[str, dict[str, Any]]:
    """A generator that makes chains, by the name a visitor gave, and its profile as its
    options (blank: the default), or a `Refusal` (naming the side, for a comparison's).

    Returns:
        (the generator's name, its options: {"profile": …} or {}).
    """
    where = f"Side {side}: " if side else ""
    entry = BACKENDS.get(generator)
    if entry is None:
        raise Refusal(f"{where}Unknown generator; valid: {', '.join(BACKENDS)}.")
    if entry.info.plays_recording:
        raise Refusal(f"{where}{generator} plays a recorded chain; to score one, use "
                      "score_chain.")
    if profile and not entry.info.takes("profile"):
        raise Refusal(f"{where}The {entry.info.name} generator takes no profile.")
    return entry.info.name, ({"profile": profile} if profile else {})
