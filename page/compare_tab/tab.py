"""The Compare tab: one upload, two settings, two chains side by side (a `PairSpec`, run by
`page.runner` as any chain is: `banana_space.chain.lifecycle`), the lessons that set up a pair in
one click (`banana_space.compare.lessons`) and the "Why is it fooled?" panel
(`banana_space.explain`). The API's `compare_chains` tool (`page.api`) runs the same pair.

Both chains run under the tab's one stop flag (Stop stops both); a comparison stopped or
killed mid-run goes on as a pair (Resume both, its maker only). A comparison's link is
`?compare=<run A's id>`: it reopens both sides from run A's `compare.json`, read-only, for
anyone who has it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr

from banana_space.backends import REGISTRY as BACKENDS
from banana_space.backends.simulate import PROFILES
from banana_space.chain.comparison import Comparison, PairSpec, pair_rows
from banana_space.chain.runs import open_saved
from banana_space.chain.sides import SMOOTH_SIGMA
from banana_space.chain.spec import MAX_STEPS
from banana_space.compare.lessons import LESSONS, STEPS, lesson_sentence
from banana_space.compare.plots import pair_figure
from banana_space.explain.plots import contribution_figure, mscn_figure
from banana_space.explain.why import explain_sides, read_saved_frame, why_text
from banana_space.markup import escape_markdown
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.scores.catalog import CPU_DEFAULTS, visitor_metrics
from banana_space.sources.images import load_image
from banana_space.store.run import Run
from banana_space.verdict.columns import pair_cells, pair_headers
from banana_space.view import PairView, RunView
from page import runner
from page.compare_tab.sides import side_of
from page.door import join
from page.door.access import (
    REFUSALS,
    Refusal,
    brought_back,
    received,
    refusal,
    visitor_metric_names,
    whole_number,
)
from page.run_tab.handlers import stop_run
from page.run_tab.outputs import plot_data, strip_html
from page.settings import SETTINGS
from page.style import (
    SCROLL_TO_COMPARISON_JS,
    SHARE_CSS,
    SHARE_HTML,
    SHARE_JS,
    STRIP_CSS,
    STRIP_JS,
)

NOT_YET = "The answer appears here once both runs have their first checkpoint."


class CompareOutputs(NamedTuple):
    """The Compare tab's outputs, in the order gradio sends them."""

    status: Any
    lesson: Any
    step: Any
    frame_a: Any
    frame_b: Any
    strip_a: Any
    strip_b: Any
    plot: Any
    verdict: Any
    share: Any
    download: Any
    compare_id: Any
    why_text: Any
    why_mscn: Any
    why_bars: Any


# ---- what the tab shows -------------------------------------------------------------------------

def verdict_table(views: dict[str, RunView]) -> list[list[str]]:
    """The A/B verdict table: each score's verdict by the paper's test and its Δ at the last
    checkpoint the run reached, on both sides (`verdict.columns`' A/B columns)."""
    rows = pair_rows(views["A"].history, views["B"].history if "B" in views else None)
    return [pair_cells(row.metric, (row.a, row.b)) for row in rows]


def _frame(view: RunView | None, step: int) -> Any:
    path = view.frame_path(min(step, view.last_step)) if view and view.last_step >= 0 else None
    return path if path and Path(path).is_file() else None


def why_panel(views: dict[str, RunView], step: int) -> tuple[str, Any, Any]:
    """The "Why is it fooled?" panel at `step`: the sentences written from each side's
    decomposed change since step 1 and its bars, and the MSCN histograms (side A's input,
    step 1 and step i, and B's step i)."""
    last = min(v.last_step for v in views.values())
    if last < 1 or any(v.ended is None for v in views.values()):
        return "The decomposition appears once both runs have ended.", None, None
    step = max(1, min(step, last))
    readings = {"input": read_saved_frame(views["A"].frame_path(0)),
                "A step 1": read_saved_frame(views["A"].frame_path(1)),
                f"A step {step}": read_saved_frame(views["A"].frame_path(step))}
    if "B" in views:
        readings = {**dict(list(readings.items())[:2]),
                    f"A step {step}": readings[f"A step {step}"],
                    f"B step {step}": read_saved_frame(views["B"].frame_path(step))}
    explained = explain_sides({side: v.run_dir for side, v in views.items() if v.run_dir},
                              {side: list(v.history.infos) for side, v in views.items()}, step)
    bars = contribution_figure(explained, step)
    return (why_text(explained, step),
            plot_data(mscn_figure(readings, f"MSCN coefficients at step {step} "
                                            "against the fitted generalised Gaussian")),
            plot_data(bars) if bars else None)


def screen(pair: PairView, step: int | None, stopping: bool = False,
           with_why: bool = True) -> CompareOutputs:
    """Both sides as the tab shows them, at `step` (None: the newest both have)."""
    views, comparison = pair.views, pair.comparison
    newest = max(v.last_step for v in views.values())
    step = max(0, newest if step is None else min(step, newest))
    lines = [f"**{side}** ({comparison.label(side)}): {views[side].status()}"
             if side in views else f"**{side}** ❌ failed to start: "
                                    f"{escape_markdown(comparison.failed.get(side, ''))}"
             for side in ("A", "B")]
    if stopping:
        lines.insert(0, "⏹ **Stopping both…** (the frames made so far are kept)")
    lesson = LESSONS.get(comparison.lesson or "")
    sentence = ""
    if lesson and "B" in views:
        sentence = lesson_sentence(lesson.a_shows, lesson.b_shows,
                                   pair_rows(views["A"].history, views["B"].history))
    lesson_text = (f"**{lesson.title}.** {lesson.about}\n\n{sentence or NOT_YET}"
                   if lesson else "")
    run_a = Run(views["A"].run_dir) if views["A"].run_dir else None
    done = all(v.ended is not None for v in views.values())
    zipped = run_a is not None and done and run_a.compare_zip_path.is_file()
    why = why_panel(views, step) if with_why else (gr.skip(),) * 3
    return CompareOutputs(
        status="\n\n".join(lines), lesson=lesson_text,
        step=gr.update(maximum=max(1, newest), value=step),
        frame_a=_frame(views.get("A"), step), frame_b=_frame(views.get("B"), step),
        strip_a=strip_html(views["A"].screen().strip),
        strip_b=strip_html(views["B"].screen().strip) if "B" in views else "",
        plot=plot_data(pair_figure(views["A"].history,
                                   views["B"].history if "B" in views else None, step)),
        verdict=verdict_table(views),
        share=f"?compare={run_a.id}" if run_a else "",
        download=gr.update(value=str(run_a.compare_zip_path) if zipped else None,
                           visible=zipped),
        compare_id=run_a.id if run_a else None,
        why_text=why[0], why_mscn=why[1], why_bars=why[2])


def run_compare(upload: str | None, steps: float, metrics: list[str], lesson: str,
                a_generator: str, a_profile: str, a_smoothed: bool, a_prompt: str, a_seed: float,
                b_generator: str, b_profile: str, b_smoothed: bool, b_prompt: str, b_seed: float,
                request: gr.Request) -> Iterator[CompareOutputs]:
    """Start both chains from the upload and stream both sides as they come (the side fields
    in `pair.SIDE_FIELDS`' order: gradio hands a request only to a named parameter)."""
    if not upload:
        raise Refusal("Upload an image first (or keep the example).")
    side_a = side_of(a_generator, a_profile, a_smoothed, a_prompt, a_seed, "A")
    side_b = side_of(b_generator, b_profile, b_smoothed, b_prompt, b_seed, "B")
    steps, chosen = whole_number(steps, "Steps"), visitor_metric_names(metrics)
    try:
        loaded = load_image(received(upload))
    except REFUSALS as error:
        raise refusal(error) from None
    spec = PairSpec(loaded, steps, side_a, side_b, chosen, lesson or None)
    with runner.start(request, spec) as flight:
        assert flight.comparison is not None
        yield from runner.stream(flight, PairView(flight.comparison),
                                 lambda pair, stopping, last: screen(pair, None, stopping,
                                                                     with_why=last))


def resume_compare(run_id: str | None, request: gr.Request) -> Iterator[CompareOutputs]:
    """The comparison on screen (its run A) going on as a pair from where its chains were
    stopped or killed, both sides streamed as they come; only its maker may."""
    if not run_id:
        raise Refusal("Open or start a comparison first.")
    try:
        with runner.resume(request, run_id, pair=True) as flight:
            assert flight.comparison is not None
            pair = PairView.from_saved(flight.comparison, flight.saved)
            for side, view in pair.views.items():  # going on: no old ending, metrics first
                if flight.saved[side].meta.get("status") != "completed":
                    view.ended, view.started = None, False
            yield from runner.stream(flight, pair,
                                     lambda pair, stopping, last: screen(pair, None, stopping,
                                                                         with_why=last))
    except runner.Complete as complete:
        gr.Info(str(complete))
        yield CompareOutputs(*[gr.skip()] * len(CompareOutputs._fields))


def reopen(run_id: str, step: float | None = None) -> CompareOutputs:
    """Both sides of the comparison whose run A is `run_id`, as saved (anyone may look)."""
    comparison = Comparison.read(brought_back(run_id))
    if comparison is None:
        raise Refusal("That run is not part of a comparison.")
    saved = {}
    for side in ("A", "B"):
        if comparison.run_id(side):
            try:
                saved[side], _ = open_saved(brought_back(comparison.run_id(side)).path)
            except FileNotFoundError:
                raise Refusal("That comparison was deleted (old runs are removed to make "
                              "room).") from None
    chosen = None if step is None else whole_number(step, "The step")
    return screen(PairView.from_saved(comparison, saved), chosen)


def open_compare_link(request: gr.Request) -> tuple[Any, ...]:
    """`?compare=<id>` opens that comparison in the Compare tab."""
    run_id = request.query_params.get("compare")
    if not run_id:
        return (gr.skip(), *CompareOutputs(*[gr.skip()] * len(CompareOutputs._fields)))
    return (gr.Tabs(selected="compare"), *reopen(run_id))


def set_lesson(key: str) -> list[Any]:
    """A lesson's pair in the form: both sides, its steps, and the lesson's key."""
    lesson = LESSONS[key]
    values = []
    for side in (lesson.a, lesson.b):
        values += [side.backend, side.options.get("profile", ""), side.smoothed, side.prompt,
                   side.seed]
    return [key, STEPS, *values]


def show_step(run_id: str | None, step: float) -> CompareOutputs:
    if not run_id:
        return CompareOutputs(*[gr.skip()] * len(CompareOutputs._fields))
    return reopen(run_id, step)


# ---- the tab ------------------------------------------------------------------------------------

def _side_controls(name: str) -> list[Any]:
    simulate = [(p.label, key) for key, p in PROFILES.items()]
    with gr.Column(min_width=260):
        gr.Markdown(f"**Side {name}** ({'solid' if name == 'A' else 'dashed'} curves)")
        controls = [
            gr.Dropdown([(e.info.label, n) for n, e in BACKENDS.items()
                         if not e.info.plays_recording], value="simulate", label="Generator",
                        elem_id=f"compare-{name.lower()}-generator"),
            gr.Dropdown(simulate, value="nano-banana-pro" if name == "A" else "white-noise",
                        label="Profile (simulated)", elem_id=f"compare-{name.lower()}-profile"),
            gr.Checkbox(False, label=f"Smooth the start (Gaussian, σ {SMOOTH_SIGMA} px)",
                        elem_id=f"compare-{name.lower()}-smoothed"),
            gr.Textbox(DEFAULT_PROMPT, label="Prompt", lines=2),
            gr.Number(0, precision=0, label="Seed")]
    return controls


def build(demo: gr.Blocks, default_upload: str, tabs: gr.Tabs) -> gr.Button:
    """The Compare tab: its layout and its wiring, inside the page's `tabs` (a link
    `?compare=<id>` selects it); answers its button for the lesson the Vote tab runs (the room
    votes first, then sees the metrics)."""
    with gr.Tab("Compare two settings", id="compare", elem_id="compare-tab"):
        gr.Markdown("One picture, two settings, two chains side by side. Pick a **lesson** "
                    "(one click sets up the pair and runs it), or set A and B yourself.")
        with gr.Row():
            lesson_buttons = {key: gr.Button(lesson.title, size="sm",
                                              elem_id=f"lesson-{key}")
                              for key, lesson in LESSONS.items()}
            vote_first = gr.Button("Vote first, then look at the metrics", size="sm",
                                   elem_id="lesson-vote-first")
        lesson = gr.Textbox(visible=False)
        with gr.Row(equal_height=False):
            upload = gr.File(default_upload, label="Picture", type="filepath",
                             file_types=["image"], height=110, elem_id="compare-upload")
            steps = gr.Slider(1, MAX_STEPS, value=STEPS, step=1, label="Steps (each chain)",
                              elem_id="compare-steps", buttons=[])
            offered = visitor_metrics(SETTINGS.visitor_metrics)
            metrics = gr.Dropdown(offered, value=list(CPU_DEFAULTS), multiselect=True,
                                  label="Metrics (both sides)")
        with gr.Row(equal_height=False):
            fields = _side_controls("A") + _side_controls("B")
        with gr.Row():
            go = gr.Button("Compare", variant="primary", elem_id="compare-run")
            stop = gr.Button("Stop both", variant="stop", elem_id="compare-stop")
            resume = gr.Button("Resume both", elem_id="compare-resume")
        status = gr.Markdown(elem_id="compare-status")
        lesson_text = gr.Markdown(elem_id="compare-lesson")
        step = gr.Slider(0, 1, value=0, step=1, label="Step shown on both sides",
                         elem_id="compare-pair-step", buttons=[])
        with gr.Row():
            frame_a = gr.Image(label="A at this step", interactive=False, height=260,
                               elem_id="compare-frame-a", buttons=[])
            frame_b = gr.Image(label="B at this step", interactive=False, height=260,
                               elem_id="compare-frame-b", buttons=[])
        strips = [gr.HTML("", label=f"All frames of {name}", show_label=True, container=True,
                          elem_id=f"compare-strip-{name.lower()}",
                          html_template='<div class="strip">${value}</div>',
                          css_template=STRIP_CSS, js_on_load=STRIP_JS) for name in "AB"]
        plot = gr.Plot(show_label=False, elem_id="compare-plot")
        verdict = gr.Dataframe(headers=pair_headers(), label="A/B: does each score detect it? "
                               "(the paper's test)", interactive=False, wrap=True,
                               elem_id="compare-verdict", buttons=[])
        share = gr.HTML("", elem_id="compare-share", html_template=SHARE_HTML,
                        css_template=SHARE_CSS, js_on_load=SHARE_JS)
        download = gr.File(label="Download the comparison (both runs + the A/B table)",
                           elem_id="compare-download", height=60, visible=False)
        compare_id = gr.Textbox(visible=False)
        with gr.Accordion("Why is it fooled? (BRISQUE and NIQE's view)", open=True,
                          elem_id="why"):
            why_text = gr.Markdown(elem_id="why-text")
            with gr.Row():
                why_mscn = gr.Plot(show_label=False, elem_id="why-mscn")
                why_bars = gr.Plot(show_label=False, elem_id="why-bars")

    outputs = list(CompareOutputs(status, lesson_text, step, frame_a, frame_b, *strips, plot,
                                  verdict, share, download, compare_id, why_text, why_mscn,
                                  why_bars))
    plumbing, chains = join.PLUMBING, join.CHAIN_EVENTS
    inputs = [upload, steps, metrics, lesson, *fields]
    join.runs_two_chains(go.click(run_compare, inputs, outputs, **plumbing, **chains))
    for key, button in lesson_buttons.items():
        join.runs_two_chains(button.click(lambda key=key: set_lesson(key), None,
                                          [lesson, steps, *fields], **plumbing).then(
            run_compare, inputs, outputs, **plumbing, **chains))
    for control in fields:  # a pair set by hand is no lesson
        control.input(lambda: "", None, lesson, **plumbing)
    stop.click(_stop, None, status, concurrency_limit=None, **plumbing)
    resume.click(resume_compare, [compare_id], outputs, **plumbing, **chains)
    # .input, not .release: the arrow keys move the slider too, and both sides must follow.
    step.input(show_step, [compare_id, step], outputs, show_progress="hidden", **plumbing)
    demo.load(open_compare_link, None, [tabs, *outputs], **plumbing).then(
        None, js=SCROLL_TO_COMPARISON_JS, **plumbing)
    return vote_first


def _stop(request: gr.Request) -> Any:
    """Stop both chains of this tab's comparison (they share the tab's one flag)."""
    return stop_run("", request)
