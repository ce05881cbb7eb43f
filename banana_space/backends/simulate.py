"""`simulate`: offline, seeded models of what one generator round trip does to an image.

A small table of profiles, each a pure step function from `artifacts` (whose docstring quotes
the description it models and says what it was calibrated against). The default is
*Nano Banana Pro-like*, the generator of Banana100 (arXiv 2604.03400); *Soft copy* is the
blur-dominated control. `strength` scales every profile (0 = a perfect copy, 1 = calibrated).
The same seed gives the same frames, bit for bit; no key, no GPU, no network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from . import artifacts
from .base import BackendInfo, Edit, Entry, Report, report_nothing

StepFunction = Callable[[np.ndarray, np.random.Generator, float], np.ndarray]


@dataclass(frozen=True)
class Profile:
    label: str  # what the UI shows
    models: str  # one line: which generator's artifact, for the UI and the README
    step: StepFunction


PROFILES: dict[str, Profile] = {
    "nano-banana-pro": Profile(
        "Nano Banana Pro-like", "accumulating fine static, a slow green cast, now and then a "
        "crop or aspect change (Banana100)", artifacts.nano_banana_pro),
    "contour-wrinkles": Profile(
        "Contour wrinkles", "ripples along object edges (Nano Banana 2)",
        artifacts.contour_wrinkles),
    "scattered-dots": Profile(
        "Scattered dots", "isolated light and dark specks (FLUX.2 [dev])",
        artifacts.scattered_dots),
    "simplification": Profile(
        "Simplification", "fine texture smoothed away, small regions copied from elsewhere "
        "(Qwen Image Edit)", artifacts.simplification),
    "lattice-ripple": Profile(
        "Lattice ripple", "a faint periodic honeycomb, invisible in thumbnails (GPT-image)",
        artifacts.lattice_ripple),
    "soft-copy": Profile(
        "Soft copy (control)", "blur, slight sharpening, warm drift, light static: what "
        "classic metrics were built to catch", artifacts.soft_copy),
}
DEFAULT_PROFILE = "nano-banana-pro"

INFO = BackendInfo(
    name="simulate",
    label="Simulated (offline)",
    description="Seeded models of a generator's round trip, one profile per described "
                "artifact (default: Nano Banana Pro-like). No key, no GPU.",
    options=("strength", "profile"),
)


class SimulateBackend:
    info = INFO

    def __init__(self, strength: float = 1.0, profile: str = DEFAULT_PROFILE) -> None:
        if not 0 <= strength <= 5:
            raise ValueError(f"strength must be between 0 and 5, got {strength}")
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; valid profiles: "
                             f"{', '.join(PROFILES)}")
        self.strength = float(strength)
        self.profile = profile

    def unavailable_reason(self) -> str | None:
        return None

    def settings(self) -> dict[str, Any]:
        return {"strength": self.strength, "profile": self.profile}

    def edit(self, image: Image.Image, prompt: str, *, seed: int, step: int,
             report: Report = report_nothing) -> Edit:
        if self.strength == 0:  # the ideal generator: the exact copy, by definition
            return Edit(image=image.convert("RGB"))
        rng = np.random.default_rng([seed, step])
        pixels = np.asarray(image.convert("RGB"), dtype=np.float32)
        out = PROFILES[self.profile].step(pixels, rng, self.strength)
        # Quantise to 8-bit RGB, as a real generator's PNG would.
        return Edit(image=Image.fromarray(np.clip(np.rint(out), 0, 255).astype(np.uint8), "RGB"))


ENTRIES = (Entry(INFO, SimulateBackend),)
