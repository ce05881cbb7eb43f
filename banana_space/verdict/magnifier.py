"""The magnifier: the same small crop of the input and of frame i, side by side and enlarged,
so damage that is invisible at the displayed size (fine static, a slight green cast, scattered
dots; Banana100, arXiv 2604.03400, Sec. 3) is plain to see.

The crop sits where the two frames differ most (or where the visitor clicked). Frames that
changed size (a copy cropped or reshaped) are compared at the input's size, as fidelity is.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw

CROP = 96  # pixels of the input per side: small enough to show single pixels at 3x
ZOOM = 3
GAP = 6  # white pixels between the two halves
MARK = (255, 200, 0)  # the outline of the magnified crop on the whole frames: amber, on any photo


def largest_difference_box(input_image: Image.Image, frame: Image.Image,
                           crop: int = CROP) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of the crop x crop window, in the input's pixels, whose summed
    absolute difference between the two images is largest (first such window on ties)."""
    a = _pixels(input_image)
    b = _pixels(_at_size(frame, input_image.size))
    height, width = a.shape[:2]
    size = min(crop, width, height)
    # Every channel: a colour cast counts too. Summed as numpy's `sum(axis=2)` sums them, in
    # order, without its reduction over a 3-long axis (three times slower).
    channels = np.abs(a - b)
    difference = channels[..., 0] + channels[..., 1] + channels[..., 2]
    # Sums over every size x size window at once, from the summed-area table.
    table = np.pad(difference.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    windows = (table[size:, size:] - table[:-size, size:] - table[size:, :-size]
               + table[:-size, :-size])
    top, left = np.unravel_index(int(np.argmax(windows)), windows.shape)
    return int(left), int(top), int(left) + size, int(top) + size


def box_around(point: tuple[float, float], size: tuple[int, int],
               crop: int = CROP) -> tuple[int, int, int, int]:
    """The crop x crop window centred on a clicked point, moved inside an image of `size`."""
    width, height = size
    side = min(crop, width, height)
    left = min(max(int(point[0]) - side // 2, 0), width - side)
    top = min(max(int(point[1]) - side // 2, 0), height - side)
    return left, top, left + side, top + side


def side_by_side(input_image: Image.Image, frame: Image.Image,
                 box: tuple[int, int, int, int], zoom: int = ZOOM) -> Image.Image:
    """Input crop | frame crop, each enlarged `zoom` times with nearest-neighbour (so single
    pixels stay single pixels, not a blur that would hide the grain)."""
    crops = [image.crop(box) for image in (input_image.convert("RGB"),
                                           _at_size(frame, input_image.size))]
    side = (crops[0].width * zoom, crops[0].height * zoom)
    canvas = Image.new("RGB", (2 * side[0] + GAP, side[1]), "white")
    for i, crop in enumerate(crops):
        canvas.paste(crop.resize(side, Image.Resampling.NEAREST), (i * (side[0] + GAP), 0))
    return canvas


def poster(input_image: Image.Image, frame: Image.Image, box: tuple[int, int, int, int],
           height: int) -> Image.Image:
    """The decay in one picture, `height` pixels tall: the whole input | the whole frame (at the
    input's size), each with `box` outlined, then the magnifier's two crops of `box`
    (`side_by_side`), so that where the crops come from is plain."""
    frame = _at_size(frame, input_image.size)
    parts = []
    for image in (input_image.convert("RGB"), frame):
        outlined = image.copy()
        # Three of the poster's pixels wide, whatever the frame's size.
        ImageDraw.Draw(outlined).rectangle(box, outline=MARK,
                                           width=math.ceil(3 * image.height / height))
        parts.append(_to_height(outlined, height, Image.Resampling.LANCZOS))
    # Nearest-neighbour again: the enlarged pixels stay pixels.
    parts.append(_to_height(side_by_side(input_image, frame, box), height,
                            Image.Resampling.NEAREST))
    canvas = Image.new("RGB", (sum(p.width for p in parts) + GAP * (len(parts) - 1), height),
                       "white")
    left = 0
    for part in parts:
        canvas.paste(part, (left, 0))
        left += part.width + GAP
    return canvas


def _to_height(image: Image.Image, height: int, resample: Image.Resampling) -> Image.Image:
    return image.resize((round(image.width * height / image.height), height), resample)


def _at_size(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    image = image.convert("RGB")
    return image if image.size == size else image.resize(size, Image.Resampling.BICUBIC)


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.float32)
