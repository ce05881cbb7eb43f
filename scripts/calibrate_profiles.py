"""Print what every simulate profile was calibrated against, on the photographic starts: PSNR to
the input (every profile), and where a profile models a measured artifact, the measurement
Mi-Ripple (J. Chen, Y. Xu & M. Wang 2026) reports for it: the residual autocorrelation at the
lattice's displacement (Table 5: first and last of ten steps) and the share of qualifying
128 px tiles (`scale_index`; the moss scene's 0.9 -> 23.7 % over five generations). It
deliberately prints no no-reference metric's verdict. Writes a markdown table with --out. The
tables in docs/calibration/ (one per profile, run side by side on the shared cores):
    .venv/bin/python scripts/calibrate_profiles.py --profiles nano-banana-pro --steps 1,5,10 \
        --out docs/calibration/nano-banana-pro.md
    .venv/bin/python scripts/calibrate_profiles.py --profiles lattice-ripple --steps 1,5,10 \
        --out docs/calibration/lattice-ripple.md
    .venv/bin/python scripts/calibrate_profiles.py --profiles granular --steps 1,2,3,4,5 \
        --starts photo-moss,photo-nuthatch --out docs/calibration/granular.md
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("BANANA_WEIGHTS_DIR", str(REPO.parent / "shared" / "weights"))

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from banana_space.backends import mi_ripple  # noqa: E402
from banana_space.backends.simulate import PROFILES, SimulateBackend  # noqa: E402
from banana_space.scores.catalog import to_tensor  # noqa: E402
from banana_space.scores.pool import POOL  # noqa: E402
from banana_space.scores.rulers import scale_index  # noqa: E402

STARTS = sorted(p.stem for p in (REPO / "assets" / "examples").glob("photo-*.png"))
# profile -> the lattice displacement its autocorrelation is calibrated at (Table 5's row)
LATTICE_OF = {"nano-banana-pro": mi_ripple.LATTICES["nano-banana-pro"].displacement,
              "lattice-ripple": mi_ripple.LATTICES[mi_ripple.LATTICE_MODEL].displacement}
TILE_SHARE_OF = ("granular", "nano-banana-pro")  # calibrated, or checked, on the tile share


def psnr(image: Image.Image, reference: Image.Image) -> float:
    """The engine's fidelity PSNR (pyiqa), after the same resize to the input's size."""
    if image.size != reference.size:
        image = image.resize(reference.size, Image.Resampling.BICUBIC)
    return POOL.score("psnr", to_tensor(image), to_tensor(reference))


def measure(frame: Image.Image, start: Image.Image, profile: str) -> str:
    cells = [f"{psnr(frame, start):.1f} dB"]
    pixels = np.asarray(frame, np.float32)
    if profile in LATTICE_OF:
        cells.append(f"ac {mi_ripple.residual_autocorrelation(pixels, LATTICE_OF[profile]):.2f}")
    if profile in TILE_SHARE_OF:
        cells.append(f"tiles {scale_index(pixels / 255):.1f} %")
    return ", ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", default="1,2,3,4,5,10,20")
    parser.add_argument("--side", type=int, default=1536)
    parser.add_argument("--profiles", default=",".join(
        name for name, p in PROFILES.items() if p.kind != "nuisance"))
    parser.add_argument("--starts", default=",".join(STARTS))
    parser.add_argument("--out", type=Path, help="also write the table here (markdown)")
    args = parser.parse_args()
    POOL.load_seconds = 1800  # loading torch and pyiqa can take minutes on a busy machine
    checkpoints = [int(s) for s in args.steps.split(",")]
    lines = [f"Seed 0, {args.side} px, step 0 (the input) then steps "
             f"{', '.join(map(str, checkpoints))}: PSNR to the input; \"ac\": the residual "
             "autocorrelation at the profile's lattice displacement (Mi-Ripple, Table 5); "
             "\"tiles\": the share of qualifying 128 px tiles (`scale_index`).", "",
             "| profile | start | step 0 | " + " | ".join(f"step {s}" for s in checkpoints)
             + " |", "|" + " --- |" * (3 + len(checkpoints))]
    print("\n".join(lines), flush=True)
    for profile in args.profiles.split(","):
        for stem in args.starts.split(","):
            backend = SimulateBackend(profile=profile)  # one per chain, as a run has
            with Image.open(REPO / "assets" / "examples" / f"{stem}.png") as opened:
                start = opened.convert("RGB")
            start.thumbnail((args.side, args.side), Image.Resampling.LANCZOS)
            frame, cells = start, [measure(start, start, profile)]
            for step in range(1, max(checkpoints) + 1):
                frame = backend.edit(frame, "", seed=0, step=step).image
                if step in checkpoints:
                    cells.append(measure(frame, start, profile))
            lines.append(f"| {profile} | {stem} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
            if args.out:  # row by row: a long calibration cut short keeps what it measured
                args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
