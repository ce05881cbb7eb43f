"""The lessons as MCP prompts: an agent asked "show me why BRISQUE is fooled" lists the prompts,
picks a lesson (banana_space/compare/lessons.py, the Compare tab's buttons) and gets one
message: the `compare_chains` call that sets the pair up and how to read its answer. Like the
page, a prompt says what to compare and how to read it, never what the runs will show.

gradio serves a prompt as a documented endpoint whose function is marked `gr.mcp.prompt`:
MCP's prompts/list gives its name and docstring, prompts/get calls it for the message. The
prompt's name is its function's name, the one gradio lists it by.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import gradio as gr

from banana_space.chain.sides import Side
from banana_space.compare.lessons import LESSONS, STEPS, Lesson
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.verdict.analysis import PAPER_TEST


def side_json(side: Side) -> str:
    """A side as compare_chains takes it (page/compare_tab/sides.py reads it back)."""
    given = {"generator": side.backend, "profile": side.options.get("profile", ""),
             "smoothed": side.smoothed, "seed": side.seed}
    return json.dumps(given | ({"prompt": side.prompt} if side.prompt != DEFAULT_PROMPT else {}))


def lesson_message(lesson: Lesson) -> str:
    """What an agent is asked to do for `lesson`, in the words of the tools it will call."""
    return (f'Show me the Banana Space lesson "{lesson.title}". {lesson.about} '
            f"Call compare_chains with a picture I give you (ask me for one if I have not), "
            f"steps {STEPS}, a {side_json(lesson.a)} ({lesson.a_shows}), "
            f"b {side_json(lesson.b)} ({lesson.b_shows}) and metrics classics. In its answer, "
            f"runs.A.verdict and runs.B.verdict hold each metric's detects, by {PAPER_TEST} "
            "at the checkpoints the runs reach (checkpoints_used), and its delta_5 "
            "(negative = worse). Tell me which metrics detect one side's damage but are "
            "fooled by the other's, and which detect or miss both, each with its delta_5 on "
            "both sides, and give me the answer's link, where the curves show it.")


def lesson_prompt(key: str, lesson: Lesson) -> Callable[[], str]:
    """The prompt for one lesson, named `lesson_<key>`."""
    def prompt() -> str:
        return lesson_message(lesson)

    prompt.__name__ = "lesson_" + key.replace("-", "_")
    prompt.__doc__ = (f'The lesson "{lesson.title}", A: {lesson.a_shows}; B: {lesson.b_shows}. '
                      f"{lesson.about} Its message sets the pair up with compare_chains.")
    return gr.mcp.prompt(name=prompt.__name__)(prompt)


def build() -> None:
    """One documented endpoint per lesson, on hidden components of their own."""
    with gr.Column(visible=False):
        message = gr.Textbox(label="message")
        ask = gr.Button("prompt")
    for key, lesson in LESSONS.items():
        prompt = lesson_prompt(key, lesson)
        ask.click(prompt, None, message, api_name=prompt.__name__)
