"""What a visitor downloads from the page's default run, and what it costs to make: the zip
(lossless frames, scores, verdict, plot) and the chain's animation (animated WebP).

The default run (photo-moss, 2048 x 1280, `--steps` steps of `simulate`, the default metrics) is
made once in this process, as the app makes it. Then: the animation made again and timed (CPU
s), its size; the zip's size and what is in it; and how small its frames could be while
lossless: every frame re-encoded by Pillow at zlib level 9, and `--webp` of them as lossless
WebP (slow: a few seconds a frame), against the run's own PNG writer (level 1, one filter).

    .venv/bin/python bench/share_sizes.py [--steps 10] [--webp 3]
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
import time
import zipfile
from pathlib import Path

import _setup

EXAMPLE = _setup.REPO / "assets" / "examples" / "photo-moss.png"


def encoded_size(image: object, **options: object) -> int:
    data = io.BytesIO()
    image.save(data, **options)
    return data.tell()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--webp", type=int, default=3, help="frames to encode as lossless WebP")
    args = parser.parse_args()
    from PIL import Image

    from banana_space.chain.runs import RunSpec, start_run
    from banana_space.events import Started
    from banana_space.scores.catalog import CPU_DEFAULTS
    from banana_space.store.animation import write_animation
    from banana_space.store.run import Run

    with Image.open(EXAMPLE) as original:
        image = original.convert("RGB")
    root = Path(tempfile.mkdtemp(prefix="banana-bench-share-"))
    try:
        events = list(start_run(RunSpec(image, args.steps, metrics=list(CPU_DEFAULTS)), root))
        run = Run(next(e.run_dir for e in events if isinstance(e, Started)))
        cpu = time.process_time()
        write_animation(run.load())
        animation_cpu = time.process_time() - cpu
        frames = sorted(run.frames_dir.glob("step_*.png"))
        with zipfile.ZipFile(run.zip_path) as archive:
            inside = {info.filename.split("/", 1)[1]: info.compress_size
                      for info in archive.infolist()}
        level_9 = webp = webp_ours = 0
        for index, frame in enumerate(frames):
            with Image.open(frame) as opened:
                pixels = opened.convert("RGB")
            level_9 += encoded_size(pixels, format="PNG", compress_level=9)
            if index % max(1, len(frames) // max(args.webp, 1)) == 0 and args.webp:
                webp += encoded_size(pixels, format="WEBP", lossless=True, quality=100)
                webp_ours += frame.stat().st_size
        with Image.open(run.animation_path) as played:
            played_frames, played_size = played.n_frames, played.size
        rows = [
            ["animation (WebP)", round(run.animation_path.stat().st_size / 1e6, 2),
             f"{played_frames} frames of {played_size[0]} x {played_size[1]}, made in "
             f"{animation_cpu:.2f} CPU s"],
            ["zip", round(run.zip_path.stat().st_size / 1e6, 2),
             f"frames {sum(v for k, v in inside.items() if k.startswith('frames/')) / 1e6:.1f} MB"
             f" (stored), plot.html {inside.get('plot.html', 0) / 1e6:.2f} MB (deflated)"],
            ["the frames, our PNG writer", round(sum(f.stat().st_size for f in frames) / 1e6, 2),
             f"{len(frames)} frames"],
            ["the frames, Pillow at level 9", round(level_9 / 1e6, 2), "lossless"],
            ["lossless WebP / our PNG, sampled frames", round(webp / max(webp_ours, 1), 3),
             "a ratio"],
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(_setup.describe_machine())
    _setup.print_table(f"the default run's downloads: {EXAMPLE.name} (2048 x 1280), "
                       f"{args.steps} steps", ["what", "MB", "notes"], rows)


if __name__ == "__main__":
    main()
