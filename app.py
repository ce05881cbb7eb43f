"""Banana Space: the Gradio app. Layout and wiring only; all the work is in `banana_space/`.

Start it with `bash scripts/start.sh` (or `python app.py` inside the venv). Host and port come
from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT, as on a Space; runs are written under
BANANA_RUNS_DIR (default ./runs).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
from gradio_client.utils import encode_file_path
from PIL import Image

import zerogpu  # noqa: F401  (first: installs the spaces.GPU runner; a plain call off ZeroGPU)
from banana_space.backends import REGISTRY as BACKENDS
from banana_space.backends import BackendUnavailable
from banana_space.images import BadImage, load_image
from banana_space.judges import REGISTRY as JUDGES
from banana_space.magnifier import ZOOM, box_around, largest_difference_box, side_by_side
from banana_space.metrics import CPU_DEFAULTS, FIDELITY, POOL, PRESETS
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.prompts import PRESETS as PROMPTS
from banana_space.rundir import ZIP_NAME, RunDir, load_run
from banana_space.runs import MAX_STEPS, RunSpec, prune_runs, resume_run, start_run
from banana_space.view import VERDICT_HEADERS, RunView, Screen
from page_style import (
    PAGE_CSS,
    PAGE_JS,
    SCROLL_TO_RESULT_JS,
    SHARE_CSS,
    SHARE_HTML,
    SHARE_JS,
    THEME,
)

HERE = Path(__file__).parent
RUNS_ROOT = Path(os.environ.get("BANANA_RUNS_DIR", HERE / "runs")).resolve()
KEEP_RUNS = int(os.environ.get("BANANA_KEEP_RUNS", "200"))  # older run directories are deleted
# Frames are written once and never change, so gradio serves them where they lie instead of
# hashing and copying the current frame into its cache on every streamed update (~8 ms per
# 1024 px frame; bench/streaming.py). Like allowed_paths, this serves every file under it.
gr.set_static_paths([RUNS_ROOT])
INTRO, HELP = (HERE / "assets" / "copy.md").read_text().split("---HELP---")
# The README's "Licences and terms" section, shown in the page's footer: one text, never two.
LICENCES = (HERE / "README.md").read_text().split("## Licences and terms\n")[1].split("\n## ")[0]
EXAMPLES = sorted(str(p) for p in (HERE / "assets" / "examples").glob("*.*") if p.suffix != ".md")
RECORDED = HERE / "assets" / "recorded"  # finished runs that open instantly (no key, no GPU)

STOPS: dict[str, threading.Event] = {}  # session -> the stop flag of its current run
WARMED = threading.Event()  # the metric pool's warm-up has been started


def choices(registry: dict[str, Any]) -> tuple[list[tuple[str, str]], str]:
    """(label, name) for each entry, marked short ("— needs a key"), and each distinct how-to
    once ("needs a key: set GEMINI_API_KEY…") as the component's help text."""
    labels, howtos = [], {}
    for entry in registry.values():
        reason = entry.unavailable_reason()
        short = reason.split(":")[0] if reason else ""
        labels.append((entry.info.label + (f" — {short}" if short else ""), entry.info.name))
        howtos.setdefault(short, reason)
    return labels, " · ".join(why for short, why in howtos.items() if short)


def outputs_of(screen: Screen) -> tuple[Any, ...]:
    """A `Screen` in the order of OUTPUTS below. The figure goes to gr.Plot as the JSON that
    its postprocess would make of a plotly Figure, without building one (bench/streaming.py)."""
    plot = gr.components.plot.PlotData(type="plotly", plot=json.dumps(screen.figure))
    download = gr.update(value=screen.zip_path, visible=screen.zip_path is not None)
    newest = len(screen.strip) - 1
    # The magnifier costs ~0.2 s a 1024 px frame, so a running chain leaves it to the compare
    # slider (whose .change follows each new frame) instead of redoing it on every update.
    zoomed = gr.skip() if screen.running else magnify(screen.run_dir, newest)
    return (screen.status, screen.frame, strip_html(screen.strip), plot, screen.verdict,
            screen.model_text, download, screen.run_dir,
            compared((screen.first_frame, screen.frame) if screen.first_frame else None, newest),
            gr.update(maximum=max(1, newest), value=newest), screen.summary,
            share_link(screen.run_dir, newest), zoomed)


def strip_html(strip: list[tuple[str, str]]) -> str:
    """The frame strip: a thumbnail per step, each a link to its full frame, both served from
    the runs folder as they lie. Plain HTML, so an update costs a string where a gr.Gallery
    hashed every frame's file on every update (bench/streaming.py); it only ever grows at the
    end, so gradio streams just the new link."""
    return "".join(f'<a href="{file_url(frame)}" target="_blank" rel="noopener" title="step '
                   f'{step}: open the full frame"><img src="{file_url(thumb)}" alt="step {step}">'
                   f"<span>{step}</span></a>" for step, (thumb, frame) in enumerate(strip))


def file_url(path: str) -> str:
    """gradio's URL for a file on the server, relative to the page (works under any root)."""
    return "gradio_api/file=" + encode_file_path(path)


def stream(view: RunView, events: Any, session: str, stop: threading.Event) -> Any:
    """Fold engine events into the view and send each screen as it changes."""
    STOPS[session] = stop
    try:
        for event in events:
            yield outputs_of(view.apply(event))
    finally:
        STOPS.pop(session, None)


def run(upload: str | None, steps: int, prompt: str, backend: str, metrics: list[str],
        judges: list[str], seed: int, strength: float, api_key: str, temperature: float,
        resolution: str | None, guidance_scale: float | None, inference_steps: int | None,
        raw: bool, request: gr.Request) -> Any:
    if not upload:
        raise gr.Error("Upload an image first (or click an example).")
    entry = BACKENDS.get(backend)
    try:
        if entry and entry.info.plays_recording:
            image, notes, options = None, [], {"source": upload}
        else:
            loaded = load_image(upload)
            image, notes, options = loaded.image, loaded.notes, {}
        advanced = {"strength": strength, "temperature": temperature, "api_key": api_key,
                    "resolution": resolution, "guidance_scale": guidance_scale,
                    "num_inference_steps": inference_steps}
        options.update({k: v for k, v in advanced.items()
                        if entry and k in entry.info.options and v not in (None, "")})
        spec = RunSpec(image, int(steps), backend, options, prompt, int(seed), metrics or [],
                       judges or [], {"api_key": api_key} if api_key else {}, notes)
        stop = threading.Event()
        events = start_run(spec, RUNS_ROOT, stop=stop)
    except (BadImage, ValueError, BackendUnavailable, FileExistsError) as error:
        raise gr.Error(str(error)) from None
    prune_runs(RUNS_ROOT, KEEP_RUNS)  # never a run being written, this one included
    yield from stream(RunView(raw=raw), events, request.session_hash, stop)


def replay_hub(source: str, steps: int, prompt: str, metrics: list[str], judges: list[str],
               seed: int, raw: bool, request: gr.Request) -> Any:
    """Replay a chain on the Hugging Face hub. Only an hf://datasets/… path is taken here,
    never a path on this server."""
    source = (source or "").strip()
    if not source.startswith("hf://datasets/"):
        raise gr.Error("Write a chain on the hub as hf://datasets/OWNER/NAME/PATH.")
    yield from run(source, steps, prompt, "replay", metrics, judges, seed, 1.0, "", 1.0, None,
                   None, None, raw, request)


def hub_credit(source: str) -> str:
    """The dataset's licence line and credit, shown while one of its chains is open."""
    from banana_space.hub import credit, parse_hub

    try:
        return credit(parse_hub(source or "").repo_id)
    except BadImage as error:
        return f"⚠️ {error}"


def stop_run(request: gr.Request) -> str:
    flag = STOPS.get(request.session_hash)
    if flag is None:
        return "Nothing is running."
    flag.set()
    return "⏹ Stopping… (the frames made so far are kept)"


def resume(run_dir: str | None, api_key: str, raw: bool, request: gr.Request) -> Any:
    if not run_dir:
        raise gr.Error("Open or start a run first.")
    saved = load_run(Path(run_dir))
    if saved.meta.get("status") == "completed" and saved.last_step >= saved.meta.get("steps", 0):
        gr.Info(f"This run is complete: all {saved.last_step} steps are made. Resume goes on "
                "with a stopped or interrupted run; press Run for a longer chain.")
        yield [gr.skip()] * len(OUTPUTS)  # the run stays on screen as it is
        return
    stop = threading.Event()
    try:
        events = resume_run(Path(run_dir), stop=stop, api_key=api_key or None)
    except (ValueError, BackendUnavailable, FileNotFoundError) as error:
        raise gr.Error(str(error)) from None
    yield from stream(RunView.from_saved(saved), events, request.session_hash, stop)


def show_saved(path: Path, raw: bool) -> tuple[Any, ...]:
    if not (path / ZIP_NAME).is_file():  # a killed run, or a recorded example: zip it now
        RunDir(path).zip()
    view = RunView.from_saved(load_run(path))
    view.raw = raw
    return outputs_of(view.screen())


def reopen(run_id: str | None, raw: bool) -> Any:
    if not run_id:
        raise gr.Error("Pick a run.")
    path = (RUNS_ROOT / run_id).resolve()
    if path.parent != RUNS_ROOT or not (path / "run.json").is_file():
        raise gr.Error(f"No run called {run_id!r}.")
    return show_saved(path, raw)


def recorded_label(name: str) -> str:
    """"chelsea-simulated-20" -> "Chelsea · simulated · 20 steps"."""
    photo, backend, steps = name.rsplit("-", 2)
    return f"{photo.capitalize()} · {backend} · {steps} steps"


def open_recorded(name: str, raw: bool) -> Any:
    """Copy a bundled recorded run into the runs folder (once), then show it."""
    target = RUNS_ROOT / name
    if not (target / "run.json").is_file():
        shutil.copytree(RECORDED / name, target, dirs_exist_ok=True)
    return show_saved(target, raw)


def redraw(run_dir: str | None, raw: bool) -> Any:
    return show_saved(Path(run_dir), raw) if run_dir else [gr.skip()] * len(OUTPUTS)


def past_runs() -> Any:
    runs = sorted((p.parent.name for p in RUNS_ROOT.glob("*/run.json")), reverse=True)
    return gr.update(choices=runs, value=runs[0] if runs else None)


def warm_up_metrics() -> None:
    """On the first visit, load torch, pyiqa and the default metrics in the background, so
    that the first run's first frame does not wait for them (bench/startup.py)."""
    if not WARMED.is_set():
        WARMED.set()
        threading.Thread(target=lambda: [POOL.unavailable_reason(name) for name in
                                         (*CPU_DEFAULTS, *FIDELITY)], daemon=True).start()


def on_load(request: gr.Request) -> Any:
    """`?run=<id>&frame=<i>` reopens that run, comparing frame i: the link a user shares."""
    run_id = request.query_params.get("run")
    if not run_id:
        return [gr.skip()] * len(OUTPUTS)
    shown = list(reopen(run_id, False))
    frame = request.query_params.get("frame", "")
    if frame.isdigit():
        step = min(int(frame), shown[OUTPUTS.index(compare_step)]["value"])
        slider, zoomed, link = compare(shown[OUTPUTS.index(run_dir)], step)
        shown[OUTPUTS.index(before_after)] = slider
        shown[OUTPUTS.index(compare_step)] = {**shown[OUTPUTS.index(compare_step)],
                                              "value": step}
        shown[OUTPUTS.index(magnifier)], shown[OUTPUTS.index(share)] = zoomed, link
    return shown


def preview(upload: str | None) -> tuple[Any, str]:
    if not upload or Path(upload).suffix.lower() == ".zip":
        return None, ""
    try:
        loaded = load_image(upload)
    except BadImage as error:
        return None, f"⚠️ {error}"
    w, h = loaded.image.size
    return loaded.image, f"{w} × {h}" + "".join(f" · {n}" for n in loaded.notes)


def compare(run_dir: str | None, step: int) -> tuple[Any, Any, Any]:
    """Input vs frame `step`: the slider, the magnifier and the share link follow the choice."""
    if not run_dir:
        return None, gr.skip(), gr.skip()
    frames = Path(run_dir) / "frames"
    chosen = frames / f"step_{int(step):03d}.png"
    if not chosen.is_file():
        return gr.skip(), gr.skip(), gr.skip()
    return (compared((str(frames / "step_000.png"), str(chosen)), int(step)),
            magnify(run_dir, int(step)), share_link(run_dir, int(step)))


def compared(pair: tuple[str, str] | None, step: int) -> Any:
    """The compare slider's pictures, its label naming its sides."""
    side = f"◀ input · step {step} ▶" if pair else "Input vs frame i"
    return gr.update(value=pair, label=f"{side} (drag the handle)")


# ---- Sharing, the magnifier and the examples' thumbnails (layout helpers, no run logic) ----

def share_link(run_dir: str | None, step: int) -> str:
    """The link that reopens this view: the run and the frame being compared."""
    return f"?run={Path(run_dir).name}&frame={max(step, 0)}" if run_dir else ""


def magnify(run_dir: str | None, step: int, point: tuple[float, float] | None = None) -> Any:
    """Input and frame `step` cropped alike and enlarged, where they differ most (or around
    `point`, in the input's pixels), with a label saying which side is which."""
    frames = Path(run_dir) / "frames" if run_dir else None
    if frames is None or step < 1 or not (frames / f"step_{step:03d}.png").is_file():
        return gr.update(value=None, label="Magnifier (from step 1 on)")
    with Image.open(frames / "step_000.png") as first, \
            Image.open(frames / f"step_{step:03d}.png") as chosen:
        box = box_around(point, first.size) if point else largest_difference_box(first, chosen)
        image = side_by_side(first, chosen, box)
    where = "where you clicked" if point else "where they differ most"
    return gr.update(value=image, label=f"Magnifier {ZOOM}×: input | step {step}, {where}")


def zoom_at(run_dir: str | None, step: int, event: gr.SelectData) -> Any:
    """A click on the newest frame moves the magnifier there (in the input's pixels)."""
    if not run_dir or not event.index:
        return gr.skip()
    frames = Path(run_dir) / "frames"
    newest = sorted(frames.glob("step_*.png"))[-1]
    with Image.open(frames / "step_000.png") as first, Image.open(newest) as clicked:
        scale = (first.width / clicked.width, first.height / clicked.height)
    x, y = event.index[0] * scale[0], event.index[1] * scale[1]
    return magnify(run_dir, max(int(step), 1), (x, y))


def example_thumbnails() -> list[tuple[str, str]]:
    """(thumbnail, caption) per example picture, made once at start-up: a 2K start is ~2 MB,
    and a phone opening the page needs 200 px of it."""
    folder = Path(tempfile.mkdtemp(prefix="banana-examples-"))
    shown = []
    for path in map(Path, EXAMPLES):
        with Image.open(path) as image:
            thumb = image.convert("RGB")
        thumb.thumbnail((240, 240))
        thumb.save(folder / f"{path.stem}.jpg", quality=85)
        shown.append((str(folder / f"{path.stem}.jpg"), path.stem))
    return shown


def pick_example(event: gr.SelectData) -> str:
    return EXAMPLES[event.index]


BACKEND_CHOICES, BACKEND_HOWTOS = choices(BACKENDS)
JUDGE_CHOICES, JUDGE_HOWTOS = choices(JUDGES)
# The frame strip: fixed-size thumbnails in one row that scrolls sideways as frames arrive,
# keeping the newest in view unless the visitor has scrolled back to look at an older one.
STRIP_CSS = """.strip {display: flex; gap: 6px; overflow-x: auto; min-height: 92px; padding: 2px 0}
.strip:empty::before {content: "Each frame appears here as soon as it is made."; color: #4b5563;
                      align-self: center}
.strip a {position: relative; flex: 0 0 auto; margin: 0}
.strip img {width: 88px; height: 88px; margin: 0; object-fit: cover; border-radius: 6px;
            display: block}
.strip span {position: absolute; right: 4px; bottom: 4px; padding: 0 5px; border-radius: 4px;
             font-size: 11px; background: rgba(255, 255, 255, .85); color: #222}"""
STRIP_JS = """let left = null;  // where the visitor scrolled the strip to; null: follow the newest
element.addEventListener('scroll', (event) => {
  const s = event.target;
  left = s.scrollLeft + s.clientWidth >= s.scrollWidth - 4 ? null : s.scrollLeft;
}, true);
watch('value', () => {
  const s = element.querySelector('.strip');
  if (s) s.scrollLeft = left ?? s.scrollWidth;
});"""

with gr.Blocks(title="Banana Space") as demo:
    gr.Markdown(INTRO)
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            gr.Markdown("**Your picture** (or, for *Replay*, a zip / animated GIF / WebP)")
            upload = gr.File(label="Image", show_label=False, file_types=["image", ".zip"],
                             type="filepath", elem_id="upload", height=130)
            with gr.Row():
                hub_source = gr.Textbox(label="…or, for Replay, a chain on the Hugging Face hub",
                                        placeholder="hf://datasets/kenantang/Banana100/…",
                                        elem_id="hub-source", scale=3)
                hub_button = gr.Button("Replay it", size="sm", scale=1)
            input_preview = gr.Image(label="Input", interactive=False, height=120,
                                     show_label=False, alt_text="The picture you uploaded")
            input_note = gr.Markdown()
            examples = gr.Gallery(example_thumbnails(), label="Example pictures (click one)",
                                  columns=4, height="auto", allow_preview=False,
                                  object_fit="cover", elem_id="examples", buttons=[])
            gr.Markdown("**Recorded chains** — open instantly, no key or GPU:")
            with gr.Row():
                recorded = {name: gr.Button(recorded_label(name), size="sm",
                                            elem_id=f"recorded-{name}")
                            for name in sorted(p.name for p in RECORDED.iterdir() if p.is_dir())}
            backend = gr.Dropdown(BACKEND_CHOICES, value="simulate", label="Generator",
                                  info=BACKEND_HOWTOS or None, elem_id="backend")
            steps = gr.Slider(1, MAX_STEPS, value=10, step=1, label="Steps (N)", elem_id="steps")
            with gr.Row():
                run_button = gr.Button("Run", variant="primary", elem_id="run-button")
                stop_button = gr.Button("Stop", variant="stop", elem_id="stop-button")
                resume_button = gr.Button("Resume", elem_id="resume-button")
            with gr.Accordion("Prompt, metrics and judges", open=False):
                prompt_preset = gr.Dropdown([(p.label, k) for k, p in PROMPTS.items()],
                                            value="replicate", label="Prompt preset")
                prompt = gr.Textbox(DEFAULT_PROMPT, label="Prompt", lines=2)
                metric_preset = gr.Dropdown(list(PRESETS), value="CPU classics (4)",
                                            label="Metric preset")
                metrics = gr.Dropdown(sorted({m for p in PRESETS.values() for m in p}),
                                      value=list(CPU_DEFAULTS), multiselect=True,
                                      allow_custom_value=True,
                                      label="Metrics (any pyiqa no-reference name)")
                judges = gr.CheckboxGroup(
                    JUDGE_CHOICES, label="VLM judges (reference line)", info=JUDGE_HOWTOS or None,
                    value=[e.info.name for e in JUDGES.values() if not e.unavailable_reason()])
            with gr.Accordion("Advanced", open=False):
                seed = gr.Number(0, precision=0, label="Seed")
                strength = gr.Slider(0, 3, value=1.0, step=0.1,
                                     label="Simulated: strength per step")
                api_key = gr.Textbox(type="password", label="Your Gemini API key",
                                     placeholder="used for your requests only; never stored")
                temperature = gr.Slider(0, 2, value=1.0, step=0.05, label="Gemini: temperature")
                resolution = gr.Dropdown(["1K", "2K", "4K"], value=None,
                                         label="Gemini: output resolution (Pro and 2 only)")
                guidance = gr.Number(None, label="Open editors: guidance scale (blank = "
                                     "the model's default)")
                inference_steps = gr.Number(None, precision=0, label="Open editors: inference "
                                            "steps (blank = the model's default)")
        with gr.Column(scale=2):
            status = gr.Markdown("Upload an image or pick an example, then press **Run**.",
                                 elem_id="status")
            # ---- The result on one screen: the finding, then frames beside the curves ----
            summary = gr.Markdown(elem_id="summary")
            with gr.Row(equal_height=False):
                with gr.Column(min_width=320):
                    before_after = gr.ImageSlider(label=compared(None, 0)["label"],
                                                  type="filepath", height=300,
                                                  elem_id="compare")
                    compare_step = gr.Slider(0, 1, value=1, step=1, label="Compare frame i",
                                             elem_id="compare-step")
                with gr.Column(min_width=320):
                    plot = gr.Plot(show_label=False, elem_id="plot")
                    raw = gr.Checkbox(False, label="Raw scores (one chart per metric)")
            with gr.Row(equal_height=False):
                magnifier = gr.Image(label="Magnifier", interactive=False, height=220,
                                     elem_id="magnifier", buttons=["fullscreen"],
                                     alt_text="The same crop of the input and of frame i, "
                                              "enlarged side by side")
                frame = gr.Image(label="Newest frame (click it to magnify that spot)",
                                 interactive=False, height=220, elem_id="frame",
                                 alt_text="The newest frame of the chain")
            strip = gr.HTML("", label="All frames (click one for the full frame)",
                            show_label=True, container=True, padding=True, elem_id="strip",
                            html_template='<div class="strip">${value}</div>',
                            css_template=STRIP_CSS, js_on_load=STRIP_JS)
            share = gr.HTML("", elem_id="share", html_template=SHARE_HTML,
                            css_template=SHARE_CSS, js_on_load=SHARE_JS)
            verdict = gr.Dataframe(headers=VERDICT_HEADERS, label="Does each metric detect it?",
                                   interactive=False, wrap=True, elem_id="verdict")
            with gr.Accordion("What the model said", open=False):
                model_text = gr.Markdown()
            download = gr.File(label="Download the run (frames + scores + verdict)",
                               elem_id="download", height=60, visible=False)
            run_dir = gr.Textbox(visible=False)
            with gr.Accordion("Past runs", open=False):
                with gr.Row():
                    run_picker = gr.Dropdown([], label="Run", scale=3, allow_custom_value=True)
                    refresh = gr.Button("↻", scale=0)
                    open_button = gr.Button("Open", scale=1)
            with gr.Accordion("What am I looking at?", open=False, elem_id="help"):
                gr.Markdown(HELP)
    with gr.Accordion("Licences and terms", open=False, elem_id="licences-and-terms"):
        gr.Markdown(LICENCES)
    gr.Markdown("Banana Space · code under Apache-2.0 · **for non-commercial use**, because "
                "every metric comes from pyiqa (PolyForm Noncommercial) · "
                "[Licences and terms](#licences-and-terms) · "
                "[Banana100 paper](https://arxiv.org/abs/2604.03400)", elem_id="footer")

    OUTPUTS = [status, frame, strip, plot, verdict, model_text, download, run_dir,
               before_after, compare_step, summary, share, magnifier]
    upload.change(preview, upload, [input_preview, input_note])
    examples.select(pick_example, None, upload, api_name=False)
    prompt_preset.change(lambda key: PROMPTS[key].text, prompt_preset, prompt)
    metric_preset.change(lambda name: list(PRESETS[name]), metric_preset, metrics)
    # Scoring is CPU-bound and a small Space has 2 cores: 4 runs at once share them (each
    # waits mostly on its generator anyway); up to 64 more wait in the queue, then visitors are
    # told the queue is full rather than left hanging. All runs share one metric pool.
    run_button.click(run, [upload, steps, prompt, backend, metrics, judges, seed, strength,
                           api_key, temperature, resolution, guidance, inference_steps, raw],
                     OUTPUTS, api_name="run", concurrency_limit=4, concurrency_id="runs",
                     show_progress="hidden")  # the status line says what is happening
    hub_button.click(hub_credit, hub_source, input_note, api_name=False)
    hub_button.click(replay_hub, [hub_source, steps, prompt, metrics, judges, seed, raw],
                     OUTPUTS, api_name="replay_hub", concurrency_id="runs",
                     show_progress="hidden")
    stop_button.click(stop_run, None, status, api_name="stop", concurrency_limit=None)
    resume_button.click(resume, [run_dir, api_key, raw], OUTPUTS, api_name="resume",
                        concurrency_id="runs", show_progress="hidden")
    for name, button in recorded.items():
        button.click(partial(open_recorded, name), raw, OUTPUTS, api_name=False)
    # .change, not .release: arrow keys move the slider too, and the picture must follow.
    compare_step.change(compare, [run_dir, compare_step], [before_after, magnifier, share],
                        api_name=False, show_progress="hidden")
    frame.select(zoom_at, [run_dir, compare_step], magnifier, api_name=False)
    raw.change(redraw, [run_dir, raw], OUTPUTS, api_name=False)
    refresh.click(past_runs, None, run_picker, api_name=False)
    open_button.click(reopen, [run_picker, raw], OUTPUTS, api_name="open")
    demo.load(past_runs, None, run_picker, api_name=False)
    demo.load(on_load, None, OUTPUTS, api_name=False).then(None, js=SCROLL_TO_RESULT_JS)
    demo.load(warm_up_metrics, None, None, api_name=False)


if __name__ == "__main__":
    RUNS_ROOT.mkdir(parents=True, exist_ok=True)
    demo.queue(max_size=64, default_concurrency_limit=8).launch(
        allowed_paths=[str(RUNS_ROOT)], theme=THEME, css=PAGE_CSS, js=PAGE_JS)
