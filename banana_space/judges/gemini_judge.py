"""`judge_gemini`: a Gemini model rates each frame 1-5, as a reference line beside the metrics.

The question is VisualQuality-R1's rating prompt from its model card, word for word (Wu et al.,
"VisualQuality-R1: Reasoning-Induced Image Quality Assessment via Reinforcement Learning to
Rank", 2025), so a Gemini score reads on the same scale as that model's. The answer is parsed by
the same strict reader (`answer.read_rating`). A judge never makes up a score.

Requests go through the same client and retry policy as the Nano Banana backends
(`banana_space.backends.gemini_client`). Scores are cached by pixel hash, so re-rating a frame is
free.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from typing import Any

from PIL import Image

from ..backends.base import BackendUnavailable, GenerationFailed, Option, Report, report_nothing
from ..backends.gemini import API_KEY
from ..backends.gemini_client import GeminiConnection, key_missing
from .answer import PROMPT, read_rating
from .base import Entry, JudgeInfo, Rating

DEFAULT_MODEL = "gemini-2.5-flash"
def pixel_digest(image: Image.Image) -> str:
    """Same pixels, same digest, whatever file or object they came from."""
    header = f"{image.mode} {image.size[0]}x{image.size[1]}".encode()
    return hashlib.sha256(header + image.tobytes()).hexdigest()


def _info(model: str) -> JudgeInfo:
    return JudgeInfo(name="judge_gemini", label=f"Gemini judge ({model})",
                     description=f"{model} rates each frame 1-5 with the VisualQuality-R1 "
                                 "question, through the Gemini API.",
                     needs_key=True, options=(API_KEY, Option("model", flag=False),
                                              Option("temperature", float, flag=False)))


class GeminiJudge:
    def __init__(self, *, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 client: Any = None, base_url: str | None = None, temperature: float = 0.0,
                 timeout_s: float = 60.0, max_retries: int = 4,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.model = model
        self.info = _info(model)
        # 0 by default: a reference line should not wobble from sampling alone.
        self.temperature = temperature
        self.api = GeminiConnection(api_key=api_key, client=client, base_url=base_url,
                                    timeout_s=timeout_s, max_retries=max_retries, sleep=sleep)
        self._cache: dict[str, Rating] = {}

    def __repr__(self) -> str:
        return f"GeminiJudge(model={self.model!r})"

    def unavailable_reason(self) -> str | None:
        return self.api.unavailable_reason()

    def _ask(self, image: Image.Image, report: Report) -> str:
        from google.genai import types

        config = types.GenerateContentConfig(temperature=self.temperature)
        answer, _ = self.api.ask(self.model, PROMPT, image, config, report)
        return "\n".join(answer.texts)

    def schedule(self, steps: int) -> frozenset[int] | None:
        return None  # every step the run judges

    def rate(self, image: Image.Image, report: Report = report_nothing) -> Rating:
        if reason := self.unavailable_reason():
            raise BackendUnavailable(f"the Gemini judge {reason}")
        digest = pixel_digest(image)
        if digest in self._cache:
            return self._cache[digest]
        try:
            text = self._ask(image, report)
        except GenerationFailed as error:
            # Not cached: the API failed, not the frame; a later rating may succeed.
            return Rating(math.nan, "", f"no score, the request failed: {error}")
        rating = read_rating(text)
        self._cache[digest] = rating
        return rating


ENTRIES = (Entry(_info(DEFAULT_MODEL), GeminiJudge, key_missing),)
