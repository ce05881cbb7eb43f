"""Print PSNR to the input of every simulate profile on every clean start: the only number the
profiles in banana_space/backends/artifacts.py were calibrated against (about 30 dB at step 10,
far lower by step 100). It deliberately prints no no-reference metric.
    .venv/bin/python scripts/calibrate_profiles.py [--steps 10,100] [--side 1024]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("BANANA_WEIGHTS_DIR", str(REPO.parent / "shared" / "weights"))

from PIL import Image  # noqa: E402

from banana_space.backends.simulate import PROFILES, SimulateBackend  # noqa: E402
from banana_space.catalog import to_tensor  # noqa: E402
from banana_space.pool import POOL  # noqa: E402

STARTS = sorted((REPO / "assets" / "examples").glob("clean-*.png"))


def psnr(image: Image.Image, reference: Image.Image) -> float:
    """The engine's fidelity PSNR (pyiqa), after the same resize to the input's size."""
    if image.size != reference.size:
        image = image.resize(reference.size, Image.Resampling.BICUBIC)
    return POOL.score("psnr", to_tensor(image), to_tensor(reference))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", default="5,10,100")
    parser.add_argument("--side", type=int, default=1024)
    parser.add_argument("--profiles", default=",".join(PROFILES))
    args = parser.parse_args()
    checkpoints = [int(s) for s in args.steps.split(",")]
    print("profile | start | " + " | ".join(f"PSNR@{s}" for s in checkpoints))
    for profile in args.profiles.split(","):
        for path in STARTS:
            backend = SimulateBackend(profile=profile)  # one per chain, as a run has
            with Image.open(path) as opened:
                start = opened.convert("RGB")
            start.thumbnail((args.side, args.side), Image.Resampling.LANCZOS)
            frame, cells = start, []
            for step in range(1, max(checkpoints) + 1):
                frame = backend.edit(frame, "", seed=0, step=step).image
                if step in checkpoints:
                    cells.append(f"{psnr(frame, start):.1f}")
            print(f"{profile} | {path.stem} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
