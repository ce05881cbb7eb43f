"""The public API and MCP tools: a chain run, scored or resumed, answered as compact JSON.

Gradio serves every public endpoint twice: to `gradio_client` ("Use via API" shows these
docstrings) and, with `mcp_server=True`, as MCP tools an agent can call. Each tool waits for
its chain to end and answers with the verdict, not a stream of widgets (the page's own
streaming events are `/run`, `/resume` and `/open`). Same rules as the page: run ids only,
uploads only, clear errors. gradio's MCP server is stateless (every MCP call reaches the app
through one client), so a chain here belongs to no session: each caller may give it a token
of its own, the only key that stops it (`stop_run`), and a caller that disconnects stops it.

The docstrings are what an agent reads, through gradio's parser: it keeps one line per
argument, so each argument's description is one line (the rest goes in the text above Args),
and it joins the Returns lines with ", ", so each Returns line is one item.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import gradio as gr

from banana_space import gate
from banana_space.backends import REGISTRY as BACKENDS
from banana_space.chain.comparison import PairSpec
from banana_space.chain.quota import per_step_note
from banana_space.chain.spec import MAX_STEPS, RunSpec
from banana_space.compare.lessons import STEPS
from banana_space.judges import REGISTRY as JUDGES
from banana_space.prompts import PRESETS as PROMPTS
from banana_space.scores.catalog import CPU_DEFAULTS, FIDELITY, PRESETS, visitor_metrics
from banana_space.scores.pool import POOL
from banana_space.sources.images import load_image
from banana_space.store.run import Run
from banana_space.verdict.analysis import FLOOR_RULE, PAPER_TEST
from banana_space.verdict.columns import api_cells
from page import runner
from page.compare_tab.sides import side_from_json
from page.door import guard, join
from page.door.access import (
    REFUSALS,
    Refusal,
    brought_back,
    confined,
    generator_of,
    received,
    refusal,
    visitor_metric_names,
    whole_number,
)
from page.door.identity import visitor_of
from page.door.stop_flags import MIN_TOKEN
from page.run_tab.outputs import page_link
from page.settings import SETTINGS
from page.vote_tab import casting

NOTICES_SHOWN = 5
# What the numbers in `summary` mean, for an agent that reads no README.
DELTA_RULE = ("the paper's, oriented: delta_i = score_i - score_1 (from step 1, the first copy), "
              f"negative = worse; detects = by {PAPER_TEST}; detects_robust = at every "
              f"checkpoint, {FLOOR_RULE}; checkpoints_used = the steps both were read at "
              "(fewer than the paper's where the run is shorter); delta_since_input = the same "
              "from step 0, the input, at the last step, and "
              "worse_than_input = negative since the input at every checkpoint (ours)")


def link(request: gr.Request, run_id: str) -> str:
    """The page that shows this run: on a Space its Hub page, else the host asked."""
    return page_link(request, f"run={run_id}")


def summary(run: Run, request: gr.Request) -> dict[str, Any]:
    """What an agent needs from a run: where it is, how it ended, each metric's verdict."""
    saved = run.load()
    meta = saved.meta
    rows = run.ledger().with_people(saved.history.verdict(), saved.last_step)
    verdict = {row.metric: api_cells(row) for row in rows}
    return {"run": run.id, "link": link(request, run.id),
            "status": run.live_status(meta.get("status", "running")),
            "reason": meta.get("reason") or None,
            "last_step": saved.last_step, "steps": meta.get("steps"),
            "verdict": verdict, "unavailable": meta.get("unavailable") or {},
            "notices": [n["message"] for n in meta.get("notices", [])][-NOTICES_SHOWN:],
            "delta": DELTA_RULE}


def compact(answer: dict[str, Any]) -> str:
    """JSON text without spaces: what an agent (or `json.loads`) reads. gradio hands a tool's
    dict to MCP clients as Python's repr, which is not JSON."""
    return json.dumps(answer, separators=(",", ":"), ensure_ascii=False)


def _answer(flight: contextlib.AbstractContextManager[runner.Flight], request: gr.Request
            ) -> str:
    """Wait for the end of a chain the runner started (`runner.start`, `runner.resume`) and
    answer with its summary."""
    with flight as running:
        return compact(summary(runner.until_end(running, request), request))


def run_chain(image: str | None, steps: float, generator: str, metrics: str, seed: float,
              profile: str, token: str = "", request: gr.Request = None) -> str:
    """Run a replication chain (Banana100): the image is given back to the generator `steps`
    times with "Produce an exact replica…", and every frame is scored. Waits for the end; a
    chain started without a token stops only at its end or when its caller disconnects.
    {gpu_cost}

    Args:
        image: the input image (PNG, JPEG or WebP; at most 64 megapixels).
        steps: how many times the output is fed back in, 1-100.
        generator: a generator name from list_options; "simulate" runs anywhere, no key.
        metrics: metric names or presets, comma-separated (list_options); blank: the 4 CPU classics.
        seed: a whole number 0 .. 4294967295; same seed, same simulated frames.
        profile: a profile name, for a generator that takes one (see list_options); blank: default.
        token: a secret of yours (16+ characters): stop_run with it stops this chain.
    Returns:
        JSON text: run id, link, status
        and per metric delta_5/10/20 (negative = worse) and detects.
    """
    if not image:
        raise Refusal("Give an input image.")
    generator, options = generator_of(generator, profile)
    steps, seed = whole_number(steps, "Steps"), whole_number(seed, "The seed")
    try:
        loaded = load_image(received(image))
    except REFUSALS as error:
        raise refusal(error) from None
    spec = RunSpec.of_image(loaded, steps, generator, backend_options=options, seed=seed,
                            metrics=visitor_metric_names(metrics))
    return _answer(runner.start(request, spec, token=token), request)


run_chain.__doc__ = run_chain.__doc__.replace("{gpu_cost}", per_step_note())


def score_chain(frames: str | None, metrics: str, token: str = "",
                request: gr.Request = None) -> str:
    """Score a chain recorded elsewhere: every frame against step 0, with the paper's verdict.
    A zip's images are named by step: step_000.png, step_001.png … (or input.png beside copies
    1.png, 2.png …); a gap in the numbers stays a gap.

    Args:
        frames: the chain: a zip of its images named by step, or an animated GIF/WebP.
        metrics: metric names or presets, comma-separated (list_options); blank: the 4 CPU classics.
        token: a secret of yours (16+ characters): stop_run with it stops this chain.
    Returns:
        JSON text: run id, link, status
        and per metric delta_5/10/20 (negative = worse) and detects.
    """
    if not frames:
        raise Refusal("Give the chain's frames: a zip of images or an animated GIF/WebP.")

    spec = RunSpec.replay(received(frames), metrics=visitor_metric_names(metrics))
    return _answer(runner.start(request, spec, token=token), request)


def resume_chain(run_id: str, api_key: str, token: str = "", request: gr.Request = None) -> str:
    """Continue a stopped or interrupted run of yours (one you started) from its last complete
    frame, then answer as run_chain does.

    Args:
        run_id: the run's id (the `run=` part of its link).
        api_key: a Gemini key, where the run's generator or judge needs one; never stored.
        token: a secret of yours (16+ characters): stop_run with it stops this chain.
    Returns:
        JSON text: as run_chain.
    """
    try:
        return _answer(runner.resume(request, run_id, key=api_key, token=token), request)
    except runner.Complete as complete:
        raise refusal(complete) from None


def open_run(run_id: str, request: gr.Request) -> str:
    """A run's status and per-metric verdict so far, by its id. Its status is "running" while
    the run is being made, and "interrupted" where its maker went away mid-run (resume_chain
    continues it).

    Args:
        run_id: the run's id (the `run=` part of its link).
    Returns:
        JSON text: as run_chain answers.
    """
    run = brought_back(run_id)  # fetched again if wiped
    try:
        return compact(summary(run, request))
    except REFUSALS as error:  # a damaged run: one line, never a traceback
        raise refusal(error) from None


def list_options() -> str:
    """What this server can do: generators (with whether each runs here, and why not),
    metric presets, judges and prompt presets.

    Returns:
        JSON text: generators
        metric_presets
        metrics_offered (the metrics a caller may choose here)
        checked_metrics
        judges
        prompt_presets
        max_steps.
    """
    def entries(registry: dict[str, Any]) -> list[dict[str, Any]]:
        found = []
        for name, entry in registry.items():
            why = entry.unavailable_reason()
            found.append({"name": name, "label": entry.info.label, "runs_here": why is None,
                          **({"why_not": why} if why else {}),
                          **({"options": list(entry.info.option_names)}
                             if entry.info.options else {})})
        return found

    # Loading a metric may download weights, so only those loaded at start-up are checked;
    # the others are tried when a run asks for them, and a failure is reported per metric.
    checked = {name: POOL.unavailable_reason(name) or "runs here"
               for name in (*CPU_DEFAULTS, *FIDELITY)}
    return compact({"generators": entries(BACKENDS), "judges": entries(JUDGES),
                    "metric_presets": {name: list(names) for name, names in PRESETS.items()},
                    "metrics_offered": visitor_metrics(SETTINGS.visitor_metrics),
                    "checked_metrics": checked, "max_steps": MAX_STEPS,
                    "prompt_presets": {key: p.text for key, p in PROMPTS.items()}})


def check_degradation(original: str | None, edited: str | None,
                      request: gr.Request = None) -> str:
    """The quality gate for editing agents: has the image degraded since the original? Call it
    after each edit and stop before the chain collapses (Banana100: copies of copies decay).

    Args:
        original: the image before any edit (PNG, JPEG or WebP).
        edited: the edited image, or a zip / animated GIF of several edits in order.
    Returns:
        JSON text: degraded (true/false, the last edit)
        worse (the measures past their noise floor)
        first_degraded
        look_at ([left, top, right, bottom]: where to look)
        and per edit each measure's oriented delta (negative = worse), floor and floors_worse.
    """
    if not original or not edited:
        raise Refusal("Give the original image and the edited one (or a zip/GIF of edits).")
    try:
        start = load_image(received(original)).image
        edits = gate.edits_in(received(edited))
        # A chain's rules: one of the visitor's chains in the queue (app.py), and its cost
        # (the original's pixels x the edits) within the visitor's share while it is checked.
        with guard.admitted(visitor_of(request), guard.chain_cost(start, len(edits))):
            return compact(gate.check_degradation(start, edits))
    except REFUSALS as error:
        raise refusal(error) from None


def vote(run_id: str, earlier: float, later: float, choice: str, token: str = "",
         request: gr.Request = None) -> str:
    """Say which of two frames of a run looks better, as a person in the room would: the
    room's votes become the "people" line and row beside the metrics. One vote per browser,
    account or token per pair; a second replaces the first.

    Args:
        run_id: the run's id (the `run=` part of its link); any run you can open.
        earlier: a step of the run (0 is the input, 1 the first copy).
        later: a later step of the run.
        choice: "earlier" or "later": the step whose frame looks better.
        token: a secret of 16+ characters that makes an agent one voter; blank: your browser.
    Returns:
        JSON text: run, and pair {a, b, n, prefer_a, low, high}: the votes on this pair so far.
        prefer_a: how many preferred the earlier step; low and high: its 95% Wilson interval.
    """
    if token and len(token) < MIN_TOKEN:
        raise Refusal(f"A token is a secret of at least {MIN_TOKEN} characters.")
    run, pair = casting.cast(visitor_of(request, token), run_id, earlier, later, choice)
    return compact({"run": run.id, "pair": pair.as_record()})


def compare_link(request: gr.Request, run_a: str) -> str:
    """The page that shows both sides: `?compare=` and run A's id."""
    return link(request, run_a).rsplit("?", 1)[0] + f"?compare={run_a}"


def compare_chains(image: str | None, steps: float, a: str, b: str, metrics: str,
                   token: str = "", request: gr.Request = None) -> str:
    """Run two replication chains from one image, side by side: settings A and B differ in the
    generator or profile, the start (as it is or smoothed), the prompt or the seed. The input
    is scored once; each side is a run of its own (as run_chain's), and both count against
    your caps. Waits for both to end. A side is a JSON object whose keys are all optional:
    {"generator": "simulate", "profile": "nano-banana-pro", "smoothed": false, "prompt": "...",
    "seed": 0}.

    Args:
        image: the input image (PNG, JPEG or WebP).
        steps: each chain's steps, 1-100.
        a: side A, a JSON object such as {"generator": "simulate", "seed": 0}.
        b: side B, a JSON object as A's; it must differ from A.
        metrics: metric names or presets, comma-separated (list_options); blank: the 4 CPU classics.
        token: a secret of yours (16+ characters): stop_run with it stops both chains.
    Returns:
        JSON text: runs (A and B, each as run_chain answers; null for a side never started)
        link (one page showing both)
        failed (side -> why).
    """
    if not image:
        raise Refusal("Give an input image.")
    side_a, side_b = side_from_json(a, "A"), side_from_json(b, "B")
    steps = whole_number(steps, "Steps")
    chosen = visitor_metric_names(metrics)
    try:
        loaded = load_image(received(image))
    except REFUSALS as error:
        raise refusal(error) from None
    with runner.start(request, PairSpec(loaded, steps, side_a, side_b, chosen),
                      token=token) as flight:
        run_a = runner.until_end(flight, request)
    comparison = flight.comparison
    assert comparison is not None
    runs = {"A": summary(run_a, request),
            "B": summary(confined(comparison.b), request) if comparison.b else None}
    return compact({"runs": runs, "link": compare_link(request, run_a.id),
                    "failed": comparison.failed})


def build() -> None:
    """The documented API's tools (which are also the MCP server's), each wired to hidden
    inputs of its own. Not `gr.api`: it hands a function its arguments unprocessed (no
    `gr.File` to receive an upload into gradio's cache, where `received` checks it), so a file
    argument would reach a tool as a bare path or URL string."""
    with gr.Column(visible=False):
        image = gr.File(label="image", type="filepath")
        frames = gr.File(label="frames", type="filepath")
        steps = gr.Number(10, label="steps")  # no precision: 2.5 is refused
        pair_steps = gr.Number(STEPS, label="steps")
        generator = gr.Textbox("simulate", label="generator")
        metrics = gr.Textbox("", label="metrics")
        seed = gr.Number(0, label="seed")
        profile = gr.Textbox("", label="profile")
        run_id = gr.Textbox("", label="run_id")
        api_key = gr.Textbox("", label="api_key", type="password")
        token = gr.Textbox("", label="token", type="password")
        side_a, side_b = gr.Textbox("", label="a"), gr.Textbox("", label="b")
        original = gr.File(label="original", type="filepath")
        edited = gr.File(label="edited", type="filepath")
        earlier, later = gr.Number(1, label="earlier"), gr.Number(5, label="later")
        choice = gr.Textbox("", label="choice")
        answer = gr.Textbox(label="answer (JSON)")
        tool = gr.Button("API")
    tool.click(run_chain, [image, steps, generator, metrics, seed, profile, token], answer,
               api_name="run_chain", **join.CHAIN_EVENTS)
    tool.click(score_chain, [frames, metrics, token], answer, api_name="score_chain",
               **join.CHAIN_EVENTS)
    tool.click(resume_chain, [run_id, api_key, token], answer, api_name="resume_chain",
               **join.CHAIN_EVENTS)
    tool.click(open_run, run_id, answer, api_name="open_run")
    tool.click(list_options, None, answer, api_name="list_options")
    tool.click(vote, [run_id, earlier, later, choice, token], answer, api_name="vote")
    tool.click(check_degradation, [original, edited], answer, api_name="check_degradation",
               **join.CHAIN_EVENTS)  # a chain's queue and caps
    join.runs_two_chains(tool.click(compare_chains, [image, pair_steps, side_a, side_b,
                                                     metrics, token], answer,
                                    api_name="compare_chains", **join.CHAIN_EVENTS))
