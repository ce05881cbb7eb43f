"""The Run tab's event handlers: what Run, Stop, Resume, a hub replay, opening a run and the
compared frame do (`tab.py` wires them; the first screen's pictures are `pictures.py`'s).

Each answers with the page's one output contract (`outputs.PageOutputs`); who may do what is
`page.door.access`'s, the Run form's fields `form.py`'s, and every run-state question (is it
live, complete, zipped?) the engine's (`banana_space.chain.runs`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import gradio as gr
from PIL import Image

from banana_space.chain.offered import examples
from banana_space.chain.quota import page_note, steps_for_the_smallest_day
from banana_space.chain.remake import remake_all, remake_frame
from banana_space.chain.runs import open_saved
from banana_space.markup import escape_markdown
from banana_space.sources.images import BadImage
from banana_space.store.run import Run
from banana_space.verdict.plots import delta_figure, raw_figure
from banana_space.view import RunView, people_of
from banana_space.votes.plot import people_traces
from page import runner
from page.door import guard, stop_flags, uploads
from page.door.access import (
    REFUSALS,
    Refusal,
    brought_back,
    confined,
    public_text,
    received,
    refusal,
    running_for,
    tab_of,
    whole_number,
)
from page.door.disk import make_room
from page.door.identity import visitor_of
from page.run_tab.form import RunForm, chosen_options, form_event, spec_of
from page.run_tab.outputs import (
    STOPPING,
    PageOutputs,
    compared,
    magnify,
    plot_data,
    share_link,
    shown,
)
from page.run_tab.past import newest_first
from page.run_tab.recordings import PREPARED, opened_copy, recording_names
from page.settings import RECORDED, SETTINGS

VIEW_TAKEN = ("Your run is streaming into this view, so nothing else opens here until it ends: "
              "press Stop (its frames are kept), or open the page in another tab to look at "
              "something beside it.")
FRAME_QUERY = re.compile(r"[0-9]{1,4}")  # `?frame=`: a step, 0-100 (a few digits to spare)


def stream(view: RunView, flight: runner.Flight) -> Iterator[PageOutputs]:
    """A chain on the Run tab, screen by screen (`runner.stream`); the screen after the end
    offers the zip and the magnifier (which a stopped run's first screen leaves out, to say
    "Stopped" at once)."""
    return runner.stream(flight, view, lambda screen, stopping, last: shown(
        screen, stopping, magnified=last))


def _run(form: RunForm, request: gr.Request) -> Iterator[PageOutputs]:
    """Run a replication chain and stream the page's view of it, frame by frame: a new set of
    outputs after each frame and each score (the fields are `page.run_tab.form.RunForm`'s)."""
    if not form.upload:
        raise Refusal("Upload an image first (or click an example).")
    yield from _chain(form, received(form.upload), request)


run = form_event(_run)


def _chain(form: RunForm, source: str, request: gr.Request) -> Iterator[PageOutputs]:
    """The form's run from a checked `source`: an upload gradio received, or an hf:// path."""
    try:
        spec = spec_of(form, source)
    except REFUSALS as error:
        raise refusal(error) from None
    with runner.start(request, spec) as flight:
        yield from stream(RunView(raw=form.raw), flight)


def _options_so_far(form: RunForm) -> dict[str, Any]:
    """The backend's options as the form stands; none while a number is half-typed (Run says
    what is wrong with it)."""
    try:
        return chosen_options(form, form.backend)
    except gr.Error:
        return {}


def _cost_note(form: RunForm, request: gr.Request) -> Any:
    """The line under Run on what the run books on ZeroGPU, shown only when there is one."""
    text = page_note(form.upload, form.steps, form.backend, list(form.judges or []),
                     form.judge_at, form.prompt, _options_so_far(form))
    return gr.update(value=text, visible=bool(text))


cost_note = form_event(_cost_note)


def _steps_for_the_gpu(form: RunForm, request: gr.Request) -> Any:
    """On ZeroGPU, picking a GPU generator cuts the steps to what fits the smallest day (2
    minutes without signing in); a visitor may raise them again, and the line under Run says
    what that books."""
    fits = steps_for_the_smallest_day(form.upload, form.steps, form.backend,
                                      list(form.judges or []), form.judge_at, form.prompt,
                                      _options_so_far(form))
    return gr.update() if fits is None else gr.update(value=fits)


steps_for_the_gpu = form_event(_steps_for_the_gpu)


def stop_run(token: str = "", request: gr.Request = None) -> Any:
    """Stop a chain; the frames made so far are kept. A chain started through the API or MCP
    stops by the token its caller gave it; without one, this stops the chain of the browser tab
    (or gradio_client session) that asks.

    Args:
        token: the secret given to run_chain, score_chain or resume_chain (blank: your page's).
    Returns:
        A line saying the chain is stopping.
    """
    if token:
        flags = stop_flags.token_flags(token)
    else:
        mine = running_for(tab_of(request))
        flags = [mine] if mine is not None else []
    if not flags:
        gr.Info("Nothing is running.")
        return gr.skip()  # the status of a finished run stays on screen
    for flag in flags:
        flag.set()
    return STOPPING


def resume(run_id: str | None, api_key: str, raw: bool, request: gr.Request
           ) -> Iterator[PageOutputs]:
    """Continue a stopped or interrupted run from its last complete frame, with its settings.

    Args:
        run_id: the run's id (the `run=` part of its link).
        api_key: a Gemini key, where the run's generator or judge needs one; never stored.
        raw: one chart of raw scores per metric instead of the shared delta axis.
    Returns:
        The same streamed outputs as /run.
    """
    if not run_id:
        raise Refusal("Open or start a run first.")
    try:
        with runner.resume(request, run_id, key=api_key) as flight:
            view = RunView.from_saved(flight.saved["A"])
            # Running again: no old ending, no old zip offered; its metrics load first.
            view.raw, view.ended, view.started = raw, None, False
            yield from stream(view, flight)
    except runner.Complete as complete:
        gr.Info(str(complete))
        yield PageOutputs.unchanged()  # the run stays on screen as it is


def replay_hub(source: str, steps: float, prompt: str, metrics: list[str], judges: list[str],
               seed: float, raw: bool, request: gr.Request) -> Iterator[PageOutputs]:
    """Replay a chain on the Hugging Face hub. Only an hf://datasets/… path is taken here,
    never a path on this server."""
    source = (source or "").strip()
    if not source.startswith("hf://datasets/"):
        raise Refusal("Write a chain on the hub as hf://datasets/OWNER/NAME/PATH.")
    room_for_replay(source, request)
    form = RunForm(steps=steps, prompt=prompt, backend="replay", metrics=metrics,
                   judges=judges, seed=seed, raw=raw)
    yield from _chain(form, source, request)


def room_for_replay(source: str, request: gr.Request) -> None:
    """Before a hub replay downloads anything: what it fetches (from the hub's listing, read
    anonymously) is counted against the visitor's share, and the hub files kept on disk make
    room for it within their share (`SETTINGS.hub_bytes`, oldest first), or a `gr.Error`."""
    from banana_space.sources.hub import replay_bytes
    from banana_space.sources.hub_client import chains_cache

    try:
        needed = replay_bytes(source)
        if needed > SETTINGS.hub_bytes:
            raise guard.Refused(f"This replay fetches {needed / 1e6:,.0f} MB; this server keeps "
                                f"at most {SETTINGS.hub_bytes / 1e6:,.0f} MB of hub files.")
        uploads.count_hub_bytes(visitor_of(request), needed)
    except REFUSALS as error:
        raise refusal(error) from None
    make_room(chains_cache(), needed, SETTINGS.hub_bytes)


def hub_credit(source: str) -> str:
    """The dataset's licence line and credit, shown while one of its chains is open."""
    from banana_space.sources.hub import credit
    from banana_space.sources.hub_client import parse_hub

    try:
        return credit(parse_hub(source or "").repo_id)
    except BadImage as error:
        return f"⚠️ {escape_markdown(public_text(str(error)))}"


def show_saved(run: Run, raw: bool) -> PageOutputs:
    """A saved run as the page shows it; one being made right now is shown as running
    (`banana_space.chain.runs.open_saved`)."""
    try:
        saved, live = open_saved(run.path)
    except FileNotFoundError:
        raise Refusal("That run was deleted (old runs are removed to make room).") from None
    except REFUSALS as error:  # a damaged run: one line, never a traceback
        raise refusal(error) from None
    view = RunView.from_saved(saved)
    if live:
        view.ended = None
        view.notices.append(("info", "this run is being made right now: open it again to see "
                                     "its newest frames"))
    view.raw = raw
    return shown(view.screen())


def view_taken(request: gr.Request | None) -> bool:
    """Whether this browser tab's own chain streams into its view right now; if so the visitor
    is told why nothing else opens there (one view, one stream: two would mix, a recording's
    step 30 under the run's "step 1 of 10")."""
    if request is None or running_for(tab_of(request)) is None:
        return False
    gr.Info(VIEW_TAKEN)
    return True


def reopen(run_id: str | None, raw: bool, request: gr.Request = None) -> PageOutputs:
    """Open a past run by its id, as the page showed it.

    Args:
        run_id: the run's id (the `run=` part of its link).
        raw: one chart of raw scores per metric instead of the shared delta axis.
    Returns:
        The same outputs as /run, once.
    """
    if not run_id:
        raise Refusal("Pick a run.")
    if view_taken(request):
        return PageOutputs.unchanged()
    return show_saved(brought_back(run_id), raw)  # fetched again if a restart wiped it


def open_recorded(name: str, raw: bool, request: gr.Request = None) -> PageOutputs:
    """Copy a bundled recorded run into the runs folder (once, with its downloads prepared at
    start-up: `recordings.py`), then show it; the full frames it dropped are re-made in the
    background (and at once for a frame being compared)."""
    if name not in recording_names():
        raise Refusal("Pick one of the recorded chains.")  # never a path of the visitor's
    if view_taken(request):
        return PageOutputs.unchanged()
    run = opened_copy(RECORDED / name, PREPARED / name)  # its downloads made at start-up
    threading.Thread(target=remake_all, args=(run.path,), name="remake", daemon=True).start()
    return show_saved(run, raw)


def open_real_chain(index: int, raw: bool, request: gr.Request = None) -> PageOutputs:
    """Copy the `index`-th prepared real chain into the runs folder (once, with its downloads
    made where it was prepared), then show it."""
    real = [e for e in examples(SETTINGS.runs_root, RECORDED) if e.real]
    if index >= len(real):
        raise Refusal("That real chain is not ready (the hub is not reachable from here).")
    if view_taken(request):
        return PageOutputs.unchanged()
    return show_saved(opened_copy(real[index].path, real[index].path), raw)


def redraw(run_id: str | None, raw: bool, request: gr.Request = None) -> Any:
    """The run on screen with raw scores or Δ; a streaming run keeps the curves it started
    with until it ends (its stream owns the view)."""
    if not run_id or view_taken(request):
        return PageOutputs.unchanged()
    return show_saved(confined(run_id), raw)


def past_runs(request: gr.Request) -> tuple[Any, list[tuple[str, str]], list[str]]:
    """Past runs, the visitor's own (any other opens by its link), newest first
    (`past.newest_first`): the picker, each named by what it is and its id; the thumbnails
    with the same words; and the ids in the thumbnails' order, for a click on one."""
    runs = newest_first([Run(SETTINGS.runs_root / run_id)
                         for run_id in guard.own_runs(visitor_of(request))])
    pictured = [run for run in runs if run.thumb]
    return (gr.update(choices=[(f"{run.caption} · {run.id}", run.id) for run in runs],
                      value=runs[0].id if runs else None),
            [(run.thumb, run.caption) for run in pictured], [run.id for run in pictured])


def open_past(listed: list[str], raw: bool, event: gr.SelectData,
              request: gr.Request) -> PageOutputs:
    """A click on a past run's thumbnail: that run, by its place in the list last shown."""
    if not isinstance(event.index, int) or not 0 <= event.index < len(listed):
        raise Refusal("Pick a run.")
    return reopen(listed[event.index], raw, request)


def on_load(request: gr.Request) -> PageOutputs:
    """`?run=<id>&frame=<i>` reopens that run, comparing frame i: the link a user shares."""
    run_id = request.query_params.get("run")
    if not run_id:
        return PageOutputs.unchanged()
    opened = reopen(run_id, False, request)
    frame = request.query_params.get("frame", "")
    if not FRAME_QUERY.fullmatch(frame):  # digits only: `²` is a digit to str.isdigit
        return opened
    step = min(int(frame), opened.compare_step["value"])
    before_after, magnifier, share = compare(opened.run_id, step)
    return opened._replace(before_after=before_after, magnifier=magnifier, share=share,
                           plot=marked_plot(opened.run_id, step, False),
                           compare_step={**opened.compare_step, "value": step})


def compare(run_id: str | None, step: float) -> tuple[Any, Any, Any]:
    """Input vs frame `step`: the slider, the magnifier and the share link follow the choice."""
    if not run_id:
        return None, gr.skip(), gr.skip()
    run, step = confined(run_id), whole_number(step, "The step")
    if not run.has_frame(step):  # a step the run lacks (one of a run shown before): nothing
        return gr.skip(), gr.skip(), gr.skip()
    remake_frame(run.path, step)  # a recording's dropped frame (else its thumbnail, said so)
    chosen = run.shown_frame(step)
    if not chosen.is_file():
        return gr.skip(), gr.skip(), gr.skip()
    return (compared((str(run.shown_frame(0)), str(chosen)), step),
            magnify(run, step), share_link(run, step))


def marked_plot(run_id: str | None, step: float, raw: bool) -> Any:
    """The curves with the frame the visitor compares marked (the stream marks the newest)."""
    if not run_id:
        return gr.skip()
    run = confined(run_id)
    history = run.load().history
    step = whole_number(step, "The step")
    figure = raw_figure(history, step) if raw else delta_figure(
        history, marked=step, also=people_traces(*people_of(run.path, history.last_step)))
    return plot_data(figure)


def zoom_at(run_id: str | None, step: float, event: gr.SelectData) -> Any:
    """A click on the newest frame moves the magnifier there (in the input's pixels)."""
    if not run_id or not event.index:
        return gr.skip()
    run = confined(run_id)
    newest = run.load().last_step
    with Image.open(run.shown_frame(0)) as first, \
            Image.open(run.shown_frame(newest)) as clicked:
        scale = (first.width / clicked.width, first.height / clicked.height)
    x, y = event.index[0] * scale[0], event.index[1] * scale[1]
    return magnify(run, max(whole_number(step, "The step"), 1), (x, y))
