"""Reading a score out of a judge's reply, strictly, and the one question every judge asks.

Every judge asks VisualQuality-R1's own question (`PROMPT`, from the model card
https://huggingface.co/TianheWu/VisualQuality-R1-7B), so all reference lines share one scale and
one wording. The model is asked for "only one score in <answer> </answer> tags"; in thinking
mode it writes <think>…</think> first. The model card's own parser falls back to a random
integer when it finds no number; we never make up a score. The reply counts when the text in
its LAST <answer>…</answer> is one number, or when the whole reply is one number; that number
must lie in [1, 5]. Anything else is NaN with a warning that says why.
"""

from __future__ import annotations

import math
import re

from .base import Rating

LOWEST, HIGHEST = 1.0, 5.0
QUESTION = (
    "You are doing the image quality assessment task. Here is the question: "
    "What is your overall rating on the quality of this picture? The rating should be a float "
    "between 1 and 5, rounded to two decimal places, with 1 representing very poor quality and "
    "5 representing excellent quality.")
PROMPT = (f"{QUESTION} Please only output the final answer with only one score in "
          "<answer> </answer> tags.")

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")


def _excerpt(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")


def parse_answer(text: str) -> tuple[float, str | None]:
    """(score, None) for a usable reply, else (NaN, why it was refused)."""
    answers = _ANSWER.findall(text)
    # Reasoning may mention other numbers (or quote the tags); only the final answer counts.
    candidate = answers[-1].strip() if answers else text.strip()
    if not _NUMBER.fullmatch(candidate):
        if answers:
            return math.nan, f"no score: the last <answer> holds {_excerpt(candidate)}"
        return math.nan, f"no score: no <answer> tag in the reply {_excerpt(text)}"
    score = float(candidate)
    if not LOWEST <= score <= HIGHEST:
        return math.nan, f"no score: {candidate} is outside {LOWEST:g}-{HIGHEST:g}"
    return score, None


def read_rating(text: str) -> Rating:
    """A judge's whole reply -> its `Rating` (the reply is kept for the user)."""
    score, warning = parse_answer(text)
    return Rating(score, text, warning)
