"""A run's chain as one small animation to share: an animated WebP of every frame made, in
step order, each with its step number burned in small in a corner.

It is made beside the zip when a run ends (`chain.runs`), never put in the zip: the zip
keeps the lossless frames, the animation is a lossy picture of the chain for a chat or a slide.
It is kept under `LIMIT_BYTES` (5 MB): frames are scaled to at most `SIDE` px (less for a long
chain, so a 100-step run's pixels stay within what an 11-step run's take), and a chain that still
comes out larger is made again smaller. A step a recording kept only as a thumbnail is shown from
that thumbnail, and the animation is never larger than its smallest frame.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from ..files import temporary_name
from .run import SavedRun

SIDE = 960  # px, the longer side: a slide's or a chat's width, a tenth of a 2K frame's pixels
FRAMES_AT_FULL_SIDE = 25  # longer chains are scaled down so that their pixels stay the same
LIMIT_BYTES = 5_000_000
QUALITY = 75  # lossy WebP: the animation shows the drift, the zip keeps the exact frames
FRAME_MS, LAST_FRAME_MS = 500, 2000  # the last frame lingers, then the chain starts again
TRIES = 3


def animation_side(frames: int) -> int:
    """The longer side of the animation's frames for a chain of `frames` frames."""
    return round(SIDE * min(1.0, math.sqrt(FRAMES_AT_FULL_SIDE / max(frames, 1))))


def write_animation(saved: SavedRun) -> Path | None:
    """Write the run's animation (`Run.animation_path`) from its frames up to its last scored
    step, atomically; None (and nothing written) for a run with fewer than two frames."""
    run = saved.run
    frames = [(step, run.shown_frame(step)) for step in range(saved.last_step + 1)
              if run.has_frame(step)]
    if len(frames) < 2:
        return None
    smallest = min((_size(path) for _, path in frames), key=lambda s: s[0] * s[1])
    side = animation_side(len(frames))
    target = run.animation_path
    temporary = temporary_name(target)
    try:
        for _ in range(TRIES):
            size = _fitted(smallest, side)
            _encode([_labelled(path, step, size) for step, path in frames], temporary)
            written = temporary.stat().st_size
            if written <= LIMIT_BYTES:
                break
            side = int(max(size) * math.sqrt(LIMIT_BYTES / written) * 0.9)
        os.replace(temporary, target)
    except BaseException:  # a full disk, a frame gone: no half-written animation left behind
        temporary.unlink(missing_ok=True)
        raise
    return target


def _size(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:  # reads the header only
        return image.size


def _fitted(size: tuple[int, int], side: int) -> tuple[int, int]:
    """`size` scaled to fit `side` px, never enlarged."""
    scale = min(1.0, side / max(size))
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def _labelled(path: Path, step: int, size: tuple[int, int]) -> Image.Image:
    """The frame scaled to `size`, with "step N" in its lower left corner: white on a dark
    box, about a fortieth of the frame's height, so it names the step without hiding the
    texture the chain is about."""
    with Image.open(path) as opened:  # one full frame decoded at a time, never copied
        frame = opened if opened.mode == "RGB" else opened.convert("RGB")
        frame = frame.resize(size, Image.Resampling.LANCZOS, reducing_gap=2.0) \
            if frame.size != size else frame.copy()
    font = ImageFont.load_default(size=max(10, frame.height // 40))
    draw = ImageDraw.Draw(frame, "RGBA")
    left, top, right, bottom = draw.textbbox((0, 0), f"step {step}", font=font)
    margin = max(3, round(font.size) // 3)
    box = (margin, frame.height - margin - (bottom - top) - 2 * margin,
           margin + (right - left) + 2 * margin, frame.height - margin)
    draw.rectangle(box, fill=(0, 0, 0, 160))
    draw.text((box[0] + margin - left, box[1] + margin - top), f"step {step}", font=font,
              fill=(255, 255, 255, 255))
    return frame


def _encode(frames: list[Image.Image], path: Path) -> None:
    """One animated WebP, looping; the last frame lingers."""
    durations = [FRAME_MS] * (len(frames) - 1) + [LAST_FRAME_MS]
    frames[0].save(path, format="WEBP", save_all=True, append_images=frames[1:],
                   duration=durations, loop=0, quality=QUALITY, method=4)
