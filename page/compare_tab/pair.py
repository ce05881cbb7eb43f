"""A comparison for the page and the API alike: the two sides' settings from what a visitor
sends (form values or the API's JSON), and the `compare_chains` tool. The pair is started by
the one runner (`page.runner.start_pair`: one stop flag, two chains' share of the caps, each
side's run owned by who asked); `banana_space.compare.pair` runs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gradio as gr

from banana_space.backends import REGISTRY as BACKENDS
from banana_space.compare.pair import Side, SideEvent, SideFailed, read_record
from banana_space.events import Started
from banana_space.sources.images import load_image
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.store.run import Run
from page import runner
from page.door import guard
from page.door.access import (
    REFUSALS,
    confined,
    received,
    refusal,
    visitor_metric_names,
    whole_number,
)
from page.api import compact, link, summary

SIDE_FIELDS = ("generator", "profile", "smoothed", "prompt", "seed")


# ---- sides from what a visitor sends ----------------------------------------------------------

def side_of(generator: str, profile: str, smoothed: Any, prompt: str, seed: Any,
            name: str) -> Side:
    """A side's settings from a visitor's values, or a `gr.Error` naming the side."""
    entry = BACKENDS.get(generator or "simulate")
    if entry is None:
        raise gr.Error(f"Side {name}: unknown generator; valid: {', '.join(BACKENDS)}.")
    if entry.info.plays_recording:
        raise gr.Error(f"Side {name}: a comparison makes chains; to score a recorded one, "
                       "use score_chain.")
    options = {}
    if profile:
        if not entry.info.takes("profile"):
            raise gr.Error(f"Side {name}: the {entry.info.name} generator takes no profile.")
        options["profile"] = profile
    if not isinstance(smoothed, bool):
        raise gr.Error(f"Side {name}: smoothed is true or false.")
    return Side(entry.info.name, options, smoothed, prompt or DEFAULT_PROMPT,
                whole_number(seed, f"Side {name}'s seed"))


def side_from_json(text: str, name: str) -> Side:
    """A side from the API's JSON object (every key optional: `SIDE_FIELDS`)."""
    try:
        given = json.loads(text or "{}")
    except json.JSONDecodeError:
        raise gr.Error(f"Side {name} is not JSON: give an object such as "
                       '{"profile": "white-noise"}.') from None
    if not isinstance(given, dict):
        raise gr.Error(f"Side {name} must be a JSON object.")
    unknown = sorted(set(given) - set(SIDE_FIELDS))
    if unknown:
        raise gr.Error(f"Side {name} takes no {', '.join(unknown)}; it takes "
                       f"{', '.join(SIDE_FIELDS)}.")
    return side_of(given.get("generator", "simulate"), given.get("profile", ""),
                   given.get("smoothed", False), given.get("prompt", ""), given.get("seed", 0),
                   name)


# ---- running a pair, for the page and the API alike ------------------------------------------

def compare_link(request: gr.Request, run_a: str) -> str:
    """The page that shows both sides: `?compare=` and run A's id."""
    return link(request, run_a).rsplit("?", 1)[0] + f"?compare={run_a}"


def compare_chains(image: str | None, steps: float, a: str, b: str, metrics: str,
                   token: str = "", request: gr.Request = None) -> str:
    """Run two replication chains from one image, side by side: settings A and B differ in the
    generator or profile, the start (as it is or smoothed), the prompt or the seed. The input
    is scored once; each side is a run of its own (as run_chain's), and both count against
    your caps. Waits for both to end.

    Args:
        image: the input image (PNG, JPEG or WebP).
        steps: each chain's steps, 1-100.
        a: side A as JSON, every key optional: {"generator": "simulate", "profile":
            "nano-banana-pro", "smoothed": false, "prompt": "...", "seed": 0}.
        b: side B, the same way; it must differ from A.
        metrics: comma-separated metric names this server offers, or presets; blank: the 4
            CPU classics.
        token: a secret of yours (16+ characters): stop_run with it stops both chains.
    Returns:
        JSON text: runs (A and B, each as run_chain answers, or null for a side that never
        started), link (one page showing both), failed (side -> why).
    """
    if not image:
        raise gr.Error("Give an input image.")
    side_a, side_b = side_from_json(a, "A"), side_from_json(b, "B")
    steps = whole_number(steps, "Steps")
    chosen = visitor_metric_names(metrics)
    try:
        loaded = load_image(received(image))
    except REFUSALS as error:
        raise refusal(error) from None
    with runner.start_pair(request, loaded, steps, side_a, side_b, chosen,
                           token=token) as chain:
        run_a = _until_end(chain.events, request)
    record = read_record(run_a) or {"b": None, "failed": {}}
    runs = {"A": summary(run_a, request),
            "B": summary(confined(record["b"]), request) if record["b"] else None}
    return compact({"runs": runs, "link": compare_link(request, run_a.id),
                    "failed": record["failed"]})


def _until_end(events: Iterator[SideEvent | SideFailed], request: gr.Request) -> Run:
    """Consume a pair's events; run A. A caller that disconnects stops both."""
    run_a = None
    for event in events:
        if isinstance(event, SideEvent) and isinstance(event.event, Started) and \
                event.side == "A":
            run_a = Run(event.event.run_dir)
        if not guard.alive(request):
            events.close()
            break
    assert run_a is not None, "side A always starts"
    return run_a
