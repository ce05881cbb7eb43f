"""The memory each metric adds while scoring one frame: the coefficients of banana_space/budget.py.

For each metric and size, a fresh child process creates the metric (through the engine's
`build_metric`, so entropy and ssim are the exact equivalents), makes the frame's tensors,
scores a tiny frame once (first-call set-up), then resets the kernel's high-water mark (VmHWM)
and scores the real frame: the cost is that peak minus the resident memory just before it,
divided by the pixels. A fresh process per cell keeps one measurement's freed-but-kept heap out
of the next. Rows "frame" (the tensors `Scorer.score` makes from PIL images), "decode"
(`load_image` on a PNG of that many pixels) and "decode 4x" (a PNG of 4 times the side,
downscaled to the side limit; bytes per declared pixel) are measured the same way.

    .venv/bin/python bench/memory_costs.py [--sides 512 1024 2048] [--rows niqe "decode 4x"]

budget.py keeps, per row, the largest bytes/pixel printed here, rounded up.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import _setup

METRICS = ("brisque", "niqe", "piqe", "entropy", "psnr", "ssim")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def child(row: str, side: int) -> float:
    """Peak MB added by `row` on a side x side frame, in this (fresh) process."""
    import tempfile

    import torch

    from banana_space.scores.catalog import FIDELITY, build_metric, to_tensor
    from banana_space.sources.images import load_image

    image = _setup.photo(side)
    reference = image.rotate(2)
    if row.startswith("decode"):
        path = Path(tempfile.mkdtemp()) / "frame.png"
        if row == "decode 4x":  # an upload 4 times the side, downscaled to the side limit
            image = image.resize((4 * side, 4 * side))
        image.save(path)
        del image, reference
        before = rss_mb()
        _setup.reset_peak()
        load_image(path)
        return _setup.peak_since_reset_mb() - before
    if row == "frame":
        before = rss_mb()
        _setup.reset_peak()
        tensors = (to_tensor(image), to_tensor(reference),
                   to_tensor(image.resize((side - 1, side - 1)).resize((side, side))))
        del tensors
        return _setup.peak_since_reset_mb() - before
    metric = build_metric(row, "cpu")
    tiny = _setup.photo(192)
    args = (to_tensor(image), to_tensor(reference)) if row in FIDELITY else (to_tensor(image),)
    with torch.inference_mode():
        metric(*((to_tensor(tiny),) * len(args)))
        before = rss_mb()
        _setup.reset_peak()
        metric(*args)
    return _setup.peak_since_reset_mb() - before


def measure(row: str, side: int) -> float:
    return _setup.child_result(__file__, "--child", row, str(side))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sides", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--rows", nargs="+", default=[*METRICS, "frame", "decode", "decode 4x"])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]))))
        return
    rows = []
    for row in args.rows:
        added = [measure(row, side) for side in args.sides]
        scale = 4 if row == "decode 4x" else 1
        per_pixel = [mb * 1024 ** 2 / (scale * side) ** 2 for mb, side in zip(added, args.sides,
                                                                              strict=True)]
        rows.append([row, *(round(mb) for mb in added), max(per_pixel)])
    print(_setup.describe_machine())
    _setup.print_table("peak MB added while scoring one frame (fresh process per cell)",
                       ["row", *(f"{side}² MB" for side in args.sides), "max bytes/pixel"],
                       rows)


if __name__ == "__main__":
    main()
