"""Banana Space: the Gradio app. Layout and wiring only; all the work is in `banana_space/`.

Start it with `bash scripts/start.sh` (or `python app.py` inside the venv). Host and port come
from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT, as on a Space; runs are written under
BANANA_RUNS_DIR (default ./runs).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
from gradio_client.utils import encode_file_path

import zerogpu  # noqa: F401  (first: installs the spaces.GPU runner; a plain call off ZeroGPU)
from banana_space.backends import REGISTRY as BACKENDS
from banana_space.backends import BackendUnavailable
from banana_space.backends.simulate import DEFAULT_PROFILE, PROFILES
from banana_space.images import BadImage, load_image
from banana_space.judges import REGISTRY as JUDGES
from banana_space.metrics import CPU_DEFAULTS, FIDELITY, POOL, PRESETS
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.prompts import PRESETS as PROMPTS
from banana_space.rundir import ZIP_NAME, RunDir, load_run
from banana_space.runs import MAX_STEPS, RunSpec, prune_runs, resume_run, start_run
from banana_space.view import VERDICT_HEADERS, RunView, Screen, shown_frame

HERE = Path(__file__).parent
RUNS_ROOT = Path(os.environ.get("BANANA_RUNS_DIR", HERE / "runs")).resolve()
KEEP_RUNS = int(os.environ.get("BANANA_KEEP_RUNS", "200"))  # older run directories are deleted
# Frames are written once and never change, so gradio serves them where they lie instead of
# hashing and copying the current frame into its cache on every streamed update (~8 ms per
# 1024 px frame; bench/streaming.py). Like allowed_paths, this serves every file under it.
gr.set_static_paths([RUNS_ROOT])
INTRO, HELP = (HERE / "assets" / "copy.md").read_text().split("---HELP---")
# The clean renders first (the paper's kind of start; the first is the default), then photos.
EXAMPLES = sorted((str(p) for p in (HERE / "assets" / "examples").glob("*.*") if p.suffix != ".md"),
                  key=lambda path: (not Path(path).name.startswith("clean-"), path))
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
    return (screen.status, screen.frame, strip_html(screen.strip), plot, screen.verdict,
            screen.model_text, download, screen.run_dir,
            (screen.first_frame, screen.frame) if screen.first_frame else None,
            gr.update(maximum=max(1, len(screen.strip) - 1), value=len(screen.strip) - 1))


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
        raw: bool, profile: str, request: gr.Request) -> Any:
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
                    "num_inference_steps": inference_steps, "profile": profile}
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
    """`?run=<id>` reopens that run: the link a user shares."""
    run_id = request.query_params.get("run")
    return reopen(run_id, False) if run_id else [gr.skip()] * len(OUTPUTS)


def preview(upload: str | None) -> tuple[Any, str]:
    if not upload or Path(upload).suffix.lower() == ".zip":
        return None, ""
    try:
        loaded = load_image(upload)
    except BadImage as error:
        return None, f"⚠️ {error}"
    w, h = loaded.image.size
    return loaded.image, f"{w} × {h}" + "".join(f" · {n}" for n in loaded.notes)


def compare(run_dir: str | None, step: int) -> Any:
    if not run_dir:
        return None
    chosen = shown_frame(Path(run_dir), int(step))  # a recording may keep only its thumbnail
    return (str(shown_frame(Path(run_dir), 0)), str(chosen)) if chosen.is_file() else gr.skip()


BACKEND_CHOICES, BACKEND_HOWTOS = choices(BACKENDS)
JUDGE_CHOICES, JUDGE_HOWTOS = choices(JUDGES)
# The frame strip: fixed-size thumbnails in one row that scrolls sideways as frames arrive,
# keeping the newest in view unless the visitor has scrolled back to look at an older one.
STRIP_CSS = """.strip {display: flex; gap: 6px; overflow-x: auto; min-height: 92px; padding: 2px 0}
.strip:empty::before {content: "Each frame appears here as soon as it is made."; opacity: .6;
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
            upload = gr.File(label="Image (or, for Replay, a zip / animated GIF / WebP)",
                             file_types=["image", ".zip"], type="filepath", elem_id="upload",
                             height=110)
            input_preview = gr.Image(label="Input", interactive=False, height=120,
                                     show_label=False)
            input_note = gr.Markdown()
            gr.Examples(EXAMPLES, inputs=upload, label="Example photos")
            gr.Markdown("**Recorded chains** — open instantly, no key or GPU:")
            with gr.Row():
                recorded = {name: gr.Button(recorded_label(name), size="sm",
                                            elem_id=f"recorded-{name}")
                            for name in sorted(p.name for p in RECORDED.iterdir() if p.is_dir())}
            backend = gr.Dropdown(BACKEND_CHOICES, value="simulate", label="Generator",
                                  info=BACKEND_HOWTOS or None, elem_id="backend")
            profile = gr.Dropdown([(p.label, name) for name, p in PROFILES.items()],
                                  value=DEFAULT_PROFILE, label="Simulated: profile",
                                  info="which generator's artifact the simulation models",
                                  elem_id="profile")
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
            with gr.Row():
                frame = gr.Image(label="Current frame", interactive=False, height=320,
                                 elem_id="frame")
                before_after = gr.ImageSlider(label="Input vs frame i", type="filepath",
                                              height=320)
            compare_step = gr.Slider(0, 1, value=1, step=1, label="Compare frame i")
            strip = gr.HTML("", label="All frames (click one for the full frame)",
                            show_label=True, container=True, padding=True, elem_id="strip",
                            html_template='<div class="strip">${value}</div>',
                            css_template=STRIP_CSS, js_on_load=STRIP_JS)
            raw = gr.Checkbox(False, label="Raw scores (one chart per metric)")
            plot = gr.Plot(label="Oriented, normalised Δ per metric (negative = worse)",
                           elem_id="plot")
            verdict = gr.Dataframe(headers=VERDICT_HEADERS, label="Does each metric detect it?",
                                   interactive=False, wrap=True, elem_id="verdict")
            with gr.Accordion("What the model said", open=False):
                model_text = gr.Markdown()
            download = gr.File(label="Download the run (frames + scores + verdict)",
                               elem_id="download", height=60, visible=False)
            with gr.Row():
                run_dir = gr.Textbox(visible=False)
                share = gr.DeepLinkButton(value="Copy a link to this view", size="sm")
            with gr.Accordion("Past runs", open=False):
                with gr.Row():
                    run_picker = gr.Dropdown([], label="Run", scale=3, allow_custom_value=True)
                    refresh = gr.Button("↻", scale=0)
                    open_button = gr.Button("Open", scale=1)
            with gr.Accordion("What am I looking at?", open=False, elem_id="help"):
                gr.Markdown(HELP)

    OUTPUTS = [status, frame, strip, plot, verdict, model_text, download, run_dir,
               before_after, compare_step]
    upload.change(preview, upload, [input_preview, input_note])
    prompt_preset.change(lambda key: PROMPTS[key].text, prompt_preset, prompt)
    metric_preset.change(lambda name: list(PRESETS[name]), metric_preset, metrics)
    # Scoring is CPU-bound and a small Space has 2 cores: 4 runs at once share them (each
    # waits mostly on its generator anyway); up to 64 more wait in the queue, then visitors are
    # told the queue is full rather than left hanging. All runs share one metric pool.
    run_button.click(run, [upload, steps, prompt, backend, metrics, judges, seed, strength,
                           api_key, temperature, resolution, guidance, inference_steps, raw,
                           profile],
                     OUTPUTS, api_name="run", concurrency_limit=4, concurrency_id="runs",
                     show_progress="hidden")  # the status line says what is happening
    stop_button.click(stop_run, None, status, api_name="stop", concurrency_limit=None)
    resume_button.click(resume, [run_dir, api_key, raw], OUTPUTS, api_name="resume",
                        concurrency_id="runs", show_progress="hidden")
    for name, button in recorded.items():
        button.click(partial(open_recorded, name), raw, OUTPUTS, api_name=False)
    compare_step.release(compare, [run_dir, compare_step], before_after, api_name=False)
    raw.change(redraw, [run_dir, raw], OUTPUTS, api_name=False)
    refresh.click(past_runs, None, run_picker, api_name=False)
    open_button.click(reopen, [run_picker, raw], OUTPUTS, api_name="open")
    demo.load(past_runs, None, run_picker, api_name=False)
    demo.load(on_load, None, OUTPUTS, api_name=False)
    demo.load(warm_up_metrics, None, None, api_name=False)


if __name__ == "__main__":
    RUNS_ROOT.mkdir(parents=True, exist_ok=True)
    demo.queue(max_size=64, default_concurrency_limit=8).launch(
        allowed_paths=[str(RUNS_ROOT)], theme=gr.themes.Soft())
