"""Banana Space: the Gradio app. Layout and wiring only: what each event does is in
`page/run_tab/handlers.py`, the documented API (which is also the MCP server's tools) in `page/api.py`,
the Run form's fields in `page/run_tab/form.py`, and all the work in `banana_space/`.

Start it with `bash scripts/start.sh` (or `python app.py` inside the venv). Host and port come
from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT, as on a Space; runs are written under
BANANA_RUNS_DIR (default ./runs) and kept within BANANA_KEEP_RUNS / BANANA_KEEP_GB
(`page/settings.py`).
"""

from __future__ import annotations

import os

from page.settings import SETTINGS

# The start's one write to the environment, before gradio is imported: gradio reads its upload
# folder (GRADIO_TEMP_DIR) then, and ours is the settings' (page/door/disk.py counts what is in it).
os.environ["GRADIO_TEMP_DIR"] = str(SETTINGS.uploads)

# isort: split
import tempfile
import threading
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image
from starlette.middleware import Middleware

import zerogpu  # noqa: F401  (first: installs the spaces.GPU runner; a plain call off ZeroGPU)
from banana_space.backends import OPTIONS
from banana_space.backends import REGISTRY as BACKENDS
from banana_space.scores.catalog import CPU_DEFAULTS, FIDELITY, PRESETS, visitor_metrics
from banana_space.judges import REGISTRY as JUDGES
from banana_space.scores.pool import POOL
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.prompts import PRESETS as PROMPTS
from banana_space.chain.quota import JUDGE_AT, default_judge_at
from banana_space.chain.real_chains import examples as chain_examples
from banana_space.chain.real_chains import start_preparing
from banana_space.chain.spec import MAX_STEPS
from banana_space.view import VERDICT_HEADERS
from page import api, leaderboard_tab
from page.door import body_limit as bodies
from page.door import disk
from page.door import gradio_patches
from page.door import guard
from page.door import identity
from page.door import served
from page.compare_tab import tab as compare_tab
from page.run_tab.form import FORM_OPTIONS, inputs_of, option_control
from page.run_tab.handlers import (
    REAL_CHAINS_POLL_S,
    REAL_SLOTS,
    compare,
    cost_note,
    example_gallery,
    hub_credit,
    marked_plot,
    on_load,
    open_real_chain,
    open_recorded,
    past_runs,
    picked_example,
    preview,
    real_chain_buttons,
    real_chains_tick,
    redraw,
    reopen,
    replay_hub,
    resume,
    run,
    start_condition,
    steps_for_the_gpu,
    stop_run,
    zoom_at,
)
from page.run_tab.outputs import PageOutputs, compared
from page.settings import RECORDED, REPO
from page.style import (
    PAGE_CSS,
    PAGE_JS,
    SCROLL_TO_RESULT_JS,
    SHARE_CSS,
    SHARE_HTML,
    SHARE_JS,
    STRIP_CSS,
    STRIP_JS,
    THEME,
)

INTRO, HELP = (REPO / "assets" / "copy.md").read_text().split("---HELP---")
CLAIM, ABOUT = INTRO.split("---ABOUT---")
# docs/licences.md, shown in the page's footer: one text, never two.
LICENCES = (REPO / "docs" / "licences.md").read_text()
# The default first, then the other photographs, the flat synthetic renders, and the small
# sample photos. The default is chosen by the paper's conditions, never by the verdicts a run
# on it gives: the bundled start of 2K or more whose BRISQUE at the run's size is nearest the
# paper's example start (conditions.nearest_to_the_paper; the numbers in
# docs/start_smoothness.md, checked by tests/test_conditions.py).
DEFAULT_EXAMPLE = "photo-moss.png"
EXAMPLES = sorted((str(p) for p in (REPO / "assets" / "examples").glob("*.*") if p.suffix != ".md"),
                  key=lambda path: (Path(path).name != DEFAULT_EXAMPLE,
                                    not Path(path).name.startswith("photo-"),
                                    not Path(path).name.startswith("clean-"), path))
DELETE_CACHE = (min(3600, SETTINGS.uploads_keep_s), SETTINGS.uploads_keep_s)  # see disk.py
# Scoring is CPU-bound and a small Space has 2 cores: 4 chains at once share them (each waits
# mostly on its generator anyway), set on every chain event (gradio takes a group's limit from
# the first event it sees, so one event without it once let 8 run).
CHAINS_AT_ONCE = 4
# Sessions whose values gradio keeps (its default is 10,000): the page keeps nothing in them
# that a request does not send again (the run id rides in a hidden field), so this bounds their
# memory, each at most a request body (`page/door/body_limit.py`), for as many tabs as a small Space sees.
SESSIONS_KEPT = 256
WARMED = threading.Event()  # the metric pool's warm-up has been started
SIGN_IN_NOTE = ("Signing in keeps your runs on any device, gives you your own share of this "
                "Space and spends your own ZeroGPU quota, not the anonymous one.")
# The page's events a client may still call by name.
STREAMING = {"run", "resume", "open", "replay_hub"}


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


def recorded_choices() -> list[tuple[str, str]]:
    """(label, name) of every bundled recording the picker offers, each labelled simulated
    (`real_chains.examples`: the real chains have buttons of their own, above it)."""
    return [(e.label, e.path.name)
            for e in chain_examples(SETTINGS.runs_root, RECORDED) if not e.real]


def warm_up_metrics() -> None:
    """On the first visit, load torch, pyiqa and the default metrics in the background, so
    that the first run's first frame does not wait for them (bench/startup.py)."""
    if not WARMED.is_set():
        WARMED.set()
        threading.Thread(target=lambda: [POOL.unavailable_reason(name) for name in
                                         (*CPU_DEFAULTS, *FIDELITY)], daemon=True).start()


def example_thumbnails() -> list[tuple[str, str]]:
    """(thumbnail, caption) per example picture, made once when the page is built: a 2K start
    is ~2 MB, and a phone opening the page needs 200 px of it."""
    folder = Path(tempfile.mkdtemp(prefix="banana-examples-"))
    made = []
    for path in map(Path, EXAMPLES):
        with Image.open(path) as image:
            thumb = image.convert("RGB")
        thumb.thumbnail((240, 240))
        thumb.save(folder / f"{path.stem}.jpg", quality=85)
        made.append((str(folder / f"{path.stem}.jpg"), path.stem))
    return made


def pick_example(event: gr.SelectData) -> str:
    """The picture behind the clicked thumbnail (Banana100's starts come first, once they are
    prepared: `handlers.example_gallery`)."""
    value = event.value if isinstance(event.value, dict) else {}
    return picked_example(value.get("caption"), event.index,
                          {Path(path).stem: path for path in EXAMPLES})


def build() -> gr.Blocks:
    """The page: its layout and its wiring (nothing is built or written before this is called)."""
    # Frames are written once and never change, so gradio serves them where they lie instead
    # of hashing and copying the current frame into its cache on every streamed update (~8 ms
    # per 1024 px frame; bench/streaming.py). Like allowed_paths, this serves all under it.
    gr.set_static_paths([SETTINGS.runs_root])
    backend_choices, backend_howtos = choices(BACKENDS)
    judge_choices, judge_howtos = choices(JUDGES)
    form: dict[str, Any] = {}  # RunForm field -> its control (page/run_tab/form.py)
    with gr.Blocks(title="Banana Space", delete_cache=DELETE_CACHE) as demo:
        # The first screen, on a projector and on a phone: the claim in one line, then actions.
        gr.Markdown(CLAIM, elem_id="claim")
        with gr.Row(elem_id="actions", equal_height=False):
            with gr.Column(scale=3):
                # Real chains first (shown once prepared, `real_chain_buttons`), then ours.
                examples_heading = gr.Markdown(real_chain_buttons()[0],
                                               elem_id="examples-heading")
                with gr.Row():
                    real = [gr.Button(visible=False, size="sm", elem_id=f"real-chain-{i}")
                            for i in range(REAL_SLOTS)]
                recorded = gr.Radio(recorded_choices(), value=None, elem_id="recorded",
                                    label="Open a recorded chain: instant, no key or GPU")
            with gr.Column(scale=2, min_width=300):
                with gr.Row():
                    run_button = gr.Button("Run", variant="primary", elem_id="run-button",
                                           min_width=80)
                    stop_button = gr.Button("Stop", variant="stop", elem_id="stop-button",
                                            min_width=80)
                    resume_button = gr.Button("Resume", elem_id="resume-button", min_width=80)
                gr.Markdown("Run copies the picture below (the first example until you pick "
                            "another) with the settings below.", elem_id="run-note")
                # The run's ZeroGPU seconds (quota.py); hidden while there is nothing to say.
                gpu_cost = gr.Markdown(elem_id="gpu-cost", visible=False)
                if SETTINGS.sign_in:  # hf_oauth on the card; anonymous visitors need nothing
                    with gr.Row(equal_height=True):
                        gr.LoginButton(size="sm", scale=0, min_width=200)
                        gr.Markdown(SIGN_IN_NOTE, elem_id="sign-in-note")
        with gr.Accordion("About this demo", open=False):
            gr.Markdown(ABOUT)
        with gr.Row():
            # ---- The result first (in the page's order too: a keyboard reaches it at once) ----
            with gr.Column(scale=2, elem_id="result"):
                status = gr.Markdown("Open a recorded chain, or press **Run**.", elem_id="status")
                summary = gr.Markdown(elem_id="summary")
                with gr.Row(equal_height=False):
                    with gr.Column(min_width=320):
                        # No buttons: Run, the slider and Share stay within a few tab stops.
                        before_after = gr.ImageSlider(label=compared(None, 0)["label"],
                                                      type="filepath", height=300,
                                                      elem_id="compare", buttons=[])
                        compare_step = gr.Slider(0, 1, value=1, step=1,
                                                 label="Compare frame i",
                                                 elem_id="compare-step", buttons=[])
                    with gr.Column(min_width=320):
                        plot = gr.Plot(show_label=False, elem_id="plot")
                        form["raw"] = gr.Checkbox(False,
                                                  label="Raw scores (one chart per metric)")
                with gr.Row(equal_height=False):
                    magnifier = gr.Image(label="Magnifier", interactive=False, height=220,
                                         elem_id="magnifier", buttons=[],
                                         alt_text="The same crop of the input and of frame i, "
                                                  "enlarged side by side")
                    frame = gr.Image(label="Newest frame (click it to magnify that spot)",
                                     interactive=False, height=220, elem_id="frame", buttons=[],
                                     alt_text="The newest frame of the chain")
                strip = gr.HTML("", label="All frames (click one for the full frame; arrow "
                                          "keys move between them)",
                                show_label=True, container=True, padding=True, elem_id="strip",
                                html_template='<div class="strip">${value}</div>',
                                css_template=STRIP_CSS, js_on_load=STRIP_JS)
                share = gr.HTML("", elem_id="share", html_template=SHARE_HTML,
                                css_template=SHARE_CSS, js_on_load=SHARE_JS)
                verdict = gr.Dataframe(headers=VERDICT_HEADERS,
                                       label="Does each metric detect it?", interactive=False,
                                       wrap=True, elem_id="verdict", buttons=[])
                with gr.Accordion("What the model said", open=False):
                    model_text = gr.Markdown()
                download = gr.File(label="Download the run (frames + scores + verdict)",
                                   elem_id="download", height=60, visible=False)
                run_id = gr.Textbox(visible=False)
                with gr.Accordion("Past runs", open=False):
                    with gr.Row():
                        run_picker = gr.Dropdown([], label="Run", scale=3,
                                                 allow_custom_value=True)
                        refresh = gr.Button("↻", scale=0)
                        open_button = gr.Button("Open", scale=1)
                with gr.Accordion("What am I looking at?", open=False, elem_id="help"):
                    gr.Markdown(HELP)
            # ---- What Run makes: the picture, the generator, the steps, and the rest ----
            with gr.Column(scale=1, min_width=300, elem_id="settings"):
                gr.Markdown("**Your picture** (or, for *Replay*, a zip / animated GIF / WebP)")
                form["upload"] = gr.File(EXAMPLES[0], label="Image", show_label=False,
                                         file_types=["image", ".zip"], type="filepath",
                                         elem_id="upload", height=130)
                input_preview = gr.Image(label="Input", interactive=False, height=120,
                                         show_label=False, alt_text="The picture you uploaded",
                                         visible=False, elem_id="input-preview")
                input_note = gr.Markdown()
                start_note = gr.Markdown(elem_id="start-note")
                bundled = example_thumbnails()
                examples = gr.Gallery(example_gallery(bundled),
                                      label="Example pictures (click one)",
                                      columns=4, height="auto", allow_preview=False,
                                      object_fit="cover", elem_id="examples", buttons=[])
                form["backend"] = gr.Dropdown(backend_choices, value="simulate",
                                              label="Generator", info=backend_howtos or None,
                                              elem_id="backend")
                # The profile is the simulation's own choice, so it sits beside the generator.
                form["profile"] = option_control(OPTIONS["profile"])
                form["steps"] = gr.Slider(1, MAX_STEPS, value=10, step=1, label="Steps (N)",
                                          elem_id="steps", buttons=[])
                with gr.Accordion("Replay a chain from the Hugging Face hub", open=False):
                    with gr.Row():
                        hub_source = gr.Textbox(label="A chain on the hub",
                                                placeholder="hf://datasets/kenantang/Banana100/…",
                                                elem_id="hub-source", scale=3)
                        hub_button = gr.Button("Replay it", size="sm", scale=1,
                                               elem_id="hub-replay")
                with gr.Accordion("Prompt, metrics and judges", open=False):
                    prompt_preset = gr.Dropdown([(p.label, k) for k, p in PROMPTS.items()],
                                                value="replicate", label="Prompt preset")
                    form["prompt"] = gr.Textbox(DEFAULT_PROMPT, label="Prompt", lines=2)
                    offered = visitor_metrics(SETTINGS.visitor_metrics)  # what visitors may ask
                    metric_preset = gr.Dropdown([name for name, names in PRESETS.items()
                                                 if set(names) <= set(offered)],
                                                value="CPU classics (4)",
                                                label="Metric preset")
                    form["metrics"] = gr.Dropdown(
                        offered, value=list(CPU_DEFAULTS), multiselect=True,
                        allow_custom_value=True,  # a preset's key; the server checks each name
                        label="Metrics (those this server offers)")
                    form["judges"] = gr.CheckboxGroup(
                        judge_choices, label="VLM judges (reference line)",
                        info=judge_howtos or None,
                        value=[e.info.name for e in JUDGES.values() if not e.unavailable_reason()])
                    form["judge_at"] = gr.Radio([(label, key) for key, label in JUDGE_AT.items()],
                                                value=default_judge_at(), label="Judges rate…",
                                                elem_id="judge-at")
                with gr.Accordion("Advanced", open=False):
                    # No precision: gradio would round 1.5 to 2; the server refuses it.
                    form["seed"] = gr.Number(0, label="Seed")
                    # Every other backend option, each made from its `Option` (page/run_tab/form.py).
                    for option in FORM_OPTIONS:
                        if option.name not in form:
                            form[option.name] = option_control(option)
            # The API's and MCP tools' own inputs and answer (page/api.py): never shown.
            with gr.Column(visible=False):
                api_image = gr.File(label="image", type="filepath")
                api_frames = gr.File(label="frames", type="filepath")
                api_steps = gr.Number(10, label="steps")  # no precision: 2.5 is refused
                api_generator = gr.Textbox("simulate", label="generator")
                api_metrics = gr.Textbox("", label="metrics")
                api_seed = gr.Number(0, label="seed")
                api_profile = gr.Textbox("", label="profile")
                api_run_id = gr.Textbox("", label="run_id")
                api_key_field = gr.Textbox("", label="api_key", type="password")
                api_token = gr.Textbox("", label="token", type="password")
                api_original = gr.File(label="original", type="filepath")
                api_edited = gr.File(label="edited", type="filepath")
                api_answer = gr.Textbox(label="answer (JSON)")
                api_only = gr.Button("API")
        with gr.Tabs() as tabs:
            leaderboard_tab.build()  # the committed results of `banana-space leaderboard`
            compare_tab.build(demo, EXAMPLES[0], tabs)  # two chains side by side, the lessons
        with gr.Accordion("Licences and terms", open=False, elem_id="licences-and-terms"):
            gr.Markdown(LICENCES)
        gr.Markdown("Banana Space · code under Apache-2.0 · **for non-commercial use**, because "
                    "every metric comes from pyiqa (PolyForm Noncommercial 1.0.0 and NTU "
                    "S-Lab License 1.0) · "
                    "[Licences and terms](#licences-and-terms) · "
                    "[Banana100 paper](https://arxiv.org/abs/2604.03400)", elem_id="footer")

        outputs = list(PageOutputs(
            status=status, frame=frame, strip=strip, plot=plot, verdict=verdict,
            model_text=model_text, download=download, run_id=run_id,
            before_after=before_after, compare_step=compare_step, summary=summary, share=share,
            magnifier=magnifier))
        run_form = inputs_of(form)
        upload, raw = form["upload"], form["raw"]
        # The page's plumbing is private: reachable only by what the page posts (and confined
        # there like everything else), never listed or offered to API clients or agents.
        plumbing = {"api_visibility": "private"}
        # A preview decodes the whole upload, and so does reading its start's condition: a few
        # at once, a few per visitor (guard.py).
        previews = {"concurrency_id": guard.PREVIEW_GROUP,
                    "concurrency_limit": guard.PREVIEWS_AT_ONCE, "show_progress": "hidden"}
        upload.change(preview, upload, [input_preview, input_note], **previews, **plumbing)
        demo.load(preview, upload, [input_preview, input_note], **previews, **plumbing)
        for shows in (upload.change, demo.load):  # apart from the preview: it takes a second
            shows(start_condition, upload, start_note, **previews, **plumbing)
        examples.select(pick_example, None, upload, **plumbing)
        prompt_preset.change(lambda key: PROMPTS[key].text, prompt_preset, form["prompt"],
                             **plumbing)
        metric_preset.change(lambda name: list(PRESETS[name]), metric_preset, form["metrics"],
                             **plumbing)
        # Chains share CHAINS_AT_ONCE places and one metric pool; how many one visitor may
        # queue is guard.py's (cheap events have their own places and never wait behind
        # chains). The page's streaming events stay callable by name (`/run`, `/resume`,
        # `/open`) but are not documented: their answers are widgets; the API answers in JSON.
        streaming = {"api_visibility": "undocumented", "concurrency_id": guard.CHAIN_GROUP,
                     "concurrency_limit": CHAINS_AT_ONCE,
                     "show_progress": "hidden"}  # the status line says what is happening
        run_button.click(run, run_form, outputs, api_name="run",
                         # A second click while a run goes on reaches the server, which says
                         # why it starts nothing (gradio's default drops it without a word).
                         trigger_mode="multiple", **streaming)
        hub_button.click(hub_credit, hub_source, input_note, **plumbing)
        hub_button.click(replay_hub, [hub_source, form["steps"], form["prompt"], form["metrics"],
                                      form["judges"], form["seed"], raw],
                         outputs, api_name="replay_hub", **streaming)
        stop_button.click(stop_run, api_token, status, api_name="stop", concurrency_limit=None)
        # The visitor's key box (a secret `Option`'s control): resume hands it to every secret
        # option the run's backend and judges take (`spec.keyed`).
        key_box = next(form[option.name] for option in FORM_OPTIONS if option.secret)
        resume_button.click(resume, [run_id, key_box, raw], outputs, api_name="resume",
                            **streaming)
        open_button.click(reopen, [run_picker, raw], outputs, api_name="open",
                          api_visibility="undocumented")
        recorded.select(open_recorded, [recorded, raw], outputs, api_name="open_recorded",
                        **plumbing)
        for index, button in enumerate(real):
            button.click(partial(open_real_chain, index), raw, outputs,
                         api_name=f"real_chain_{index}", **plumbing)
        # Loads that fill in the first screen show no progress: a pending Markdown is drawn at
        # a fifth of its opacity, unreadable (and an axe contrast failure) on a slow machine.
        demo.load(real_chain_buttons, None, [examples_heading, *real], api_name="real_chains",
                  show_progress="hidden", **plumbing)
        # A page opened while they are prepared shows them when they are, without a reload.
        real_timer = gr.Timer(REAL_CHAINS_POLL_S)
        real_timer.tick(real_chains_tick, None, [examples_heading, *real, real_timer],
                        api_name="real_chains_tick", show_progress="hidden", **plumbing)
        # Banana100's own starts lead the example pictures once their chains are prepared.
        for shown in (demo.load, real_timer.tick):
            shown(partial(example_gallery, bundled), None, examples, show_progress="hidden",
                  **plumbing)
        # The profile is the simulation's alone.
        form["backend"].change(lambda name: gr.update(visible=name == "simulate"),
                               form["backend"], form["profile"], **plumbing)
        # .change, not .release: arrow keys move the slider too, and the picture must follow.
        compare_step.change(compare, [run_id, compare_step], [before_after, magnifier, share],
                            show_progress="hidden", **plumbing)
        # The visitor's own choice is marked on the curves (a streaming run marks its newest).
        compare_step.input(marked_plot, [run_id, compare_step, raw], plot,
                           show_progress="hidden", **plumbing)
        frame.select(zoom_at, [run_id, compare_step], magnifier, **plumbing)
        raw.change(redraw, [run_id, raw], outputs, **plumbing)
        refresh.click(past_runs, None, run_picker, **plumbing)
        demo.load(past_runs, None, run_picker, **plumbing)
        demo.load(on_load, None, outputs, **plumbing).then(None, js=SCROLL_TO_RESULT_JS,
                                                           **plumbing)
        demo.load(warm_up_metrics, None, None, **plumbing)
        # The controls that change what a run books on ZeroGPU (quota.py).
        for name in ("upload", "steps", "backend", "judges", "judge_at", "prompt",
                     "num_inference_steps"):
            form[name].change(cost_note, run_form, gpu_cost, show_progress="hidden", **plumbing)
        demo.load(cost_note, run_form, gpu_cost, show_progress="hidden", **plumbing)
        form["backend"].change(steps_for_the_gpu, run_form, form["steps"],
                               show_progress="hidden", **plumbing)
        # The documented API, which is also the MCP server's list of tools.
        chains = {"concurrency_id": guard.CHAIN_GROUP, "concurrency_limit": CHAINS_AT_ONCE,
                  "show_progress": "hidden"}
        api_only.click(api.run_chain, [api_image, api_steps, api_generator, api_metrics,
                                       api_seed, api_profile, api_token], api_answer,
                       api_name="run_chain", **chains)
        api_only.click(api.score_chain, [api_frames, api_metrics, api_token], api_answer,
                       api_name="score_chain", **chains)
        api_only.click(api.resume_chain, [api_run_id, api_key_field, api_token], api_answer,
                       api_name="resume_chain", **chains)
        api_only.click(api.open_run, api_run_id, api_answer, api_name="open_run")
        api_only.click(api.list_options, None, api_answer, api_name="list_options")
        api_only.click(api.check_degradation, [api_original, api_edited], api_answer,
                       api_name="check_degradation", **chains)  # a chain's queue and caps
        # gradio's own helpers register undocumented events that a client can call by name
        # (the share button's `/lambda`, the examples' loader): plumbing too, so private.
        for event in demo.fns.values():
            if event.api_visibility == "undocumented" and event.api_name not in STREAMING:
                event.api_visibility = "private"
    return demo


def main() -> None:
    """Serve the page: what a killed process left behind is cleared first (before the page is
    built, since building it puts the example pictures' thumbnails into that same folder)."""
    disk.clear_stale(guard.ORPHAN_GRACE_S)
    SETTINGS.runs_root.mkdir(parents=True, exist_ok=True)
    demo = build()
    # No queue size: cheap events are never refused; chains are bounded by guard.py.
    demo.queue(max_size=None, default_concurrency_limit=8)
    guard.install(demo)
    gradio_patches.trust_no_proxy()  # who a visitor is: page/door/identity.py, never uvicorn's guess
    start_preparing(SETTINGS.runs_root)  # Banana100's own chains, where the hub is reachable
    # Outermost first: a body too large is refused before anything reads it; an MCP call's
    # caller is sealed before anything reads who asks.
    middleware = [Middleware(bodies.BodyLimit), Middleware(identity.SignInErrors),
                  Middleware(identity.McpCaller), Middleware(identity.BrowserCookie),
                  Middleware(served.PrivateFiles), Middleware(guard.UploadGuard)]
    demo.launch(allowed_paths=[str(SETTINGS.runs_root)], theme=THEME, css=PAGE_CSS, js=PAGE_JS,
                # a 64-Mpx PNG, or ~70 frames of 1024 px PNGs in a zip; gradio refuses more
                max_file_size=bodies.UPLOAD_BYTES, mcp_server=True,
                state_session_capacity=SESSIONS_KEPT, app_kwargs={"middleware": middleware})


if __name__ == "__main__":
    main()
