"""Turning whatever a visitor uploads into a clean RGB frame, or a clear refusal.

Every image the engine touches (an upload, a replayed frame, a generator's output) goes through
`load_image`, so the rules live in one place: EXIF orientation applied, transparency flattened on
white, any mode converted to 8-bit RGB, animations reduced to frame 0, and the size checked from
the header before a single pixel is decoded (a 50 000 x 50 000 "bomb" is refused in microseconds;
so is a strip that the downscale would make thinner than `MIN_SIDE`), and a TIFF's pages or a
GIF's frames counted with a cap before Pillow walks them (`pages.py`). Only the formats in
`FORMATS` are opened: each other format Pillow knows is a decoder a visitor need never reach.
Each silent-looking change is said out loud in `LoadedImage.notes`.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from ..budget import BUDGET, animation_frame_bytes, decode_bytes, size_text
from ..settings import engine_settings
from .frame_count import MAX_FRAMES, count_frames

# Refused outright: more pixels than this is a decompression bomb or a scan, not a photo.
MAX_DECLARED_PIXELS = 64_000_000
# Larger images are downscaled (aspect kept) so that metrics run in seconds on a CPU.
MAX_SIDE = engine_settings().max_side  # BANANA_MAX_SIDE
# Metrics need a few pixels to work with; pyiqa's NIQE/BRISQUE fail below this.
MIN_SIDE = 8
# What this app reads, of the ~43 formats Pillow knows: PNG (APNG too), JPEG (its opener reads
# the multi-picture JPEGs phones write), WebP, GIF, BMP and TIFF: the suffixes a chain's frames may
# have (`frames.IMAGE_SUFFIXES`).
FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF")
FORMAT_NAMES = "PNG, JPEG, WebP, GIF, BMP or TIFF"


class BadImage(ValueError):
    """The input is not an image we can use; the message says why, for the user."""


class BadSource(BadImage):
    """A chain's source (a hub address, a path) cannot be read; the message says why, for the
    user. A kind of `BadImage`: whatever refuses a bad input refuses it alike."""


@dataclass
class LoadedImage:
    image: Image.Image  # 8-bit RGB, upright
    notes: list[str] = field(default_factory=list)  # what was changed, in plain words


def open_image(source: str | Path | bytes) -> Image.Image:
    """Open without decoding: the header's size is checked first, so a bomb (a 13 000 x 13 000
    animated GIF of 250 KB, say) is refused before a single frame is decoded."""
    data = io.BytesIO(source) if isinstance(source, bytes) else source
    if isinstance(source, bytes) and not source:
        raise BadImage("the file is empty")
    if not isinstance(source, bytes) and os.path.getsize(source) == 0:
        raise BadImage(f"{Path(source).name} is empty")
    try:
        image = Image.open(data, formats=FORMATS)
    except Image.DecompressionBombError:
        raise BadImage("the image declares far more pixels than the limit of "
                       f"{MAX_DECLARED_PIXELS // 1_000_000} megapixels (a decompression bomb?)"
                       ) from None
    except UnidentifiedImageError:
        name = "the file" if isinstance(source, bytes) else Path(source).name
        raise BadImage(f"{name} is not an image this app can read: send {FORMAT_NAMES}"
                       ) from None
    except OSError as error:
        raise BadImage(f"not an image this app can read ({error})") from None
    try:
        _check_size(image)
        _check_frames(image)
    except BadImage:
        image.close()
        raise
    return image


def _check_frames(image: Image.Image) -> None:
    """From the file's structure: not more than `MAX_FRAMES` pages or frames, counted before
    Pillow walks them (`pages.py`: it counts a TIFF's pages in quadratic time)."""
    frames = count_frames(image.fp, image.format)
    if frames is not None and frames > MAX_FRAMES:
        raise BadImage(f"the file holds more than {MAX_FRAMES} pages or frames; this app reads "
                       "at most that many (a chain has at most 101)")


def _check_size(image: Image.Image) -> None:
    """From the header: not too many pixels, and not too thin once downscaled (an 8 x 2000000
    strip would be decoded, then shrunk to 0 x 2048, and only then refused)."""
    width, height = image.size
    if width * height > MAX_DECLARED_PIXELS:
        raise BadImage(
            f"the image declares {width} x {height} pixels; the limit is "
            f"{MAX_DECLARED_PIXELS // 1_000_000} megapixels")
    short = min(width, height) * min(1.0, MAX_SIDE / max(width, height, 1))
    if short < MIN_SIDE:
        scaled = f" (downscaled to {MAX_SIDE} px on its long side, {short:.1f} px across)" \
            if max(width, height) > MAX_SIDE else ""
        raise BadImage(f"the image is {width} x {height} pixels{scaled}; metrics need at "
                       f"least {MIN_SIDE} x {MIN_SIDE}")


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or (
        image.mode == "P" and "transparency" in image.info)


def _to_rgb(image: Image.Image, notes: list[str]) -> Image.Image:
    if _has_alpha(image):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        notes.append("transparent areas were flattened on white")
        return Image.alpha_composite(white, rgba).convert("RGB")
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        # 16-bit greyscale: scale to 8 bits rather than clip (PIL's convert clips at 255).
        notes.append("16-bit image reduced to 8 bits per channel")
        return image.point(lambda value: value / 256).convert("L").convert("RGB")
    if image.mode == "CMYK":
        notes.append("CMYK converted to RGB")
    return image.convert("RGB")


def _limit_side(image: Image.Image, notes: list[str]) -> Image.Image:
    if max(image.size) <= MAX_SIDE:
        return image
    before = image.size
    image = image.copy()
    image.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
    notes.append(f"downscaled from {before[0]} x {before[1]} to {image.size[0]} x "
                 f"{image.size[1]} (longest side limit {MAX_SIDE} px)")
    return image


def load_image(source: str | Path | bytes | Image.Image) -> LoadedImage:
    """Open, check and normalise one image: every upload goes through here.

    Args:
        source: a path, the file's bytes, or a PIL image.
    Returns:
        The image as RGB (EXIF orientation applied, alpha on white, at most `MAX_SIDE` on the
        long side) and notes saying what was changed.
    Raises:
        BadImage: with a reason a visitor can read (not an image, too large, a bomb…).
    """
    notes: list[str] = []
    image = source if isinstance(source, Image.Image) else open_image(source)
    _check_size(image)  # an Image handed in may not have been opened here
    if getattr(image, "n_frames", 1) > 1:
        notes.append(f"animated image: frame 0 of {image.n_frames} was used")
        return LoadedImage(load_frame(image, 0).image, notes)
    if image.format == "JPEG" and max(image.size) > 2 * MAX_SIDE:
        image.draft("RGB", (MAX_SIDE, MAX_SIDE))  # decode at reduced scale: less memory
    # Decoding costs memory in proportion to the pixels (a flat 8000 x 8000 PNG of 200 KB
    # takes 1 GB): each decode takes its turn in the memory budget that scoring uses too.
    with _reserved(decode_bytes(image.size[0] * image.size[1]), image.size):
        return _normalised(image, notes)


def load_frame(animation: Image.Image, index: int) -> LoadedImage:
    """Frame `index` of an open (size-checked) animation. Seeking decodes the frames before it
    and composes each at full size, so the whole decode reserves the animation's own cost, at
    its decoded size, before the first pixel (four visitors' 8000 x 8000 GIFs once took 4.8 GB
    past the budget here)."""
    _check_size(animation)
    with _reserved(animation_frame_bytes(animation.size[0] * animation.size[1]),
                   animation.size):
        try:
            animation.seek(index)
            frame = animation.convert("RGBA" if _has_alpha(animation) else "RGB")
        except (OSError, SyntaxError, ValueError, EOFError) as error:
            raise BadImage(f"the animation is damaged or truncated ({error})") from None
        return _normalised(frame, [])


@contextlib.contextmanager
def _reserved(needed: int, size: tuple[int, int]) -> Iterator[None]:
    """Hold `needed` bytes of the memory budget, or `BadImage` if it could never fit."""
    if not BUDGET.fits(needed):
        raise BadImage(f"decoding {size[0]} x {size[1]} pixels needs about "
                       f"{size_text(needed)}; this server's memory budget is "
                       f"{size_text(BUDGET.capacity)}")
    with BUDGET.request(needed):
        yield


def _normalised(image: Image.Image, notes: list[str]) -> LoadedImage:
    """Upright, 8-bit RGB, at least `MIN_SIDE` and at most `MAX_SIDE` (inside a reservation)."""
    try:
        upright = ImageOps.exif_transpose(image)
        if upright is not image and image.getexif().get(0x0112, 1) != 1:
            notes.append("rotated upright from its EXIF orientation")
        rgb = _to_rgb(upright, notes)
    except (OSError, SyntaxError, ValueError) as error:
        raise BadImage(f"the image data is damaged or truncated ({error})") from None
    if min(rgb.size) < MIN_SIDE:
        raise BadImage(f"the image is {rgb.size[0]} x {rgb.size[1]} pixels; metrics need "
                       f"at least {MIN_SIDE} x {MIN_SIDE}")
    return LoadedImage(_limit_side(rgb, notes), notes)
