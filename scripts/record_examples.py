"""Re-make the recorded example runs in assets/recorded/ that the app opens instantly.

Each is a run directory of the offline `simulate` backend on a clean start from
assets/examples (scripts/render_starts.py), at 1024 px: the default profile on two starts and
the blur control on one. To keep the repository lean (a noisy 1024 px frame is ~1.5 MB
even losslessly), only the full frames at `KEEP_STEPS` and the last step stay; every step keeps
its 256 px thumbnail and all its scores, which were computed on the full frame. The app and
`load_run` show a thumbnail where its full frame was dropped, and say so. Run it with the venv's
Python after changing the simulation or the metrics (or name the runs to re-make):
    .venv/bin/python scripts/record_examples.py [RUN_NAME ...]
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
from banana_space.rundir import frame_name, zip_path  # noqa: E402
from banana_space.runs import RunSpec, start_run  # noqa: E402

TARGET = REPO / "assets" / "recorded"
SIDE = 1024  # px, longest side
STEPS = 30
KEEP_STEPS = (0, 5, 10, 20)  # full frames kept, besides the last
# run name ("start-tag-steps", as app.recorded_label reads it) -> (start image, profile)
RECORDINGS = {
    f"dunes-simulated-{STEPS}": ("clean-dunes.png", "nano-banana-pro"),
    f"illustration-simulated-{STEPS}": ("clean-illustration.png", "nano-banana-pro"),
    f"dunes-blur-{STEPS}": ("clean-dunes.png", "blur"),
}


def record(name: str, start: str, profile: str) -> None:
    with Image.open(REPO / "assets" / "examples" / start) as original:
        image = original.convert("RGB")
    image.thumbnail((SIDE, SIDE), Image.Resampling.LANCZOS)
    shutil.rmtree(TARGET / name, ignore_errors=True)
    spec = RunSpec(image, STEPS, "simulate", {"profile": profile}, seed=0,
                   metrics=list(CPU_DEFAULTS), image_notes=[f"downscaled to {SIDE} px"])
    for event in start_run(spec, TARGET, run_id=name):
        if getattr(event, "status", None):
            print(name, event.status, event.reason)
    zip_path(TARGET / name).unlink()  # the app makes the zip when the run is opened
    for step in range(1, STEPS):
        if step not in KEEP_STEPS:
            (TARGET / name / "frames" / frame_name(step)).unlink()


if __name__ == "__main__":
    chosen = sys.argv[1:] or list(RECORDINGS)  # by default all, and nothing else stays
    if not sys.argv[1:]:
        for stale in TARGET.iterdir():
            shutil.rmtree(stale)
    for name in chosen:
        record(name, *RECORDINGS[name])
