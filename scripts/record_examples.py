"""Re-make the recorded example runs in assets/recorded/ that the app opens instantly.

Each is a run directory of the offline `simulate` backend on a clean start from
assets/examples, at 1024 px: the default profile on the photograph of moss (the page's default
example, scripts/photo_starts.py) and on the flat synthetic dunes (scripts/render_starts.py),
and the blur control on the dunes. To keep the repository lean (a noisy 1024 px frame is ~1.5 MB
even losslessly), only the full frames at `KEEP_STEPS` and the last step stay; every step keeps
its 256 px thumbnail, all its scores (computed on the full frame) and the SHA-256 of its
pixels (remake.json). The app re-makes the dropped frames from the settings in run.json,
whatever they are, and checks each against its hash (banana_space/chain/remake.py); where one
differs it shows the thumbnail and says so. Run it with the venv's Python after changing the
simulation or the metrics (or name the runs to re-make):
    .venv/bin/python scripts/record_examples.py [RUN_NAME ...]
A recording made before remake.json existed gets one, checked against its kept frames, with
    .venv/bin/python scripts/record_examples.py --manifest-only [RUN_NAME ...]
After a change to the verdict's arithmetic alone (the scores stay), each recording's scores.csv
and verdict.csv are written again from its recorded scores with
    .venv/bin/python scripts/record_examples.py --verdicts-only [RUN_NAME ...]
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

from banana_space.backends import create_backend  # noqa: E402
from banana_space.chain.producers import make_step  # noqa: E402
from banana_space.chain.remake import pixel_hash, write_manifest  # noqa: E402
from banana_space.chain.runs import RunSpec, start_run  # noqa: E402
from banana_space.scores.catalog import CPU_DEFAULTS  # noqa: E402
from banana_space.store.run import Run  # noqa: E402
from banana_space.store.rundir import rewrite_verdict  # noqa: E402

TARGET = REPO / "assets" / "recorded"
SIDE = 1024  # px, longest side
STEPS = 30
KEEP_STEPS = (0, 5, 10, 20)  # full frames kept, besides the last
# run name ("start-tag-steps", as app.recorded_label reads it) -> (start image, profile)
RECORDINGS = {
    f"moss-simulated-{STEPS}": ("photo-moss.png", "nano-banana-pro"),
    f"dunes-simulated-{STEPS}": ("clean-dunes.png", "nano-banana-pro"),
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
    Run(TARGET / name).zip_path.unlink()  # the app makes the zip when the run is opened
    hashes = {}
    for step in range(STEPS + 1):
        with Image.open(Run(TARGET / name).frame_path(step)) as frame:
            hashes[step] = pixel_hash(frame)
    write_manifest(TARGET / name, hashes)
    for step in range(1, STEPS):
        if step not in KEEP_STEPS:
            Run(TARGET / name).frame_path(step).unlink()


def add_manifest(name: str) -> None:
    """For a recording made before remake.json existed: re-make its frames from frame 0 with
    its own settings, and write their hashes only if every kept full frame comes out identical
    (a chain step is a deterministic function of the frame before it, so the dropped frames
    between kept ones are then the recorded ones)."""
    run = TARGET / name
    saved = Run(run).load()
    settings = saved.meta["settings"]
    backend = create_backend(settings["backend"], **settings["backend_options"])
    image, hashes = saved.frame(0), {0: pixel_hash(saved.frame(0))}
    for step in range(1, saved.last_step + 1):
        image = make_step(backend, image, settings["prompt"], settings["seed"], step).image
        hashes[step] = pixel_hash(image)
        kept = Run(run).frame_path(step)
        if kept.is_file() and pixel_hash(saved.frame(step)) != hashes[step]:
            raise SystemExit(f"{name}: step {step} re-made differs from the recording; "
                             "record it again")
    write_manifest(run, hashes)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--manifest-only"]:
        for name in sys.argv[2:] or list(RECORDINGS):
            add_manifest(name)
        sys.exit()
    if sys.argv[1:2] == ["--verdicts-only"]:
        for name in sys.argv[2:] or list(RECORDINGS):
            rewrite_verdict(TARGET / name)
        sys.exit()
    chosen = sys.argv[1:] or list(RECORDINGS)  # by default all, and nothing else stays
    if not sys.argv[1:]:
        for stale in TARGET.iterdir():
            shutil.rmtree(stale)
    for name in chosen:
        record(name, *RECORDINGS[name])
