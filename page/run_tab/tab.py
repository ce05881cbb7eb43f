"""The Run tab, the page's main part, laid out and wired: the first screen (the claim, recorded
and real chains, Run / Stop / Resume), the result (status, finding, before/after, curves,
magnifier, frames, verdict table, download, past runs, help) and the settings (the picture, the
generator, the steps, the prompt, metrics and judges). What each event does is `handlers.py`'s
and `pictures.py`'s; the Run form's fields are `form.py`'s.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import gradio as gr

from banana_space.backends import OPTIONS
from banana_space.backends import REGISTRY as BACKENDS
from banana_space.chain.quota import default_judge_at
from banana_space.chain.spec import MAX_STEPS
from banana_space.judges import REGISTRY as JUDGES
from banana_space.judges.schedule import JUDGE_AT
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.prompts import PRESETS as PROMPTS
from banana_space.scores.catalog import CPU_DEFAULTS, FIDELITY, PRESETS, visitor_metrics
from banana_space.scores.pool import POOL
from banana_space.verdict.columns import VERDICT_HEADERS
from page.content import (
    ABOUT,
    CLAIM,
    DUPLICATE_LABEL,
    EXAMPLES,
    HELP,
    SIGN_IN_NOTE,
    SIGN_IN_ON_A_SPACE,
)
from page.door.join import CHAIN_EVENTS, PLUMBING, PREVIEW_GROUP, PREVIEWS_AT_ONCE
from page.run_tab import first_look
from page.run_tab.form import FORM_OPTIONS, inputs_of, option_control
from page.run_tab.handlers import (
    compare,
    cost_note,
    hub_credit,
    marked_plot,
    on_load,
    open_past,
    open_real_chain,
    open_recorded,
    past_runs,
    redraw,
    reopen,
    replay_hub,
    resume,
    run,
    steps_for_the_gpu,
    stop_run,
    zoom_at,
)
from page.run_tab.outputs import PageOutputs, compared
from page.run_tab.pictures import (
    REAL_CHAINS_POLL_S,
    REAL_SLOTS,
    example_gallery,
    example_thumbnails,
    pick_example,
    preview,
    real_chain_buttons,
    real_chains_tick,
    recorded_choices,
    start_condition,
)
from page.settings import SETTINGS
from page.style import (
    ANIMATION_CSS,
    ANIMATION_HTML,
    SCROLL_TO_RESULT_JS,
    SHARE_CSS,
    SHARE_HTML,
    SHARE_JS,
    STRIP_CSS,
    STRIP_JS,
)

WARMED = threading.Event()  # the metric pool's warm-up has been started
# The page's streaming events stay callable by name (`/run`, `/resume`, `/open`) but are not
# documented: their answers are widgets; the API answers in JSON.
STREAMING = {"api_visibility": "undocumented", **CHAIN_EVENTS}


class RunTab:
    """The Run tab's components that its events read or write, set as it is laid out; `form`
    maps each field of the Run form (`form.RunForm`) to its control."""

    def __init__(self) -> None:
        self.form: dict[str, Any] = {}


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


def warm_up_metrics() -> None:
    """On the first visit, load torch, pyiqa and the default metrics in the background, so
    that the first run's first frame does not wait for them (bench/startup.py)."""
    if not WARMED.is_set():
        WARMED.set()
        threading.Thread(target=lambda: [POOL.unavailable_reason(name) for name in
                                         (*CPU_DEFAULTS, *FIDELITY)], daemon=True).start()


def build(demo: gr.Blocks) -> RunTab:
    """The Run tab: its layout, then its wiring; its components, for the tabs that redraw
    them (the Vote tab's live count)."""
    tab = RunTab()
    _first_screen(tab)
    first_look.lay_out()
    with gr.Accordion("About this demo", open=False):
        gr.Markdown(ABOUT if SETTINGS.sign_in else f"{ABOUT}\n\n{SIGN_IN_ON_A_SPACE}",
                    elem_id="about")
    with gr.Row():
        # The result first (in the page's order too: a keyboard reaches it at once).
        with gr.Column(scale=2, elem_id="result"):
            _result(tab)
            _below_the_result(tab)
        with gr.Column(scale=1, min_width=300, elem_id="settings"):
            _picture(tab)
            _settings(tab)
    tab.outputs = list(PageOutputs(
        status=tab.status, frame=tab.frame, strip=tab.strip, plot=tab.plot,
        verdict=tab.verdict, model_text=tab.model_text, download=tab.download,
        run_id=tab.run_id, before_after=tab.before_after, compare_step=tab.compare_step,
        summary=tab.summary, share=tab.share, animation=tab.animation,
        magnifier=tab.magnifier))
    _wire_form(demo, tab)
    _wire_chains(tab)
    _wire_opening(demo, tab)
    _wire_view(tab)
    return tab


# ---- the layout ---------------------------------------------------------------------------------

def _first_screen(tab: RunTab) -> None:
    """On a projector and on a phone: the claim in one line, then the actions."""
    gr.Markdown(CLAIM, elem_id="claim")
    with gr.Row(elem_id="actions", equal_height=False):
        with gr.Column(scale=3):
            # Real chains first (shown once prepared, `real_chain_buttons`), then ours.
            tab.examples_heading = gr.Markdown(real_chain_buttons()[0],
                                               elem_id="examples-heading")
            with gr.Row():
                tab.real = [gr.Button(visible=False, size="sm", elem_id=f"real-chain-{i}")
                            for i in range(REAL_SLOTS)]
            tab.recorded = gr.Radio(recorded_choices(), value=None, elem_id="recorded",
                                    label="Open a recorded chain: instant, no key or GPU")
        with gr.Column(scale=2, min_width=300):
            with gr.Row():
                tab.run_button = gr.Button("Run", variant="primary", elem_id="run-button",
                                           min_width=80)
                tab.stop_button = gr.Button("Stop", variant="stop", elem_id="stop-button",
                                            min_width=80)
                tab.resume_button = gr.Button("Resume", elem_id="resume-button", min_width=80)
            gr.Markdown("Run copies the picture below (the first example until you pick "
                        "another) with the settings below.", elem_id="run-note")
            # The run's ZeroGPU seconds (quota.py); hidden while there is nothing to say.
            tab.gpu_cost = gr.Markdown(elem_id="gpu-cost", visible=False)
            if SETTINGS.sign_in:  # hf_oauth on the card; anonymous visitors need nothing
                with gr.Row(equal_height=True):
                    gr.LoginButton(size="sm", scale=0, min_width=200)
                    gr.Markdown(SIGN_IN_NOTE, elem_id="sign-in-note")
            if SETTINGS.space_id:  # gradio's: a teacher takes a copy, as Spaces users expect
                gr.DuplicateButton(DUPLICATE_LABEL, size="sm", elem_id="duplicate")
            # /stop's token (an API caller's); the page's Stop sends it blank.
            tab.stop_token = gr.Textbox("", label="token", type="password", visible=False)


def _result(tab: RunTab) -> None:
    """The status, the finding, the before/after slider beside the curves, the magnifier."""
    tab.status = gr.Markdown("Open a recorded chain, or press **Run**.", elem_id="status")
    tab.summary = gr.Markdown(elem_id="summary")
    with gr.Row(equal_height=False):
        with gr.Column(min_width=320):
            # No buttons: Run, the slider and Share stay within a few tab stops.
            tab.before_after = gr.ImageSlider(label=compared(None, 0)["label"],
                                              type="filepath", height=300, elem_id="compare",
                                              buttons=[])
            tab.compare_step = gr.Slider(0, 1, value=1, step=1, label="Compare frame i",
                                         elem_id="compare-step", buttons=[])
        with gr.Column(min_width=320):
            tab.plot = gr.Plot(show_label=False, elem_id="plot")
            tab.form["raw"] = gr.Checkbox(False, label="Raw scores (one chart per metric)")
    with gr.Row(equal_height=False):
        tab.magnifier = gr.Image(label="Magnifier", interactive=False, height=220,
                                 elem_id="magnifier", buttons=[],
                                 alt_text="The same crop of the input and of frame i, "
                                          "enlarged side by side")
        tab.frame = gr.Image(label="Newest frame (click it to magnify that spot)",
                             interactive=False, height=220, elem_id="frame", buttons=[],
                             alt_text="The newest frame of the chain")


def _below_the_result(tab: RunTab) -> None:
    """The strip of frames, the share link, the chain's animation, the verdict table, what the
    model said, the download, past runs and the help."""
    tab.strip = gr.HTML("", label="All frames (click one for the full frame; arrow keys move "
                                  "between them)",
                        show_label=True, container=True, padding=True, elem_id="strip",
                        html_template='<div class="strip">${value}</div>',
                        css_template=STRIP_CSS, js_on_load=STRIP_JS)
    tab.share = gr.HTML("", elem_id="share", html_template=SHARE_HTML, css_template=SHARE_CSS,
                        js_on_load=SHARE_JS)
    tab.animation = gr.HTML("", elem_id="animation", html_template=ANIMATION_HTML,
                            css_template=ANIMATION_CSS, js_on_load=None)  # once it is made
    tab.verdict = gr.Dataframe(headers=VERDICT_HEADERS, label="Does each metric detect it?",
                               interactive=False, wrap=True, elem_id="verdict", buttons=[])
    with gr.Accordion("What the model said", open=False):
        tab.model_text = gr.Markdown()
    tab.download = gr.File(label="Download the run (frames + scores + verdict) and its animation",
                           elem_id="download", height=60, visible=False)
    tab.run_id = gr.Textbox(visible=False)
    with gr.Accordion("Past runs", open=False):
        tab.past_gallery = gr.Gallery([], label="Your runs, newest first (click one to open it)",
                                      columns=4, height="auto", allow_preview=False,
                                      object_fit="cover", elem_id="past-runs", buttons=[])
        tab.past_listed = gr.State([])  # the run ids in the thumbnails' order
        with gr.Row():
            tab.run_picker = gr.Dropdown([], label="Run", scale=3, allow_custom_value=True)
            tab.refresh = gr.Button("↻", scale=0)
            tab.open_button = gr.Button("Open", scale=1)
    tab.past = [tab.run_picker, tab.past_gallery, tab.past_listed]
    with gr.Accordion("What am I looking at?", open=False, elem_id="help"):
        gr.Markdown(HELP)


def _picture(tab: RunTab) -> None:
    """What Run copies: the upload (the first example until another is picked), its preview
    and notes, and the example pictures."""
    gr.Markdown("**Your picture** (or, for *Replay*, a zip / animated GIF / WebP)")
    tab.form["upload"] = gr.File(EXAMPLES[0], label="Image", show_label=False,
                                 file_types=["image", ".zip"], type="filepath",
                                 elem_id="upload", height=130)
    tab.input_preview = gr.Image(label="Input", interactive=False, height=120,
                                 show_label=False, alt_text="The picture you uploaded",
                                 visible=False, elem_id="input-preview")
    tab.input_note = gr.Markdown()
    tab.start_note = gr.Markdown(elem_id="start-note")
    tab.bundled = example_thumbnails()
    tab.examples = gr.Gallery(example_gallery(tab.bundled), label="Example pictures (click one)",
                              columns=4, height="auto", allow_preview=False, object_fit="cover",
                              elem_id="examples", buttons=[])


def _settings(tab: RunTab) -> None:
    """The generator, the steps, a hub replay, the prompt, metrics and judges, the rest."""
    backend_choices, backend_howtos = choices(BACKENDS)
    judge_choices, judge_howtos = choices(JUDGES)
    form = tab.form
    form["backend"] = gr.Dropdown(backend_choices, value="simulate", label="Generator",
                                  info=backend_howtos or None, elem_id="backend")
    # The profile is the simulation's own choice, so it sits beside the generator.
    form["profile"] = option_control(OPTIONS["profile"])
    form["steps"] = gr.Slider(1, MAX_STEPS, value=10, step=1, label="Steps (N)",
                              elem_id="steps", buttons=[])
    with gr.Accordion("Replay a chain from the Hugging Face hub", open=False):
        with gr.Row():
            tab.hub_source = gr.Textbox(label="A chain on the hub",
                                        placeholder="hf://datasets/kenantang/Banana100/…",
                                        elem_id="hub-source", scale=3)
            tab.hub_button = gr.Button("Replay it", size="sm", scale=1, elem_id="hub-replay")
    with gr.Accordion("Prompt, metrics and judges", open=False):
        tab.prompt_preset = gr.Dropdown([(p.label, k) for k, p in PROMPTS.items()],
                                        value="replicate", label="Prompt preset")
        form["prompt"] = gr.Textbox(DEFAULT_PROMPT, label="Prompt", lines=2)
        offered = visitor_metrics(SETTINGS.visitor_metrics)  # what visitors may ask
        tab.metric_preset = gr.Dropdown([name for name, names in PRESETS.items()
                                         if set(names) <= set(offered)],
                                        value="CPU classics (4)", label="Metric preset")
        form["metrics"] = gr.Dropdown(
            offered, value=list(CPU_DEFAULTS), multiselect=True,
            allow_custom_value=True,  # a preset's key; the server checks each name
            label="Metrics (those this server offers)")
        form["judges"] = gr.CheckboxGroup(
            judge_choices, label="VLM judges (reference line)", info=judge_howtos or None,
            value=[e.info.name for e in JUDGES.values() if not e.unavailable_reason()])
        form["judge_at"] = gr.Radio([(label, key) for key, label in JUDGE_AT.items()],
                                    value=default_judge_at(), label="Judges rate…",
                                    elem_id="judge-at")
    with gr.Accordion("Advanced", open=False):
        # No precision: gradio would round 1.5 to 2; the server refuses it.
        form["seed"] = gr.Number(0, label="Seed")
        # Every other backend option, each made from its `Option` (form.py).
        for option in FORM_OPTIONS:
            if option.name not in form:
                form[option.name] = option_control(option)


# ---- the wiring ---------------------------------------------------------------------------------

def _wire_form(demo: gr.Blocks, tab: RunTab) -> None:
    """The upload's preview and condition, the example pictures, the presets, the profile,
    and the line under Run on what a run books on ZeroGPU."""
    form, upload = tab.form, tab.form["upload"]
    # A preview decodes the whole upload, and so does reading its start's condition: a few at
    # once, a few per visitor (join.py).
    previews = {"concurrency_id": PREVIEW_GROUP, "concurrency_limit": PREVIEWS_AT_ONCE,
                "show_progress": "hidden", **PLUMBING}
    for shows in (upload.change, demo.load):  # the condition apart: it takes a second
        shows(preview, upload, [tab.input_preview, tab.input_note], **previews)
        shows(start_condition, upload, tab.start_note, **previews)
    tab.examples.select(pick_example, None, upload, **PLUMBING)
    tab.prompt_preset.change(lambda key: PROMPTS[key].text, tab.prompt_preset, form["prompt"],
                             **PLUMBING)
    tab.metric_preset.change(lambda name: list(PRESETS[name]), tab.metric_preset,
                             form["metrics"], **PLUMBING)
    # The profile is the simulation's alone.
    form["backend"].change(lambda name: gr.update(visible=name == "simulate"), form["backend"],
                           form["profile"], **PLUMBING)
    run_form = inputs_of(form)
    for name in ("upload", "steps", "backend", "judges", "judge_at", "prompt",
                 "num_inference_steps"):  # the controls that change what a run books (quota.py)
        form[name].change(cost_note, run_form, tab.gpu_cost, show_progress="hidden", **PLUMBING)
    demo.load(cost_note, run_form, tab.gpu_cost, show_progress="hidden", **PLUMBING)
    form["backend"].change(steps_for_the_gpu, run_form, form["steps"], show_progress="hidden",
                           **PLUMBING)


def _wire_chains(tab: RunTab) -> None:
    """Run, a hub replay, Stop and Resume. Chains share `join.CHAINS_AT_ONCE` places and one
    metric pool; how many one visitor may queue is join.py's (cheap events have their own
    places and never wait behind chains)."""
    form, raw = tab.form, tab.form["raw"]
    # A visitor queued behind other chains sees gradio's own "queue: 3/5" and its clock on the
    # frame (on the status Markdown gradio's tracker is clipped out of sight, and a pending
    # Markdown fades); once the chain runs, the status line says how far it is.
    queued = {**STREAMING, "show_progress": "full", "show_progress_on": tab.frame}
    ran = tab.run_button.click(run, inputs_of(form), tab.outputs, api_name="run",
                               # A second click while a run goes on reaches the server, which
                               # says why it starts nothing (gradio's default drops it without
                               # a word).
                               trigger_mode="multiple", **queued)
    tab.hub_button.click(hub_credit, tab.hub_source, tab.input_note, **PLUMBING)
    tab.hub_button.click(replay_hub, [tab.hub_source, form["steps"], form["prompt"],
                                      form["metrics"], form["judges"], form["seed"], raw],
                         tab.outputs, api_name="replay_hub", **queued)
    tab.stop_button.click(stop_run, tab.stop_token, tab.status, api_name="stop",
                          concurrency_limit=None)
    # The visitor's key box (a secret `Option`'s control): resume hands it to every secret
    # option the run's backend and judges take (`spec.keyed`).
    key_box = next(form[option.name] for option in FORM_OPTIONS if option.secret)
    resumed = tab.resume_button.click(resume, [tab.run_id, key_box, raw], tab.outputs,
                                      api_name="resume", **queued)
    for ended in (ran, resumed):  # Past runs lists a run once it has ended, without a ↻
        ended.then(past_runs, None, tab.past, **PLUMBING)


def _wire_opening(demo: gr.Blocks, tab: RunTab) -> None:
    """Opening a run: past runs, a bundled recording, a prepared real chain, a shared link."""
    raw = tab.form["raw"]
    tab.open_button.click(reopen, [tab.run_picker, raw], tab.outputs, api_name="open",
                          api_visibility="undocumented")
    tab.recorded.select(open_recorded, [tab.recorded, raw], tab.outputs,
                        api_name="open_recorded", **PLUMBING)
    for index, button in enumerate(tab.real):
        button.click(partial(open_real_chain, index), raw, tab.outputs,
                     api_name=f"real_chain_{index}", **PLUMBING)
    # Loads that fill in the first screen show no progress: a pending Markdown is drawn at a
    # fifth of its opacity, unreadable (and an axe contrast failure) on a slow machine.
    demo.load(real_chain_buttons, None, [tab.examples_heading, *tab.real],
              api_name="real_chains", show_progress="hidden", **PLUMBING)
    # A page opened while they are prepared shows them when they are, without a reload.
    timer = gr.Timer(REAL_CHAINS_POLL_S)
    timer.tick(real_chains_tick, None, [tab.examples_heading, *tab.real, timer],
               api_name="real_chains_tick", show_progress="hidden", **PLUMBING)
    # Banana100's own starts lead the example pictures once their chains are prepared.
    for shown in (demo.load, timer.tick):
        shown(partial(example_gallery, tab.bundled), None, tab.examples,
              show_progress="hidden", **PLUMBING)
    tab.refresh.click(past_runs, None, tab.past, **PLUMBING)
    demo.load(past_runs, None, tab.past, **PLUMBING)
    tab.past_gallery.select(open_past, [tab.past_listed, raw], tab.outputs, **PLUMBING)
    demo.load(on_load, None, tab.outputs, **PLUMBING).then(None, js=SCROLL_TO_RESULT_JS,
                                                           **PLUMBING)
    demo.load(warm_up_metrics, None, None, **PLUMBING)


def _wire_view(tab: RunTab) -> None:
    """The compared frame, the marked curve, the magnifier, and raw scores or Δ."""
    # The step as sent, unchecked by gradio against the slider's maximum: a step of the run
    # shown before (30, a recording) may arrive after a shorter run's (5) has shrunk it, and
    # gradio's check answered with an error toast. The handlers check it themselves (a whole
    # number; a step the run lacks shows nothing).
    step_as_sent = {"preprocess": False, **PLUMBING}
    # .change, not .release: arrow keys move the slider too, and the picture must follow.
    tab.compare_step.change(compare, [tab.run_id, tab.compare_step],
                            [tab.before_after, tab.magnifier, tab.share],
                            show_progress="hidden", **step_as_sent)
    # The visitor's own choice is marked on the curves (a streaming run marks its newest).
    tab.compare_step.input(marked_plot, [tab.run_id, tab.compare_step, tab.form["raw"]],
                           tab.plot, show_progress="hidden", **step_as_sent)
    tab.frame.select(zoom_at, [tab.run_id, tab.compare_step], tab.magnifier, **step_as_sent)
    tab.form["raw"].change(redraw, [tab.run_id, tab.form["raw"]], tab.outputs, **PLUMBING)
