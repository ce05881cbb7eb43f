"""The neighbour rule of `banana_space/sources/chain_layout.py` (neighbouring frames of a chain
must be copies of each other): what it separates, and what it costs a reader.

1. PSNR between pictures that are copies and pictures that are not, two ways: at full size (the
   rule as the hub's reader had it, the second frame resized to the first) and as 32² area
   thumbnails (the rule now, `chain_layout.COPY_SIDE`): the neighbours of each bundled
   recording (`assets/recorded/`, the lowest), every pair of the bundled example pictures
   (`assets/examples/`, the highest), and each example against itself cropped by 1, 2 and 4 %
   a side and resized back (the lowest: a crop is damage Banana100's chains show).
2. What the rule adds to opening a folder chain (`dispatch.open_frames`): every frame decoded
   once more, before anything is scored. `--frames` PNG frames of `--side`² (the astronaut with
   fresh noise each step), opened with the rule and without (decoding each frame once, as a
   replay or the table then does anyway); best of 3.

    .venv/bin/python bench/neighbour_rule.py [--frames 20] [--sides 1024,2048]
"""

from __future__ import annotations

import argparse
import itertools
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _setup
import numpy as np
from PIL import Image


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--sides", default="1024,2048")
    args = parser.parse_args()
    print(_setup.describe_machine())
    separation()
    for side in (int(s) for s in args.sides.split(",")):
        cost(args.frames, side)


def separation() -> None:
    from banana_space.sources.chain_layout import COPY_SIDE, _psnr, _thumbnail

    def full(a: Image.Image, b: Image.Image) -> float:
        b = b.resize(a.size, Image.Resampling.BICUBIC) if b.size != a.size else b
        x, y = (np.asarray(i, dtype=np.float64) for i in (a, b))
        mse = float(np.mean((x - y) ** 2))
        return math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)

    def thumb(a: Image.Image, b: Image.Image) -> float:
        return _psnr(_thumbnail(a), _thumbnail(b))

    rows = []
    for run in sorted((_setup.REPO / "assets" / "recorded").iterdir()):
        frames = [_rgb(p) for p in sorted((run / "frames").glob("step_*.png"))]
        pairs = list(zip(frames, frames[1:], strict=False))
        rows.append([f"neighbours in {run.name} (lowest)", min(full(*p) for p in pairs),
                     min(thumb(*p) for p in pairs)])
    examples = [_rgb(p) for p in sorted((_setup.REPO / "assets" / "examples").glob("*.*g"))]
    pairs = list(itertools.combinations(examples, 2))
    rows.append([f"{len(pairs)} pairs of example pictures (highest)",
                 max(full(*p) for p in pairs), max(thumb(*p) for p in pairs)])
    for share in (0.01, 0.02, 0.04):
        cropped = [(image, _cropped(image, share)) for image in examples]
        rows.append([f"an example and its {share:.0%} crop a side (lowest)",
                     min(full(*p) for p in cropped), min(thumb(*p) for p in cropped)])
    _setup.print_table("PSNR, dB: copies should stay above 18, unrelated pictures below",
                       ["pair", "full size", f"{COPY_SIDE}² thumbnails"], rows)


def _rgb(path: Path) -> Image.Image:
    with Image.open(path) as image:
        return image.convert("RGB")


def _cropped(image: Image.Image, share: float) -> Image.Image:
    width, height = image.size
    box = (round(share * width), round(share * height), round((1 - share) * width),
           round((1 - share) * height))
    return image.crop(box).resize(image.size)


def cost(count: int, side: int) -> None:
    from banana_space.sources.dispatch import open_frames
    from banana_space.sources.frames import frames_from_files

    base = np.asarray(_setup.photo(side), dtype=np.float64)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for step in range(count):
            noisy = base + rng.normal(0, 2 * step, base.shape)
            Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(root / f"{step}.png")
        names = [f"{step}.png" for step in range(count)]

        def decode_once() -> None:
            frames = frames_from_files(root, names, root.name)
            for index in range(len(frames)):
                frames.frame(index)

        decode = min(_seconds(decode_once) for _ in range(3))
        ruled = min(_seconds(lambda: open_frames(root)) for _ in range(3))
    _setup.print_table(f"opening a folder of {count} PNG frames of {side}²",
                       ["", "seconds", "per frame s"],
                       [["decoding every frame once", decode, decode / count],
                        ["open_frames, the rule's pass", ruled, ruled / count]])


def _seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
