"""Re-make the recorded example runs in assets/recorded/ that the app opens instantly.

Each is a complete run directory (frames, scores, verdict) of the offline `simulate` backend on
a bundled CC0 / public-domain photo, downscaled so the repo stays small. Run it with the
venv's Python after changing the simulation or the metrics:
    .venv/bin/python scripts/record_examples.py
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("BANANA_WEIGHTS_DIR", str(REPO.parent / "shared" / "weights"))

from PIL import Image  # noqa: E402

from banana_space.metrics import CPU_DEFAULTS  # noqa: E402
from banana_space.rundir import zip_path  # noqa: E402
from banana_space.runs import RunSpec, start_run  # noqa: E402

TARGET = REPO / "assets" / "recorded"
SIDE = 256  # px, longest side
RECORDINGS = {  # run name -> (example photo, steps, simulate strength)
    "chelsea-simulated-20": ("chelsea.png", 20, 1.0),
    "astronaut-simulated-20": ("astronaut.png", 20, 1.0),
}


def record(name: str, photo: str, steps: int, strength: float) -> None:
    with Image.open(REPO / "assets" / "examples" / photo) as original:
        image = original.convert("RGB")
    image.thumbnail((SIDE, SIDE), Image.Resampling.LANCZOS)
    shutil.rmtree(TARGET / name, ignore_errors=True)
    spec = RunSpec(image, steps, "simulate", {"strength": strength}, seed=0,
                   metrics=list(CPU_DEFAULTS), image_notes=[f"downscaled to {SIDE} px"])
    for event in start_run(spec, TARGET, run_id=name):
        if getattr(event, "status", None):
            print(name, event.status, event.reason)
    zip_path(TARGET / name).unlink()  # the app makes the zip when the run is opened


if __name__ == "__main__":
    for name, (photo, steps, strength) in RECORDINGS.items():
        record(name, photo, steps, strength)
