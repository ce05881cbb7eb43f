"""The page's event handlers: what each button, toggle and page load does (app.py wires them).

Everything a visitor sends is untrusted: a run is named only by a run id, resolved inside the
runs folder (`banana_space.runids`); a file argument is a file gradio received (`guard.py`);
each browser tab has at most one chain in flight, with a stop flag that exists from the moment
the request arrives; an API or MCP chain is stopped by the token its caller gave it; every
refusal is a `gr.Error` whose text is escaped (toasts render HTML) and holds no server path.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
from gradio_client.utils import encode_file_path
from PIL import Image

import guard
from banana_space.backends import REGISTRY as BACKENDS
from banana_space.backends import BackendUnavailable
from banana_space.events import Started
from banana_space.images import BadImage, load_image
from banana_space.magnifier import ZOOM, box_around, largest_difference_box, side_by_side
from banana_space.markup import plain, without_paths
from banana_space.metrics import parse_metric_names
from banana_space.persist import restore
from banana_space.plots import delta_figure, raw_figure
from banana_space.quota import default_judge_at
from banana_space.real_chains import LABEL, PLAN, examples, plan_from_env
from banana_space.remake import full_frame, remake_all
from banana_space.rundir import (
    THUMB_SIDE,
    RunBusy,
    load_run,
    lock_writer,
    write_atomic,
    write_zip,
    zip_path,
)
from banana_space.runids import BadRunId, copy_in, run_path
from banana_space.runs import RunSpec, resume_run, start_run
from banana_space.view import RunView, Screen, shown_frame
from disk import PREVIEWS, PREVIEWS_BYTES, RUNS_ROOT, make_room

HERE = Path(__file__).parent
RECORDED = HERE / "assets" / "recorded"  # finished runs that open instantly (no key, no GPU)
# Buttons for real chains, shown once they are prepared (banana_space/real_chains.py).
REAL_SLOTS = max(PLAN.count, len(plan_from_env().chains))
PREVIEW_SIDE = 512  # the page shows it 120 px tall
PREVIEW_LIFETIME_S = 3600
OUTPUT_COUNT = 13  # len(app.OUTPUTS): what `outputs_of` returns
# Where some outputs stand in app.OUTPUTS (on_load adjusts them for a shared frame).
PLOT, RUN_ID, BEFORE_AFTER, COMPARE_STEP, SUMMARY, SHARE, MAGNIFIER = 3, 7, 8, 9, 10, 11, 12
STOPPING = "⏹ **Stopping…** (the frames made so far are kept)"
ALREADY_RUNNING = ("A chain is already running for you: press Stop (or wait for it to end) "
                   "before starting another.")

# Errors the engine raises for bad input or a run that cannot go ahead: shown, never a crash.
REFUSALS = (BadImage, BadRunId, ValueError, BackendUnavailable, FileExistsError,
            FileNotFoundError, RunBusy, guard.Refused)
FRAME_QUERY = re.compile(r"[0-9]{1,4}")  # `?frame=`: a step, 0-100 (a few digits to spare)

_ACTIVE: dict[str, threading.Event] = {}  # browser tab -> the stop flag of its chain in flight
_ACTIVE_LOCK = threading.Lock()


def public_text(text: str) -> str:
    """`text` without this server's paths: a file under the upload cache, the runs folder or
    the app keeps only its name (a toast is no place for /tmp/gradio/<hash>/…)."""
    roots = {str(RUNS_ROOT), str(HERE.resolve()), tempfile.gettempdir(),
             os.environ.get("GRADIO_TEMP_DIR", "")} - {""}
    for root in sorted(roots, key=len, reverse=True):
        text = re.sub(re.escape(root) + r"(?:/[^/\s'\"]+)*/([^/\s'\"]+)", r"\1", text)
    return text


def refusal(error: Exception) -> gr.Error:
    """The error a visitor sees: no server path, no markup."""
    return gr.Error(html.escape(without_paths(public_text(str(error))), quote=False))


def visitor(request: gr.Request) -> str:
    """Which browser tab is asking (gradio's session), for the page's one chain per tab. API
    and MCP chains have no such slot (`claim_token`): gradio's MCP server sends every MCP call
    through one client, so a session would be every MCP client's at once."""
    return request.session_hash or "anonymous"


def received(path: Any) -> str:
    """A file argument as a path gradio received, or a clear `gr.Error` (`guard.received_file`)."""
    try:
        return guard.received_file(path)
    except guard.Refused as error:
        raise refusal(error) from None


def claim(who: str) -> threading.Event:
    """The stop flag of `who`'s new chain; a second chain while one is in flight is refused."""
    with _ACTIVE_LOCK:
        if who in _ACTIVE:
            raise gr.Error(ALREADY_RUNNING)
        flag = _ACTIVE[who] = threading.Event()
    return flag


def release(who: str, flag: threading.Event) -> None:
    with _ACTIVE_LOCK:
        if _ACTIVE.get(who) is flag:
            del _ACTIVE[who]


def confined(run_id: Any) -> Path:
    """A visitor's run id as a directory inside the runs folder, or a clear `gr.Error`. A run
    that is not on disk (a restart wiped it) is brought back first, where it can be."""
    try:
        restore(RUNS_ROOT, run_id, RECORDED)
        return run_path(RUNS_ROOT, run_id)
    except BadRunId as error:
        raise refusal(error) from None


def whole(value: Any, what: str) -> int:
    """A whole number from a form field (which sends 2.5 as readily as 2), or a `gr.Error`."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise gr.Error(f"{what} must be a whole number.") from None
    if not number.is_integer():
        raise gr.Error(f"{what} must be a whole number, not {number:g}.")
    return int(number)


def outputs_of(screen: Screen, stopping: bool = False, magnified: bool = True
               ) -> tuple[Any, ...]:
    """A `Screen` in the order of app.OUTPUTS. The figure goes to gr.Plot as the JSON that
    its postprocess would make of a plotly Figure, without building one (bench/streaming.py)."""
    plot = gr.components.plot.PlotData(type="plotly", plot=json.dumps(screen.figure))
    download = gr.update(value=screen.zip_path, visible=screen.zip_path is not None)
    status = f"{STOPPING}\n\n{screen.status}" if stopping and screen.running else screen.status
    run_dir = Path(screen.run_dir) if screen.run_dir else None
    newest = len(screen.strip) - 1
    # The magnifier costs ~0.2 s a 1024 px frame, so a running chain leaves it to the compare
    # slider (whose .change follows each new frame) instead of redoing it on every update.
    zoomed = gr.skip() if screen.running or not magnified else magnify(run_dir, newest)
    return (status, screen.frame, strip_html(screen.strip), plot, screen.verdict,
            screen.model_text, download, run_dir.name if run_dir else None,
            compared((screen.first_frame, screen.frame) if screen.first_frame else None, newest),
            # Never below the slider's minimum (0), even before frame 0 exists.
            gr.update(maximum=max(1, newest, screen.offered), value=max(0, newest)),
            screen.summary,
            share_link(run_dir, newest), zoomed)


def strip_html(strip: list[Any]) -> str:
    """The frame strip: a thumbnail per step, each a link to its full frame, both served from
    the runs folder as they lie. Plain HTML, so an update costs a string where a gr.Gallery
    hashed every frame's file on every update (bench/streaming.py); it only ever grows at the
    end, so gradio streams just the new link."""
    shown = [(step, *pair) for step, pair in enumerate(strip) if pair]  # not a sampled gap
    # One tab stop for the whole strip (the newest frame's); arrow keys move inside (app.py).
    newest = shown[-1][0] if shown else -1
    return "".join(f'<a href="{file_url(frame)}" target="_blank" rel="noopener" title="step '
                   f'{step}: open the full frame" tabindex="{0 if step == newest else -1}">'
                   f'<img src="{file_url(thumb)}" alt="step {step}"><span>{step}</span></a>'
                   for step, thumb, frame in shown)


def file_url(path: str) -> str:
    """gradio's URL for a file on the server, relative to the page (works under any root)."""
    return "gradio_api/file=" + html.escape(encode_file_path(path))


def stream(view: RunView, events: Iterator[Any], stop: threading.Event,
           request: gr.Request) -> Iterator[Any]:
    """Fold engine events into the view and send each screen as it changes (`started` once the
    run is on disk). When the visitor disconnects, gradio closes this generator: the run is
    recorded as interrupted (`banana_space.runs`) and its chain stops. The zip is made after
    the end is shown: one more screen offers it, with the magnifier (which a stopped run's
    first screen leaves out, to say "Stopped" at once)."""
    for event in events:
        screen = view.apply(event)
        if isinstance(event, Started) and view.run_dir is not None:
            guard.started(Path(event.run_dir), request)
        yield outputs_of(screen, stop.is_set(), magnified=False)
    yield outputs_of(view.screen(), stop.is_set())


def run(upload: str | None, steps: float, prompt: str, backend: str, metrics: list[str],
        judges: list[str], seed: float, strength: float, api_key: str, temperature: float,
        resolution: str | None, guidance_scale: float | None, inference_steps: float | None,
        raw: bool, request: gr.Request, profile: str = "", judge_at: str = ""
        ) -> Iterator[Any]:
    """Run a replication chain and stream the page's view of it, frame by frame.

    Args:
        upload: the input image (for the `replay` generator: a zip, animated GIF/WebP).
        steps: how many times the output is fed back in (1-100).
        prompt: the instruction sent with every step (the paper's, by default).
        backend: the generator's name (see /list_options).
        metrics: pyiqa no-reference metric names.
        judges: VLM judge names.
        seed: 0 .. 2**32-1; same seed, same simulated frames.
        strength: the simulated generator's damage per step (0-3).
        api_key: a Gemini key for this run only; never stored.
        temperature: Gemini's temperature.
        resolution: Gemini's output resolution (1K, 2K, 4K) where the model takes one.
        guidance_scale: open editors' guidance scale (blank: the model's default).
        inference_steps: open editors' inference steps (blank: the model's default).
        raw: one chart of raw scores per metric instead of the shared delta axis.
        profile: the simulated generator's profile (see /list_options; blank: its default).
        judge_at: "checkpoints" or "every" frame for the judges (blank: checkpoints on ZeroGPU).
    Returns:
        Status, current frame, frame strip, plot, verdict table, model text, zip, run id,
        before/after pair, compare slider; a new tuple after each frame and each score.
    """
    if not upload:
        raise gr.Error("Upload an image first (or click an example).")
    yield from _run(received(upload), steps, prompt, backend, metrics, judges, seed, strength,
                    api_key, temperature, resolution, guidance_scale, inference_steps, raw,
                    request, profile, judge_at)


def _run(source: str, steps: float, prompt: str, backend: str, metrics: list[str],
         judges: list[str], seed: float, strength: float, api_key: str, temperature: float,
         resolution: str | None, guidance_scale: float | None, inference_steps: float | None,
         raw: bool, request: gr.Request, profile: str, judge_at: str = "") -> Iterator[Any]:
    """`run` with its source checked: an upload gradio received, or an hf:// path."""
    steps, seed = whole(steps, "Steps"), whole(seed, "The seed")
    inference_steps = None if inference_steps in (None, "") else whole(inference_steps,
                                                                       "Inference steps")
    who = visitor(request)
    stop = claim(who)  # first: Stop works while the metrics and the generator load
    with contextlib.ExitStack() as held:
        held.callback(release, who, stop)
        entry = BACKENDS.get(backend)
        try:
            if entry and entry.info.plays_recording:
                image, notes, options = None, [], {"source": source}
            else:
                loaded = load_image(source)
                image, notes, options = loaded.image, loaded.notes, {}
            advanced = {"strength": strength, "temperature": temperature, "api_key": api_key,
                        "resolution": resolution, "guidance_scale": guidance_scale,
                        "num_inference_steps": inference_steps, "profile": profile}
            options.update({k: v for k, v in advanced.items()
                            if entry and k in entry.info.options and v not in (None, "")})
            spec = RunSpec(image, steps, backend, options, prompt, seed,
                           parse_metric_names(metrics, blank=()),
                           judges or [], {"api_key": api_key} if api_key else {}, notes,
                           judge_at or default_judge_at())
            held.enter_context(guard.admitted(request, guard.chain_cost(image, steps)))
            events = start_run(spec, RUNS_ROOT, stop=stop)
        except REFUSALS as error:
            raise refusal(error) from None
        yield from stream(RunView(raw=raw), events, stop, request)


def stop_run(token: str = "", request: gr.Request = None) -> Any:
    """Stop a chain; the frames made so far are kept. A chain started through the API or MCP
    stops by the token its caller gave it; without one, this stops the chain of the browser tab
    (or gradio_client session) that asks.

    Args:
        token: the secret given to run_chain, score_chain or resume_chain (blank: your page's).
    Returns:
        A line saying the chain is stopping.
    """
    flags = guard.token_flags(token) if token else [
        flag for flag in [_ACTIVE.get(visitor(request))] if flag is not None]
    if not flags:
        gr.Info("Nothing is running.")
        return gr.skip()  # the status of a finished run stays on screen
    for flag in flags:
        flag.set()
    return STOPPING


def resume(run_id: str | None, api_key: str, raw: bool, request: gr.Request) -> Iterator[Any]:
    """Continue a stopped or interrupted run from its last complete frame, with its settings.

    Args:
        run_id: the run's id (the `run=` part of its link).
        api_key: a Gemini key, where the run's generator or judge needs one; never stored.
        raw: one chart of raw scores per metric instead of the shared delta axis.
    Returns:
        The same streamed tuple as /run.
    """
    if not run_id:
        raise gr.Error("Open or start a run first.")
    path = confined(run_id)
    made = completed_steps(path)
    if made is not None:
        gr.Info(f"This run is complete: all {made} steps are made. Resume goes on with a "
                "stopped or interrupted run; press Run for a longer chain.")
        yield [gr.skip()] * OUTPUT_COUNT  # the run stays on screen as it is
        return
    who = visitor(request)
    stop = claim(who)
    try:
        try:
            events = resume_run(path, stop=stop, api_key=api_key or None)
            view = RunView.from_saved(load_run(path))  # read under our writer lock
        except REFUSALS as error:
            raise refusal(error) from None
        # Running again: no old ending, no old zip offered; its metrics load first.
        view.raw, view.ended, view.started = raw, None, False
        yield from stream(view, events, stop, request)
    finally:
        release(who, stop)


def completed_steps(path: Path) -> int | None:
    """How many steps a run made, if it made every step it was asked for (nothing to resume);
    None for a run that can go on."""
    try:
        saved = load_run(path)
    except FileNotFoundError:
        return None  # resume_run says why
    done = saved.meta.get("status") == "completed" and saved.last_step >= saved.meta.get(
        "steps", 0)
    return saved.last_step if done else None


def replay_hub(source: str, steps: float, prompt: str, metrics: list[str], judges: list[str],
               seed: float, raw: bool, request: gr.Request) -> Iterator[Any]:
    """Replay a chain on the Hugging Face hub. Only an hf://datasets/… path is taken here,
    never a path on this server."""
    source = (source or "").strip()
    if not source.startswith("hf://datasets/"):
        raise gr.Error("Write a chain on the hub as hf://datasets/OWNER/NAME/PATH.")
    yield from _run(source, steps, prompt, "replay", metrics, judges, seed, 1.0, "", 1.0, None,
                    None, None, raw, request, "")


def hub_credit(source: str) -> str:
    """The dataset's licence line and credit, shown while one of its chains is open."""
    from banana_space.hub import credit, parse_hub

    try:
        return credit(parse_hub(source or "").repo_id)
    except BadImage as error:
        return f"⚠️ {plain(public_text(str(error)))}"


def show_saved(path: Path, raw: bool) -> tuple[Any, ...]:
    """A saved run as the page shows it. A run that is being written right now is shown as
    running (never as interrupted, never zipped half-made); a finished or killed run without a
    zip is zipped on first sight. Only then is the writer lock tried: many visitors opening
    one finished run at once never get in each other's way."""
    try:
        saved = load_run(path)
        live = False
        if saved.meta.get("status") == "running" or not zip_path(path).is_file():
            try:
                lock = lock_writer(path)
            except RunBusy:  # its writer (or someone zipping it) is at work
                live = saved.meta.get("status") == "running"
            else:
                try:
                    if not zip_path(path).is_file():
                        write_zip(path)
                    saved = load_run(path)
                finally:
                    os.close(lock)
    except FileNotFoundError:
        raise gr.Error("That run was deleted (old runs are removed to make room).") from None
    view = RunView.from_saved(saved)
    if live:
        view.ended = None
        view.notices.append(("info", "this run is being made right now: open it again to see "
                                     "its newest frames"))
    view.raw = raw
    return outputs_of(view.screen())


def reopen(run_id: str | None, raw: bool) -> tuple[Any, ...]:
    """Open a past run by its id, as the page showed it.

    Args:
        run_id: the run's id (the `run=` part of its link).
        raw: one chart of raw scores per metric instead of the shared delta axis.
    Returns:
        The same tuple as /run, once.
    """
    if not run_id:
        raise gr.Error("Pick a run.")
    return show_saved(confined(run_id), raw)


def open_recorded(name: str, raw: bool) -> tuple[Any, ...]:
    """Copy a bundled recorded run into the runs folder (once), then show it; the full frames
    it dropped are re-made in the background (and at once for a frame being compared)."""
    if name not in {p.name for p in RECORDED.iterdir() if p.is_dir()}:
        raise gr.Error("Pick one of the recorded chains.")  # never a path of the visitor's
    path = copy_in(RECORDED / name, RUNS_ROOT)
    threading.Thread(target=remake_all, args=(path,), name="remake", daemon=True).start()
    return show_saved(path, raw)


def real_chain_buttons() -> list[Any]:
    """The examples' heading and the real-chain buttons (`REAL_SLOTS` of them), for the real
    chains prepared so far (`banana_space.real_chains`): they come first, with their licence;
    the bundled recordings after them are our simulations, and say so."""
    real = [e for e in examples(RUNS_ROOT, RECORDED) if e.real]
    credits = sorted({e.credit for e in real if e.credit})
    heading = (f"**Real chains first** — open instantly: {LABEL}, "
               + "; ".join(plain(c) for c in credits)
               + ". **Below them, our simulations** (a model of the damage, not a real "
               "editor's output)." if real else
               "**Recorded chains** — open instantly, no key or GPU. These are **simulated** "
               "(a model of the damage, not a real editor's output).")
    return [heading, *(gr.update(value=real[i].label, visible=True) if i < len(real)
                       else gr.update(visible=False) for i in range(REAL_SLOTS))]


def open_real_chain(index: int, raw: bool) -> tuple[Any, ...]:
    """Copy the `index`-th prepared real chain into the runs folder (once), then show it."""
    real = [e for e in examples(RUNS_ROOT, RECORDED) if e.real]
    if index >= len(real):
        raise gr.Error("That real chain is not ready (the hub is not reachable from here).")
    return show_saved(copy_in(real[index].path, RUNS_ROOT), raw)


def redraw(run_id: str | None, raw: bool) -> Any:
    return show_saved(confined(run_id), raw) if run_id else [gr.skip()] * OUTPUT_COUNT


def past_runs() -> Any:
    runs = sorted((p.parent.name for p in RUNS_ROOT.glob("*/run.json")), reverse=True)
    return gr.update(choices=runs, value=runs[0] if runs else None)


def on_load(request: gr.Request) -> Any:
    """`?run=<id>&frame=<i>` reopens that run, comparing frame i: the link a user shares."""
    run_id = request.query_params.get("run")
    if not run_id:
        return [gr.skip()] * OUTPUT_COUNT
    shown = list(reopen(run_id, False))
    frame = request.query_params.get("frame", "")
    if FRAME_QUERY.fullmatch(frame):  # digits only: `²` is a digit to str.isdigit
        step = min(int(frame), shown[COMPARE_STEP]["value"])
        shown[BEFORE_AFTER], shown[MAGNIFIER], shown[SHARE] = compare(shown[RUN_ID], step)
        shown[PLOT] = marked_plot(shown[RUN_ID], step, False)
        shown[COMPARE_STEP] = {**shown[COMPARE_STEP], "value": step}
    return shown


def preview(upload: str | None) -> tuple[Any, str]:
    """The upload's preview (hidden while there is none) and its size and notes."""
    nothing = gr.update(value=None, visible=False)
    if not upload or Path(upload).suffix.lower() == ".zip":
        return nothing, ""
    try:
        loaded = load_image(guard.received_file(upload))
    except (BadImage, guard.Refused) as error:
        return nothing, f"⚠️ {plain(public_text(str(error)))}"
    w, h = loaded.image.size
    small = loaded.image.copy()
    small.thumbnail((PREVIEW_SIDE, PREVIEW_SIDE))
    return (gr.update(value=write_preview(small), visible=True),
            f"{w} × {h}" + "".join(f" · {plain(n)}" for n in loaded.notes))


def write_preview(image: Image.Image) -> str:
    """The preview as a file of its own under the served runs folder, written atomically.
    Returned as a PIL image, gradio would write it to a path named by its content, in place:
    eight visitors previewing one photo rewrote the file while it was being served to the
    others, who got a truncated image. Previews older than an hour are deleted, and the oldest
    beyond their share of the disk (`disk.PREVIEWS_BYTES`)."""
    PREVIEWS.mkdir(parents=True, exist_ok=True)
    for old in PREVIEWS.glob("*.png"):
        with contextlib.suppress(FileNotFoundError):
            if time.time() - old.stat().st_mtime > PREVIEW_LIFETIME_S:
                old.unlink()
    path = PREVIEWS / f"{secrets.token_hex(8)}.png"
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    make_room(PREVIEWS, len(buffer.getvalue()), PREVIEWS_BYTES)
    write_atomic(path, buffer.getvalue())
    return str(path)


def compare(run_id: str | None, step: float) -> tuple[Any, Any, Any]:
    """Input vs frame `step`: the slider, the magnifier and the share link follow the choice."""
    if not run_id:
        return None, gr.skip(), gr.skip()
    path, step = confined(run_id), whole(step, "The step")
    full_frame(path, step)  # a recording's dropped frame, re-made (or its thumbnail, said so)
    chosen = shown_frame(path, step)
    if not chosen.is_file():
        return gr.skip(), gr.skip(), gr.skip()
    return (compared((str(shown_frame(path, 0)), str(chosen)), step),
            magnify(path, step), share_link(path, step))


def marked_plot(run_id: str | None, step: float, raw: bool) -> Any:
    """The curves with the frame the visitor compares marked (the stream marks the newest)."""
    if not run_id:
        return gr.skip()
    history = load_run(confined(run_id)).history
    step = whole(step, "The step")
    figure = raw_figure(history, step) if raw else delta_figure(history, marked=step)
    return gr.components.plot.PlotData(type="plotly", plot=json.dumps(figure))


def compared(pair: tuple[str, str] | None, step: int) -> Any:
    """The compare slider's pictures, its label naming its sides; a frame a recording kept
    only as a thumbnail is named one, never passed off as the frame."""
    side = f"◀ input · step {step} ▶" if pair else "Input vs frame i"
    small = pair is not None and Path(pair[1]).parent.name == ".thumbs"
    note = f" · only its {THUMB_SIDE} px thumbnail was kept" if small else ""
    return gr.update(value=pair, label=f"{side} (drag the handle){note}")


def share_link(run_dir: Path | None, step: int) -> str:
    """The link that reopens this view: the run and the frame being compared."""
    return f"?run={run_dir.name}&frame={max(step, 0)}" if run_dir else ""


def magnify(run_dir: Path | None, step: int, point: tuple[float, float] | None = None) -> Any:
    """Input and frame `step` of a (confined) run directory cropped alike and enlarged, where
    they differ most (or around `point`, in the input's pixels), with a label saying which
    side is which."""
    if run_dir is None or step < 1 or not shown_frame(run_dir, step).is_file():
        return gr.update(value=None, label="Magnifier (from step 1 on)")
    with Image.open(shown_frame(run_dir, 0)) as first, \
            Image.open(shown_frame(run_dir, step)) as chosen:
        box = box_around(point, first.size) if point else largest_difference_box(first, chosen)
        image = side_by_side(first, chosen, box)
    where = "where you clicked" if point else "where they differ most"
    return gr.update(value=image, label=f"Magnifier {ZOOM}×: input | step {step}, {where}")


def zoom_at(run_id: str | None, step: float, event: gr.SelectData) -> Any:
    """A click on the newest frame moves the magnifier there (in the input's pixels)."""
    if not run_id or not event.index:
        return gr.skip()
    path = confined(run_id)
    newest = load_run(path).last_step
    with Image.open(shown_frame(path, 0)) as first, \
            Image.open(shown_frame(path, newest)) as clicked:
        scale = (first.width / clicked.width, first.height / clicked.height)
    x, y = event.index[0] * scale[0], event.index[1] * scale[1]
    return magnify(path, max(whole(step, "The step"), 1), (x, y))
