"""What reading every frame of an animated GIF costs, in order, as a replay or the gate reads
them: `--frames` frames of `--side`² (each a flat frame of its own shade: every frame changes
all of its pixels, yet the file is small, as a hostile visitor's would be), two ways side by
side, each in a fresh process:

- "before": the reader as it was (a4c148e and earlier): each frame opened afresh and sought to,
  which decodes every frame before it again (`load_frame(open_image(path), i)`);
- "after": `frames.frames_in_animation`, one decoder kept open, each frame decoded once.

Printed: seconds for frame 1 and for the last frame, for all of them, and the peak resident
memory over the reading (VmHWM above the resident size before it).

    .venv/bin/python bench/animation_reading.py [--frames 30] [--side 2000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import _setup

CHILD_FLAG = "--child"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--side", type=int, default=2000)
    args = parser.parse_args()
    print(_setup.describe_machine())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chain.gif"
        _write(path, args.frames, args.side)
        size_kb = path.stat().st_size / 1e3
        rows = []
        for way in ("before", "after"):
            measured = _setup.child_result(__file__, CHILD_FLAG, way, str(path),
                                           env={"BANANA_MEMORY_GB": "16"})
            rows.append([way, measured["first"], measured["last"], measured["all"],
                         measured["mb"]])
    _setup.print_table(f"reading {args.frames} frames of a {args.side}² GIF ({size_kb:.0f} KB) "
                       "in order", ["way", "frame 1 s", "last frame s", "all frames s",
                                    "peak MB"], rows)


def _write(path: Path, count: int, side: int) -> None:
    from PIL import Image

    palette = [value for shade in range(256) for value in (shade, shade, shade)]
    frames = []
    for index in range(count):  # each frame flat in a shade of its own: a full-frame change
        frame = Image.new("P", (side, side), index % 256)
        frame.putpalette(palette)
        frames.append(frame)
    frames[0].save(path, save_all=True, append_images=frames[1:], optimize=False)


def child(way: str, path_text: str) -> None:
    from banana_space.sources.frames import frames_in_animation
    from banana_space.sources.images import load_frame, open_image

    path = Path(path_text)
    chain = frames_in_animation(path)
    if way == "before":
        def read(index: int) -> object:
            with open_image(path) as animation:
                return load_frame(animation, index)
    else:
        def read(index: int) -> object:
            return chain.frame(index)
    read(0)
    before_mb = _setup.rss_mb()
    _setup.reset_peak()
    seconds = []
    for index in range(1, len(chain)):
        began = time.perf_counter()
        read(index)
        seconds.append(time.perf_counter() - began)
    print(json.dumps({"first": seconds[0], "last": seconds[-1], "all": sum(seconds),
                      "mb": _setup.peak_since_reset_mb() - before_mb}))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == CHILD_FLAG:
        child(*sys.argv[2:4])
    else:
        main()
