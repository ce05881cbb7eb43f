"""What one quality-gate call holds in memory, and how long it takes: a zip of `--edits` flat
`--side`² PNGs (a few KB each: the cost is in the decoded pixels), checked against a flat
original as `/check_degradation` checks it, two ways side by side, each in a fresh process:

- "before": the gate as it was (a4c148e and earlier): every edit decoded into a list first
  (`frames.frame(i)` for all), then copied again by `convert("RGB")`, then scored;
- "after": `gate.edits_in` (lazy `Edits`), each edit decoded as it is checked.

The memory is the growth of the kernel's high-water mark (VmHWM) over the call, from the
process's resident size just before it (torch, pyiqa and PSNR loaded by a warm-up call).

    .venv/bin/python bench/gate_memory.py [--edits 30] [--side 2048]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import _setup

CHILD_FLAG = "--child"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--side", type=int, default=2048)
    args = parser.parse_args()
    print(_setup.describe_machine())
    with tempfile.TemporaryDirectory() as folder:
        archive, original = Path(folder) / "edits.zip", Path(folder) / "original.png"
        _write(archive, original, args.edits, args.side)
        zip_kb = archive.stat().st_size / 1e3
        rows = []
        for way in ("before", "after"):
            measured = _setup.child_result(__file__, CHILD_FLAG, way, str(original), str(archive))
            rows.append([way, measured["mb"], measured["wall_s"], measured["cpu_s"],
                         measured["cpu_s"] / args.edits])
    _setup.print_table(f"gate: one call with {args.edits} flat {args.side}² edits in a "
                       f"{zip_kb:.0f} KB zip",
                       ["way", "peak MB over the call", "wall s", "cpu s", "cpu s per edit"],
                       rows)


def _write(archive: Path, original: Path, edits: int, side: int) -> None:
    from PIL import Image

    flat = Image.new("RGB", (side, side), (120, 130, 140))
    flat.save(original)
    buffer = io.BytesIO()
    flat.save(buffer, format="PNG")
    with zipfile.ZipFile(archive, "w") as written:
        for index in range(edits):
            written.writestr(f"{index:03d}.png", buffer.getvalue())


def child(way: str, original_path: str, archive: str) -> None:
    from banana_space import gate
    from banana_space.sources.frames import frames_in_zip
    from banana_space.sources.images import load_image

    original = load_image(original_path).image
    gate.check_degradation(original, [original.copy()])  # warm-up: PSNR loaded, torch up
    gate.ORIGINALS.clear()
    before_mb = _setup.rss_mb()
    _setup.reset_peak()
    began_cpu, began_wall = time.process_time(), time.perf_counter()
    if way == "before":
        frames = frames_in_zip(Path(archive))
        decoded = [frames.frame(index).image for index in range(len(frames))]
        gate.check_degradation(original, [image.convert("RGB") for image in decoded])
    else:
        gate.check_degradation(original, gate.edits_in(archive))
    print(json.dumps({"mb": _setup.peak_since_reset_mb() - before_mb,
                      "wall_s": time.perf_counter() - began_wall,
                      "cpu_s": time.process_time() - began_cpu}))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == CHILD_FLAG:
        child(*sys.argv[2:5])
    else:
        main()
