"""A comparison's two sides: each side's settings (generator or profile, the start as it is or
smoothed, prompt, seed), checked before anything is written, and each side's `RunSpec`.
Two sides that would make the same chain are refused (`check_pair`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from PIL import Image
from scipy import ndimage

from ..backends import REGISTRY as BACKENDS
from ..prompts import DEFAULT_PROMPT
from ..sources.images import LoadedImage
from .spec import RunSpec, check_spec, public_options

SIDES = ("A", "B")
# The smoothed start of our start-smoothness study (docs/start_smoothness.md, "σ 1.5"): a
# Gaussian of σ 1.5 px per channel, which makes a rough photograph's start more like the
# paper's generated ones.
SMOOTH_SIGMA = 1.5
IDENTICAL = ("A and B are the same settings, so the two chains would be one chain twice: "
             "change the generator or profile, the start (as it is or smoothed), the prompt "
             "or the seed of one side.")


@dataclass(frozen=True)
class Side:
    """One side's settings: the generator and its options, the start, the prompt, the seed."""

    backend: str = "simulate"
    options: dict[str, Any] = field(default_factory=dict)  # e.g. {"profile": "white-noise"}
    smoothed: bool = False  # the start smoothed by `SMOOTH_SIGMA` px, or as it is
    prompt: str = DEFAULT_PROMPT
    seed: int = 0

    def with_defaults(self) -> Side:
        """The side with its backend's option defaults written out (blank profile = the
        default one), so that two spellings of one setting compare equal."""
        entry = BACKENDS.get(self.backend)
        if entry is None:
            return self
        defaults = {o.name: o.default for o in entry.info.options
                    if o.default is not None and not o.secret}
        given = {k: v for k, v in self.options.items() if v not in ("", None)}
        return replace(self, options={**defaults, **given})

    def public(self) -> dict[str, Any]:
        """The side as a comparison records and shows it: no secret."""
        record = asdict(self.with_defaults())
        record["options"] = public_options(record["options"])
        return record

    def label(self) -> str:
        """A short name: "simulate · white-noise · smoothed"."""
        parts = [self.backend, *(str(v) for k, v in sorted(self.with_defaults().options.items())
                                 if k == "profile")]
        return " · ".join(parts + (["smoothed"] if self.smoothed else []))


def check_pair(a: Side, b: Side) -> None:
    """Raise ValueError (`IDENTICAL`) when A and B would make the same chain."""
    if a.with_defaults() == b.with_defaults():
        raise ValueError(IDENTICAL)


def smooth_start(image: Image.Image, sigma: float = SMOOTH_SIGMA) -> Image.Image:
    """The start smoothed: a Gaussian of `sigma` px on each channel, rounded back to 8 bits."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.float32)
    blurred = ndimage.gaussian_filter(pixels, (sigma, sigma, 0), mode="reflect")
    return Image.fromarray(np.clip(np.rint(blurred), 0, 255).astype(np.uint8))


def side_specs(loaded: LoadedImage, steps: int, sides: Sequence[Side],
               metrics: Sequence[str]) -> list[RunSpec]:
    """Each side's `RunSpec`, checked (`check_spec`'s ValueError names the side). Sides with
    the same start share one image object, so their input is scored once."""
    smoothed = smooth_start(loaded.image) if any(s.smoothed for s in sides) else None
    specs = []
    for name, side in zip(SIDES, sides, strict=True):
        notes = list(loaded.notes) + ([f"smoothed by a Gaussian of σ {SMOOTH_SIGMA} px "
                                       "(compare mode)"] if side.smoothed else [])
        spec = RunSpec(smoothed if side.smoothed else loaded.image, steps, side.backend,
                       dict(side.options), side.prompt, side.seed, list(metrics),
                       image_notes=notes)
        try:
            check_spec(spec)
        except ValueError as error:
            raise ValueError(f"side {name}: {error}") from None
        specs.append(spec)
    return specs

