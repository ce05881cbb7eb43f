"""The leaderboard's suite: a fixed, versioned set of chains, made by the simulate backend.

Each simulate profile (`backends.simulate.PROFILES`, read by its `kind`: every "damage" profile,
both positive "control"s and the "nuisance" chains whose copies differ at every step, so that a
false alarm can happen; the nuisances that repeat one frame are left out by default: their Δ is 0 by
construction) runs on each clean start (`assets/examples/photo-*.png` and `clean-*.png`, at `size`
px on the long side, lossless PNG frames), `steps` times with the same seed, so the suite is the
same wherever it is made. Real chains (Banana100 through `hf://`, or any folder of chains) join as
kind "real", counted as damage. Every frame is a PNG in `<work>/<profile>/<start>/`, named as a run
names its frames (`run.frame_name`), which `table` reads as it reads any folder of frames.
"""

from __future__ import annotations

import json
import multiprocessing
from dataclasses import asdict, dataclass, field
from pathlib import Path

from PIL import Image

from ..backends.simulate import PROFILES, SimulateBackend
from ..prompts import DEFAULT_PROMPT
from ..store.run import frame_name
from ..verdict.analysis import CHECKPOINTS, FIRST_COPY

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"
# 2: the profiles modelled on measurements, the photographic starts; 3: nuisances that vary
SUITE_VERSION = "3"
DAMAGE_KINDS = ("damage", "real")  # what a detection rate counts


@dataclass(frozen=True)
class Suite:
    """What the suite is made of; its JSON is written beside the results."""

    starts: tuple[str, ...] = ("photo-moss", "photo-nuthatch", "photo-flower", "photo-facade")
    size: int = 1024  # px, the long side: the scale the paper's claim is about
    steps: int = 20  # the paper's last checkpoint
    seed: int = 0
    profiles: tuple[str, ...] = field(default_factory=lambda: tuple(
        name for name, profile in PROFILES.items() if not profile.repeats_a_frame))
    version: str = SUITE_VERSION
    # False: only the steps the verdicts read are scored (0, 1, 5, 10, 20 and the last), so ρ
    # against PSNR is over those; True: every frame (4 times the scoring, for a full ρ)
    every_frame: bool = False

    def __post_init__(self) -> None:
        unknown = [name for name in self.profiles if name not in PROFILES]
        if unknown:
            raise ValueError(f"unknown profile(s) {', '.join(unknown)}; valid: "
                             f"{', '.join(PROFILES)}")
        missing = [start for start in self.starts if start not in all_starts()]
        if missing or not self.starts:
            raise ValueError(f"unknown start(s) {', '.join(missing) or '(none given)'}; "
                             f"valid: {', '.join(all_starts())}")
        if self.size < 32 or not 1 <= self.steps <= 100:
            raise ValueError("the size must be at least 32 px and the steps 1 to 100")

    def chains(self) -> list[tuple[str, str]]:
        """(profile, start) for every chain, profiles in the table's order."""
        return [(profile, start) for profile in self.profiles for start in self.starts]

    def scored_steps(self) -> tuple[int, ...] | None:
        """The steps scored (the table adds the last); None: every one."""
        if self.every_frame:
            return None
        return tuple(step for step in (0, FIRST_COPY, *CHECKPOINTS) if step <= self.steps)

    def as_record(self) -> dict:
        return {**asdict(self), "kinds": {name: PROFILES[name].kind for name in self.profiles},
                "scored_steps": self.scored_steps()}


def all_starts() -> tuple[str, ...]:
    """The clean starts: the photographs (`photo-*.png`) and the flat synthetic renders."""
    return tuple(sorted(path.stem for pattern in ("photo-*.png", "clean-*.png")
                        for path in EXAMPLES.glob(pattern)))


def start_image(start: str, size: int) -> Image.Image:
    """A clean start with its long side at `size` px (never enlarged)."""
    path = EXAMPLES / f"{start}.png"
    if not path.is_file():
        raise ValueError(f"no clean start {start!r}; valid: {', '.join(all_starts())}")
    with Image.open(path) as opened:
        image = opened.convert("RGB")
    image.thumbnail((size, size), Image.Resampling.LANCZOS)
    return image


def chain_folder(work: Path, profile: str, start: str) -> Path:
    return work / profile / start


def make_chain(task: tuple[Path, str, str, int, int, int]) -> str:
    """Write one chain's frames (skipped when complete, so a rerun only makes what is missing);
    a plain function, so a process pool can run it."""
    folder, profile, start, size, steps, seed = task
    done = folder / "done.json"
    if done.is_file():
        return str(folder)
    folder.mkdir(parents=True, exist_ok=True)
    backend = SimulateBackend(profile=profile)
    frame = start_image(start, size)
    frame.save(folder / frame_name(0))
    for step in range(1, steps + 1):
        frame = backend.edit(frame, DEFAULT_PROMPT, seed=seed, step=step).image
        frame.save(folder / frame_name(step), compress_level=1)
    done.write_text(json.dumps({"profile": profile, "start": start, "steps": steps}))
    return str(folder)


def make_suite(suite: Suite, work: Path, workers: int) -> list[Path]:
    """Every chain of the suite under `work`, made by `workers` processes; their folders."""
    tasks = [(chain_folder(work, profile, start), profile, start, suite.size, suite.steps,
              suite.seed) for profile, start in suite.chains()]
    if workers <= 1:
        return [Path(make_chain(task)) for task in tasks]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        return [Path(folder) for folder in pool.map(make_chain, tasks)]
