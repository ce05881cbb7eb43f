"""`simulate`: an offline, seeded model of what one generator round trip does to an image.

Banana100 (arXiv 2604.03400) saw four things pile up when an editor copies its own output:
fine static noise, slight resampling, over-sharpening and colour drift. One step here applies
each of them, scaled by `strength` (0 = a perfect copy, 1 = the default):

1. resample: a random sub-pixel shift (up to ±0.5 px) with bicubic interpolation, then a
   Gaussian blur of 0.7 px: fine detail is lost a little every step;
2. sharpen: an unsharp mask (radius 1.5 px, 20 %), the generator "restoring" crispness. The blur
   is chosen to outweigh it at every spatial frequency (0.7² ≥ 0.2 × 1.5²), so a 100-step chain
   degrades steadily instead of ringing into a texture, as a naive sharpen-every-step would;
3. colour drift: per-channel gains with a warm bias (red +0.3 %, green +0.1 %, blue −0.3 %)
   plus seeded jitter, so colour walks away step by step;
4. static: Gaussian noise, sigma 2 grey levels, fresh every step;

then quantises to 8-bit RGB, as a real generator's PNG would. The same seed gives the same
frames, bit for bit; no key, no GPU, no network.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image, ImageFilter

from .base import BackendInfo, Edit, Entry, Report, report_nothing

INFO = BackendInfo(
    name="simulate",
    label="Simulated (offline)",
    description="A seeded model of a generator's round trip: noise, resampling, sharpening, "
                "colour drift. No key, no GPU.",
    options=("strength",),
)


class SimulateBackend:
    info = INFO

    def __init__(self, strength: float = 1.0) -> None:
        if not 0 <= strength <= 5:
            raise ValueError(f"strength must be between 0 and 5, got {strength}")
        self.strength = float(strength)

    def unavailable_reason(self) -> str | None:
        return None

    def settings(self) -> dict[str, Any]:
        return {"strength": self.strength}

    def edit(self, image: Image.Image, prompt: str, *, seed: int, step: int,
             report: Report = report_nothing) -> Edit:
        rng = np.random.default_rng([seed, step])
        s = self.strength
        shift_x, shift_y = rng.uniform(-0.5, 0.5, size=2) * s
        out = image.transform(image.size, Image.Transform.AFFINE,
                              (1, 0, shift_x, 0, 1, shift_y), resample=Image.Resampling.BICUBIC)
        out = out.filter(ImageFilter.GaussianBlur(0.7 * s))
        out = out.filter(ImageFilter.UnsharpMask(radius=1.5, percent=round(20 * s), threshold=0))
        pixels = np.asarray(out, dtype=np.float32)
        gains = 1 + s * (np.array([0.003, 0.001, -0.003]) + rng.normal(0, 0.001, size=3))
        pixels = pixels * gains + rng.normal(0, 2.0 * s, size=pixels.shape)
        frame = Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), "RGB")
        return Edit(image=frame)


ENTRIES = (Entry(INFO, SimulateBackend),)
