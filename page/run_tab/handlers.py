"""The page's event handlers: what each button, toggle and page load does (app.py wires them).

Each answers with the page's one output contract (`page.run_tab.outputs.PageOutputs`); who may do what
is `page.door.access`'s, the Run form's fields `page.run_tab.form`'s, and every run-state question (is it
live, complete, zipped?) the engine's (`banana_space.chain.runs`).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import gradio as gr
from PIL import Image

from banana_space.scores.catalog import to_tensor
from banana_space.common import png_bytes, write_atomic
from banana_space.verdict.conditions import start_note
from banana_space.sources.images import BadImage, load_image
from banana_space.markup import escape_markdown
from banana_space.verdict.plots import delta_figure, raw_figure
from banana_space.chain.quota import page_note, steps_for_the_smallest_day
from banana_space.chain.real_chains import PLAN, dataset_starts, examples, plan_from_env, preparing
from banana_space.chain.remake import remake_all, remake_frame
from banana_space.store.run import Run
from banana_space.store.runids import copy_in
from banana_space.chain.runs import open_saved
from banana_space.view import RunView
from page import runner
from page.door import guard
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
from page.door.disk import PREVIEWS, make_room
from page.run_tab.form import RunForm, chosen_options, form_event, spec_of
from page.door.identity import visitor_of
from page.run_tab.outputs import STOPPING, PageOutputs, compared, magnify, plot_data, share_link, shown
from page.settings import RECORDED, REPO, SETTINGS

# Buttons for real chains, shown once they are prepared (banana_space/chain/real_chains.py).
REAL_SLOTS = max(PLAN.count, len(plan_from_env().chains))
REAL_CHAINS_POLL_S = 5  # how often a page asks again while the real chains are prepared
PREVIEW_SIDE = 512  # the page shows it 120 px tall
PREVIEW_LIFETIME_S = 3600
FRAME_QUERY = re.compile(r"[0-9]{1,4}")  # `?frame=`: a step, 0-100 (a few digits to spare)


def stream(view: RunView, chain: runner.Chain) -> Iterator[PageOutputs]:
    """Fold a chain's events into the view and send each screen as it changes. When the
    visitor disconnects, gradio closes this generator: the run is recorded as interrupted
    (`banana_space.chain.runs`) and its chain stops. The zip is made after the end is shown: one
    more screen offers it, with the magnifier (which a stopped run's first screen leaves out,
    to say "Stopped" at once)."""
    for event in chain.events:
        yield shown(view.apply(event), chain.stop.is_set(), magnified=False)
    yield shown(view.screen(), chain.stop.is_set())


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
    with runner.start(request, spec) as chain:
        yield from stream(RunView(raw=form.raw), chain)


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
        flags = guard.token_flags(token)
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
        with runner.resume(request, run_id, key=api_key) as chain:
            view = RunView.from_saved(chain.saved)
            # Running again: no old ending, no old zip offered; its metrics load first.
            view.raw, view.ended, view.started = raw, None, False
            yield from stream(view, chain)
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
    from banana_space.sources.hub import chains_cache, replay_bytes

    try:
        needed = replay_bytes(source)
        if needed > SETTINGS.hub_bytes:
            raise guard.Refused(f"This replay fetches {needed / 1e6:,.0f} MB; this server keeps "
                                f"at most {SETTINGS.hub_bytes / 1e6:,.0f} MB of hub files.")
        guard.count_hub_bytes(visitor_of(request), needed)
    except REFUSALS as error:
        raise refusal(error) from None
    make_room(chains_cache(), needed, SETTINGS.hub_bytes)


def hub_credit(source: str) -> str:
    """The dataset's licence line and credit, shown while one of its chains is open."""
    from banana_space.sources.hub import credit, parse_hub

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


def reopen(run_id: str | None, raw: bool) -> PageOutputs:
    """Open a past run by its id, as the page showed it.

    Args:
        run_id: the run's id (the `run=` part of its link).
        raw: one chart of raw scores per metric instead of the shared delta axis.
    Returns:
        The same outputs as /run, once.
    """
    if not run_id:
        raise Refusal("Pick a run.")
    return show_saved(brought_back(run_id), raw)  # fetched again if a restart wiped it


def open_recorded(name: str, raw: bool) -> PageOutputs:
    """Copy a bundled recorded run into the runs folder (once), then show it; the full frames
    it dropped are re-made in the background (and at once for a frame being compared)."""
    if name not in {p.name for p in RECORDED.iterdir() if p.is_dir()}:
        raise Refusal("Pick one of the recorded chains.")  # never a path of the visitor's
    run = copy_in(RECORDED / name, SETTINGS.runs_root)
    threading.Thread(target=remake_all, args=(run.path,), name="remake", daemon=True).start()
    return show_saved(run, raw)


def real_chain_buttons() -> list[Any]:
    """The examples' heading and the real-chain buttons (`REAL_SLOTS` of them), for the real
    chains prepared so far (`banana_space.chain.real_chains`): they come first, with their licence;
    the bundled recordings after them are our simulations, and say so."""
    real = [e for e in examples(SETTINGS.runs_root, RECORDED) if e.real]
    credits = sorted({e.credit for e in real if e.credit})
    heading = ("**Real chains first** — open instantly: Banana100's own chains (real), each "
               "by its path in the dataset, "
               + "; ".join(escape_markdown(c) for c in credits)
               + ". **Below them, our simulations** (a model of the damage, not a real "
               "editor's output)." if real else
               "**Recorded chains** — open instantly, no key or GPU. These are **simulated** "
               "(a model of the damage, not a real editor's output).")
    return [heading, *(gr.update(value=real[i].label, visible=True) if i < len(real)
                       else gr.update(visible=False) for i in range(REAL_SLOTS))]


def example_gallery(bundled: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The example pictures, (thumbnail, caption): Banana100's own starts first where the hub
    was reachable (`real_chains.dataset_starts`, each captioned with its licence), then ours
    (`bundled`, captioned by name)."""
    return [(str(start.thumb), start.caption) for start in dataset_starts(SETTINGS.runs_root)
            ] + bundled


def picked_example(caption: str | None, index: int, bundled: dict[str, str]) -> str:
    """The picture behind a clicked example: a dataset start's full frame, or one of ours
    (`bundled`: caption -> path), by its caption (the gallery's order changes when the starts
    arrive, so an index may name another picture), by its place where the click had none;
    never a path a visitor names."""
    offered = {start.caption: str(start.image) for start in dataset_starts(SETTINGS.runs_root)
               } | bundled
    if caption is None and 0 <= index < len(offered):
        caption = list(offered)[index]
    if caption not in offered:
        raise Refusal("Pick one of the example pictures.")
    return offered[caption]


def real_chains_tick() -> list[Any]:
    """`real_chain_buttons` again, for a page opened before the real chains were ready (the
    visitor who wakes a sleeping Space), and its timer: it stops once the preparation has
    ended, with chains or without (offline)."""
    more_may_come = preparing()  # asked first: the buttons read after it are then final
    return [*real_chain_buttons(), gr.Timer(active=more_may_come)]


def open_real_chain(index: int, raw: bool) -> PageOutputs:
    """Copy the `index`-th prepared real chain into the runs folder (once), then show it."""
    real = [e for e in examples(SETTINGS.runs_root, RECORDED) if e.real]
    if index >= len(real):
        raise Refusal("That real chain is not ready (the hub is not reachable from here).")
    return show_saved(copy_in(real[index].path, SETTINGS.runs_root), raw)


def redraw(run_id: str | None, raw: bool) -> Any:
    return show_saved(confined(run_id), raw) if run_id else PageOutputs.unchanged()


def past_runs(request: gr.Request) -> Any:
    """The picker of past runs: the visitor's own (any other opens by its link)."""
    runs = guard.own_runs(visitor_of(request))
    return gr.update(choices=runs, value=runs[0] if runs else None)


def on_load(request: gr.Request) -> PageOutputs:
    """`?run=<id>&frame=<i>` reopens that run, comparing frame i: the link a user shares."""
    run_id = request.query_params.get("run")
    if not run_id:
        return PageOutputs.unchanged()
    opened = reopen(run_id, False)
    frame = request.query_params.get("frame", "")
    if not FRAME_QUERY.fullmatch(frame):  # digits only: `²` is a digit to str.isdigit
        return opened
    step = min(int(frame), opened.compare_step["value"])
    before_after, magnifier, share = compare(opened.run_id, step)
    return opened._replace(before_after=before_after, magnifier=magnifier, share=share,
                           plot=marked_plot(opened.run_id, step, False),
                           compare_step={**opened.compare_step, "value": step})


def preview(upload: str | None) -> tuple[Any, str]:
    """The upload's preview (hidden while there is none) and its size and notes."""
    nothing = gr.update(value=None, visible=False)
    if not upload or Path(upload).suffix.lower() == ".zip":
        return nothing, ""
    try:
        loaded = load_image(guard.received_file(upload))
    except (BadImage, guard.Refused) as error:
        return nothing, f"⚠️ {escape_markdown(public_text(str(error)))}"
    w, h = loaded.image.size
    small = loaded.image.copy()
    small.thumbnail((PREVIEW_SIDE, PREVIEW_SIDE))
    return (gr.update(value=write_preview(small), visible=True),
            f"{w} × {h}" + "".join(f" · {escape_markdown(n)}" for n in loaded.notes))


SMOOTHNESS_TABLE = REPO / "docs" / "start_smoothness.md"  # scripts/start_smoothness.py's table
gr.set_static_paths([SMOOTHNESS_TABLE])  # linked from the note beside the input
CONDITION_SIDE = 2048  # px: the paper's starts are 2K; a larger upload is measured at that


def start_condition(upload: str | None) -> str:
    """Beside the input: its BRISQUE against the paper's example start, and why that matters
    (`conditions.start_note`); nothing for a zip, or where the preview already says why not."""
    from banana_space.scores.pool import POOL, MetricUnavailable

    if not upload or Path(upload).suffix.lower() == ".zip":
        return ""
    try:
        image = load_image(guard.received_file(upload)).image
    except (BadImage, guard.Refused):
        return ""
    image.thumbnail((CONDITION_SIDE, CONDITION_SIDE), Image.Resampling.LANCZOS)
    try:
        brisque = POOL.score("brisque", to_tensor(image))
    except MetricUnavailable:
        return ""
    return start_note(brisque, f"/gradio_api/file={quote(str(SMOOTHNESS_TABLE))}")


def write_preview(image: Image.Image) -> str:
    """The preview as a file of its own under the served runs folder, written atomically.
    Returned as a PIL image, gradio would write it to a path named by its content, in place:
    eight visitors previewing one photo rewrote the file while it was being served to the
    others, who got a truncated image. Previews older than an hour are deleted, and the oldest
    beyond their share of the disk (`SETTINGS.previews_bytes`)."""
    PREVIEWS.mkdir(parents=True, exist_ok=True)
    for old in PREVIEWS.glob("*.png"):
        with contextlib.suppress(FileNotFoundError):
            if time.time() - old.stat().st_mtime > PREVIEW_LIFETIME_S:
                old.unlink()
    path = PREVIEWS / f"{secrets.token_hex(8)}.png"
    data = png_bytes(image)
    make_room(PREVIEWS, len(data), SETTINGS.previews_bytes)
    write_atomic(path, data)
    return str(path)


def compare(run_id: str | None, step: float) -> tuple[Any, Any, Any]:
    """Input vs frame `step`: the slider, the magnifier and the share link follow the choice."""
    if not run_id:
        return None, gr.skip(), gr.skip()
    run, step = confined(run_id), whole_number(step, "The step")
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
    history = confined(run_id).load().history
    step = whole_number(step, "The step")
    figure = raw_figure(history, step) if raw else delta_figure(history, marked=step)
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
