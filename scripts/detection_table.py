"""Which metrics detect each simulated artifact, and which are fooled: every `simulate` profile
on every bundled start (assets/examples), through the engine (`start_run`) and the paper's
verdict (`History.verdict`, Banana100 Sec. 4: Δ < 0 at steps 5, 10 and 20), as a markdown table.

    .venv/bin/python scripts/detection_table.py --out docs/detection_table.md \
        [--metrics brisque,niqe,piqe,entropy] [--steps 20] [--side 256] [--starts 'clean-*']

Frames are downscaled to `--side` px (longest side, default 256) first, so that the table
runs in well under an hour on 2 busy CPU cores; the table's heading says which size it used.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("BANANA_WEIGHTS_DIR", str(REPO.parent / "shared" / "weights"))

from PIL import Image  # noqa: E402

from banana_space.analysis import VerdictRow  # noqa: E402
from banana_space.backends.simulate import PROFILES  # noqa: E402
from banana_space.metrics import CPU_DEFAULTS, expand_metric_names  # noqa: E402
from banana_space.rundir import load_run  # noqa: E402
from banana_space.runs import RunSpec, start_run  # noqa: E402

EXAMPLES = REPO / "assets" / "examples"
MARK = {True: "✅ detects", False: "❌ fooled", None: "… undecided"}


def starts(patterns: str) -> list[Path]:
    """The bundled starts whose file name matches one of the comma-separated `patterns`: by
    default the clean renders, the paper's kind of start; "*" adds the photos."""
    found = {p for pattern in patterns.split(",") for p in EXAMPLES.glob(pattern.strip())}
    return sorted(p for p in found if p.suffix.lower() in (".png", ".jpg", ".webp"))


def verdict(start: Path, profile: str, metrics: list[str], steps: int, side: int,
            root: Path) -> tuple[dict[str, VerdictRow], list[float]]:
    """One run through the engine; its verdict rows by metric, and its PSNR series."""
    with Image.open(start) as opened:
        image = opened.convert("RGB")
    image.thumbnail((side, side), Image.Resampling.LANCZOS)
    spec = RunSpec(image, steps, "simulate", {"profile": profile}, seed=0, metrics=metrics)
    run_id = f"{profile}-{start.stem}"
    for _ in start_run(spec, root, run_id=run_id):
        pass
    history = load_run(root / run_id).history
    return {row.metric: row for row in history.verdict()}, history.scores["psnr"]


def _db(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.1f}"


def table(metrics: list[str], steps: int, side: int, profiles: list[str], pattern: str) -> str:
    checkpoint = min(10, steps)
    head = (f"| profile | start | PSNR@{checkpoint} dB | PSNR@{steps} dB | "
            + " | ".join(metrics) + " |")
    lines = [head, "|" + " --- |" * (4 + len(metrics))]
    detected: dict[str, dict[str, int]] = {p: dict.fromkeys(metrics, 0) for p in profiles}
    images = starts(pattern)
    with tempfile.TemporaryDirectory() as root:
        for profile in profiles:
            for start in images:
                rows, psnr = verdict(start, profile, metrics, steps, side, Path(root))
                lines.append(f"| {PROFILES[profile].label} | {start.stem} | "
                             f"{_db(psnr[checkpoint])} | {_db(psnr[steps])} | "
                             + " | ".join(MARK[rows[m].detects] if m in rows else "unavailable"
                                          for m in metrics) + " |")
                for m in metrics:
                    detected[profile][m] += bool(m in rows and rows[m].detects)
                print(lines[-1], file=sys.stderr, flush=True)
    summary = ["| profile | what it models | " + " | ".join(metrics) + " |",
               "|" + " --- |" * (2 + len(metrics))]
    for profile in profiles:
        summary.append(f"| {PROFILES[profile].label} | {PROFILES[profile].models} | "
                       + " | ".join(f"{detected[profile][m]}/{len(images)}" for m in metrics)
                       + " |")
    return "\n".join([
        f"Detection over {steps} steps, seed 0, frames downscaled to {side} px (longest side); "
        "a metric detects when its oriented Δ is negative at steps 5, 10 and 20 (the paper's "
        "criterion). How many starts each metric detects, per profile:", "",
        *summary, "", "Every run:", "", *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--metrics", default=",".join(CPU_DEFAULTS),
                        help="comma-separated metric names or presets (rulers, classics)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--side", type=int, default=256, help="longest side, px")
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--starts", default="clean-*",
                        help="which files of assets/examples (comma-separated globs; '*' "
                             "adds the photos)")
    parser.add_argument("--out", type=Path, required=True, help="the markdown file to write")
    args = parser.parse_args()
    began = time.monotonic()
    text = table(expand_metric_names(args.metrics), args.steps,
                 args.side, args.profiles.split(","), args.starts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    print(text)
    print(f"({time.monotonic() - began:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
