"""`simulate`: offline, seeded models of what one generator round trip does to an image.

A small table of profiles, each a pure step function from `artifacts`, `mi_ripple` or
`controls` (whose docstrings quote the description or measurement each models and say what it
was calibrated against). The default is *Nano Banana Pro-like*, the generator of Banana100
(arXiv 2604.03400). Each profile has a `kind`, so a suite can be picked by it: "damage" (a
generator's or a codec's damage), "control" (`white-noise` and `blur`, distortions classic
metrics were built to catch) or "nuisance" (no damage a person would name; the chains that set
each score's noise floor, `floors.py`, and the leaderboard's false alarms). A nuisance either
repeats one frame (`repeats_a_frame`: Δ from step 1 is 0 by construction, a floor of a score's
arithmetic) or draws afresh at every step (`varying_nuisances`: one that can raise a false
alarm). `strength` scales every profile (0 = a perfect copy,
1 = calibrated). The same seed gives the same frames, bit for bit, on any x86 CPU (`portable`);
no key, no GPU, no network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from PIL import Image

from ..backends.base import Report, report_nothing
from . import artifacts, controls, mi_ripple
from .base import BackendInfo, Edit, Entry, Option

# (last frame, rng, strength) -> next frame: damage fed back, as a generator's round trip.
StepFunction = Callable[[np.ndarray, np.random.Generator, float], np.ndarray]
# (anchor frame, rng, strength, step, anchor's step, the run's seed) -> frame `step`, computed
# from the anchor.
AnchoredStep = Callable[[np.ndarray, np.random.Generator, float, int, int, int], np.ndarray]
Kind = Literal["damage", "control", "nuisance"]
KINDS: tuple[Kind, ...] = ("damage", "control", "nuisance")  # the order chains are listed in


# How a profile can depend on one of our rulers by design (`Profile.designed_with`).
ADDS_STATIC = "built by this project to add fresh noise at every step, which noise_level measures"
MI_RIPPLE_LATTICE = ("its lattice is built from Mi-Ripple's Table 5 measurements, and "
                     "lattice_probe is Mi-Ripple's probe of that lattice")


@dataclass(frozen=True)
class Profile:
    label: str  # what the UI shows
    models: str  # one line: which generator's artifact, for the UI and docs/generators.md
    step: StepFunction | AnchoredStep
    kind: Kind = "damage"
    anchored: bool = False  # True: `step` is an AnchoredStep (see `controls`)
    # True: the copies are one frame repeated (or two, alternating), so Δ from step 1 is 0 at
    # every checkpoint by construction: a floor of a score's arithmetic, never a false alarm
    repeats_a_frame: bool = False
    # our rulers that read this profile's damage by its design, each with how (fitted with it,
    # built from the measurements it reads, built to add what it measures): marked wherever
    # they are ranked on it, their rate there is not independent evidence
    designed_with: tuple[tuple[str, str], ...] = ()
    luma_only: bool = False  # it adds the same change to R, G and B: no colour of its own


PROFILES: dict[str, Profile] = {
    "nano-banana-pro": Profile(
        "Nano Banana Pro-like", "accumulating 3-8 px static, a slow green cast, specks, now and "
        "then a crop (Banana100); a late (5, 0) lattice (Mi-Ripple)", artifacts.nano_banana_pro,
        designed_with=(("noise_level", ADDS_STATIC), ("lattice_probe", MI_RIPPLE_LATTICE))),
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
        "Lattice ripple", "a faint 5 px lattice redrawn every step, as Mi-Ripple measured in "
        "Grok Imagine's chains (Table 5)", mi_ripple.measured_lattice, luma_only=True,
        designed_with=(("lattice_probe", MI_RIPPLE_LATTICE),)),
    "granular": Profile(
        "Granular texture", "3-8 px blobs growing with the scene's texture, as Mi-Ripple "
        "measured (moss: 0.9 -> 23.7 % of tiles)", mi_ripple.granular_texture,
        luma_only=True, designed_with=(
            ("scale_index", "its GRAIN_GAIN was fitted so that scale_index follows Mi-Ripple's "
                            "tile shares on the moss"),
            ("noise_level", ADDS_STATIC))),
    "jpeg": Profile(
        "JPEG re-save", "each copy re-encoded as JPEG at quality 75, compounding (generation "
        "loss)", controls.jpeg_recompress),
    "white-noise": Profile(
        "White noise (control)", "i.i.d. Gaussian noise per pixel, sigma 2.4 per step, "
        "accumulating: LIVE's WN, what classic metrics were built for", controls.white_noise,
        "control", designed_with=(("noise_level", ADDS_STATIC),)),
    "blur": Profile(
        "Blur (control)", "an exact accumulated Gaussian blur, sigma 0.8 x sqrt(step) px: what "
        "classic metrics were built to catch", controls.accumulated_blur, "control",
        anchored=True),
    "identical": Profile(
        "Identical copy (nuisance)", "every copy is the input, pixel for pixel",
        controls.identical, "nuisance", repeats_a_frame=True),
    "subpixel-shift": Profile(
        "Half-pixel shift (nuisance)", "the input moved ±0.5 px, alternating",
        controls.subpixel_shift, "nuisance", anchored=True, repeats_a_frame=True),
    "resave": Profile(
        "Lossless re-save (nuisance)", "each copy re-saved as PNG", controls.png_resave,
        "nuisance", repeats_a_frame=True),
    "mild-jpeg": Profile(
        "Mild JPEG (nuisance)", "the input re-encoded once as JPEG at quality 95",
        controls.mild_jpeg, "nuisance", anchored=True, repeats_a_frame=True),
    "random-shift": Profile(
        "Random sub-pixel shift (nuisance)", "the input moved by a fresh offset of up to "
        "±0.5 px per axis at every step", controls.random_shift, "nuisance", anchored=True),
    "random-jpeg": Profile(
        "JPEG at a random quality (nuisance)", "the input re-encoded once as JPEG at a fresh "
        "quality of 90-98 at every step, never one an earlier step used", controls.random_jpeg,
        "nuisance", anchored=True),
    "random-resample": Profile(
        "Resampling round trip (nuisance)", "the input resized by a fresh scale (1.05-1.25 "
        "or its inverse) and back at every step", controls.random_resample, "nuisance",
        anchored=True),
    "random-exposure": Profile(
        "Exposure ±1 % (nuisance)", "the input's brightness times a fresh gain of 1 ± "
        "0.25-1 % at every step", controls.random_exposure, "nuisance", anchored=True),
}
DEFAULT_PROFILE = "nano-banana-pro"


def profiles_of_kind(kind: Kind) -> list[str]:
    """The names of the profiles of one kind, in the table's order (a suite to run)."""
    return [name for name, profile in PROFILES.items() if profile.kind == kind]


def varying_nuisances() -> list[str]:
    """The nuisance profiles whose copies differ at every step: the ones that can raise a
    false alarm."""
    return [name for name in profiles_of_kind("nuisance") if not PROFILES[name].repeats_a_frame]


INFO = BackendInfo(
    name="simulate",
    label="Simulated (offline)",
    description="Seeded models of a generator's round trip, one profile per described "
                "artifact (default: Nano Banana Pro-like). No key, no GPU.",
    options=(
        Option("strength", float, "Simulated: strength per step", default=1.0, low=0, high=3,
               step=0.1),
        Option("profile", str, "Simulated: profile", "which generator's artifact the simulation "
               "models", default=DEFAULT_PROFILE,
               choices=tuple((profile.label, name) for name, profile in PROFILES.items())),
    ),
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
        # An anchored profile's fixed frame: the first frame this backend is handed (frame 0,
        # or the frame a resumed run continues from) and its step, as float pixels.
        self._anchor: tuple[np.ndarray, int] | None = None

    def unavailable_reason(self) -> str | None:
        return None

    def settings(self) -> dict[str, Any]:
        return {"strength": self.strength, "profile": self.profile}

    def anchor_on(self, image: Image.Image, step: int) -> None:
        """Make the frames after `step` as though `image`, frame `step` of the run, had been
        the first frame handed in. An anchored profile makes every frame from that one, so a
        recording's dropped frame is re-made exactly only from the frame its run began with
        (chain/remake.py); a feedback profile works on the frame it is handed and ignores this."""
        self._anchor = (np.asarray(image.convert("RGB"), dtype=np.float32), step)

    def edit(self, image: Image.Image, prompt: str, *, seed: int, step: int,
             report: Report = report_nothing) -> Edit:
        if self.strength == 0:  # the ideal generator: the exact copy, by definition
            return Edit(image=image.convert("RGB"))
        pixels = np.asarray(image.convert("RGB"), dtype=np.float32)
        profile = PROFILES[self.profile]
        rng = np.random.default_rng([seed, step])  # fresh at every step, the same per seed
        if profile.anchored:
            if self._anchor is None:
                self._anchor = (pixels, step - 1)
            anchor, anchor_step = self._anchor
            out = profile.step(anchor, rng, self.strength, step, anchor_step, seed)
        else:
            out = profile.step(pixels, rng, self.strength)
        # Quantise to 8-bit RGB, as a real generator's PNG would.
        return Edit(image=Image.fromarray(np.clip(np.rint(out), 0, 255).astype(np.uint8), "RGB"))


ENTRIES = (Entry(INFO, SimulateBackend),)
