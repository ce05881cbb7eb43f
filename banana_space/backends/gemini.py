"""Google's Nano Banana image editors through the Gemini API (`google-genai` SDK).

Banana100 (arXiv 2604.03400) ran its chains on Nano Banana Pro: each step sends the prompt and
the previous frame, and the returned image becomes the next frame. One request here is
`models.generate_content` with a text part, the frame as an inline PNG part and
`response_modalities=["TEXT", "IMAGE"]` (https://ai.google.dev/gemini-api/docs/image-generation).
Every part of the answer is read: the image may come after text or thought parts, and
Nano Banana Pro drafts interim "thought" images before its final one.

A new model is one row in `MODELS`.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from ..backends.base import BackendUnavailable, GenerationFailed, Report, report_nothing
from ..sources.images import BadImage, load_image
from .base import BackendInfo, Edit, Entry, Option
from .gemini_client import GeminiConnection, key_missing


@dataclass(frozen=True)
class GeminiModel:
    name: str  # registry and CLI name
    model_id: str  # the Gemini API's model code
    label: str
    sizes: tuple[str, ...]  # output resolutions it accepts (ImageConfig.image_size); () = fixed
    # USD per output image, by resolution ("1K" for fixed-size models); a missing size is unknown.
    usd_per_image: dict[str, float] = field(default_factory=dict)


# Prices: Gemini Developer API pricing page (https://ai.google.dev/gemini-api/docs/pricing),
# standard tier, output image only, as published in Feb 2026. Input tokens (about 0.001 USD per
# input image) are not counted, so `cost_usd` is a slight underestimate; check before budgeting.
MODELS = (
    GeminiModel("nano-banana-pro", "gemini-3-pro-image-preview", "Nano Banana Pro",
                ("1K", "2K", "4K"), {"1K": 0.134, "2K": 0.134, "4K": 0.24}),
    GeminiModel("nano-banana", "gemini-2.5-flash-image", "Nano Banana", (), {"1K": 0.039}),
    GeminiModel("nano-banana-2", "gemini-3.1-flash-image-preview", "Nano Banana 2",
                ("1K", "2K", "4K"), {"1K": 0.067, "2K": 0.101, "4K": 0.151}),
)

# The aspect ratios the image models accept (image-generation docs, "Aspect ratios").
ASPECT_RATIOS = ("1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9")


def closest_aspect_ratio(width: int, height: int) -> str:
    """The supported ratio nearest to width:height, measured in log space so that 2:1 and 1:2
    are equally far from 1:1."""
    def distance(ratio: str) -> float:
        w, h = (int(side) for side in ratio.split(":"))
        return abs(math.log(width / height) - math.log(w / h))
    return min(ASPECT_RATIOS, key=distance)


class GeminiBackend:
    """One Nano Banana model. The key is resolved at construction and never shown."""

    def __init__(self, model: GeminiModel, *, api_key: str | None = None,
                 temperature: float | None = None, resolution: str | None = None,
                 client: Any = None, base_url: str | None = None, timeout_s: float = 120.0,
                 max_retries: int = 4, sleep: Callable[[float], None] = time.sleep) -> None:
        if resolution is not None and resolution not in model.sizes:
            allowed = ", ".join(model.sizes) or "none (its output size is fixed)"
            raise ValueError(f"{model.name} takes resolution {allowed}; got {resolution!r}")
        if temperature is not None and not 0 <= temperature <= 2:
            raise ValueError(f"temperature must be between 0 and 2, got {temperature}")
        self.model = model
        self.info = _info(model)
        self.temperature = temperature
        # Models with sizes default to 1K, as the API does, but we send it so run.json is exact.
        self.resolution = resolution or ("1K" if model.sizes else None)
        self.aspect_ratio: str | None = None  # set from the first frame; a chain keeps its size
        self.api = GeminiConnection(api_key=api_key, client=client, base_url=base_url,
                                    timeout_s=timeout_s, max_retries=max_retries, sleep=sleep)

    def __repr__(self) -> str:
        return f"GeminiBackend(model={self.model.model_id!r}, resolution={self.resolution!r})"

    def unavailable_reason(self) -> str | None:
        return self.api.unavailable_reason()

    def settings(self) -> dict[str, Any]:
        return {"model": self.model.model_id, "temperature": self.temperature,
                "resolution": self.resolution, "aspect_ratio": self.aspect_ratio or "from input",
                **self.api.settings()}

    @property
    def usd_per_image(self) -> float | None:
        return self.model.usd_per_image.get(self.resolution or "1K")

    def _config(self, seed: int) -> Any:
        from google.genai import types

        return types.GenerateContentConfig(
            response_modalities=["TEXT", "IMAGE"], seed=seed, temperature=self.temperature,
            image_config=types.ImageConfig(aspect_ratio=self.aspect_ratio,
                                           image_size=self.resolution))

    def edit(self, image: Image.Image, prompt: str, *, seed: int, step: int,
             report: Report = report_nothing) -> Edit:
        if reason := self.unavailable_reason():
            raise BackendUnavailable(f"{self.model.label} {reason}")
        self.aspect_ratio = closest_aspect_ratio(*image.size)
        answer, calls = self.api.ask(self.model.model_id, prompt, image, self._config(seed),
                                     report)
        if not answer.images:
            said = f"; it said: {answer.words()}" if answer.words() else ""
            raise GenerationFailed(f"Gemini answered without an image (finish reason "
                                   f"{answer.finish_reason}){said}")
        try:
            # The last final image: earlier ones, if any, are drafts the model replaced.
            loaded = load_image(answer.images[-1])
        except BadImage as error:
            raise GenerationFailed(f"Gemini's image could not be read: {error}") from None
        return Edit(image=loaded.image, text=answer.words(), calls=calls,
                    cost_usd=self.usd_per_image,
                    extra={"finish_reason": answer.finish_reason,
                           "output_size": list(loaded.image.size),
                           "images_in_answer": len(answer.images),
                           "thought_images": answer.thought_images, "notes": loaded.notes})


API_KEY = Option("api_key", label="Your Gemini API key", secret=True, flag=False,
                 help="used for your requests only; never stored")
TEMPERATURE = Option("temperature", float, "Gemini: temperature", default=1.0, low=0, high=2,
                     step=0.05)
RESOLUTION = Option("resolution", str, "Gemini: output resolution (Pro and 2 only)",
                    choices=(("1K", "1K"), ("2K", "2K"), ("4K", "4K")))


def _info(model: GeminiModel) -> BackendInfo:
    price = f"about {model.usd_per_image['1K']:.3f} USD per image at 1K" \
        if "1K" in model.usd_per_image else "price unknown"
    options = (API_KEY, TEMPERATURE, *((RESOLUTION,) if model.sizes else ()))
    return BackendInfo(name=model.name, label=f"{model.label} ({model.model_id})",
                       description=f"Google's {model.label} through the Gemini API; {price}.",
                       needs_key=True, options=options)


ENTRIES = tuple(Entry(_info(model), functools.partial(GeminiBackend, model), key_missing)
                for model in MODELS)
