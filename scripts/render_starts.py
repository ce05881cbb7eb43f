"""Render the clean, high-resolution start images in assets/examples/clean-*.png.

Banana100 (arXiv 2604.03400) starts its chains from 13 clean images of at least 2K, made by an
image generator: buildings, food, moss, peacock feathers, dunes, anime art, no faces. With no
network here we draw such starts instead: procedural scenes with smooth gradients, flat colour
and regular structure, rendered at 2x and downsampled with a Lanczos filter (edges anti-aliased,
no sensor noise, no JPEG blocks), saved as lossless PNG. Everything is a deterministic function
of the pixel grid, so a re-run writes the same bytes:
    .venv/bin/python scripts/render_starts.py
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

TARGET = Path(__file__).resolve().parent.parent / "assets" / "examples"
WIDTH, HEIGHT = 1536, 1024  # the paper's starts are >= 2K; 1536 px keeps the repo lean
SUPERSAMPLE = 2

Canvas = np.ndarray  # float32, H x W x 3, 0..1


def _grid(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel-centre coordinates scaled so that y runs 0..1 top to bottom (x: 0..width/height)."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    return (x + 0.5) / height, (y + 0.5) / height


def _rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)], np.float32) / 255


def _vertical(y: np.ndarray, top: str, bottom: str, start: float = 0.0,
              end: float = 1.0) -> Canvas:
    t = np.clip((y - start) / (end - start), 0, 1)[..., None]
    return _rgb(top) * (1 - t) + _rgb(bottom) * t


def _paint(canvas: Canvas, mask: np.ndarray, colour: np.ndarray | str) -> None:
    colour = _rgb(colour) if isinstance(colour, str) else colour
    canvas[mask] = colour if colour.ndim == 1 else colour[mask]


def dunes(x: np.ndarray, y: np.ndarray) -> Canvas:
    """Desert dunes under a clear sky: long smooth gradients and sharp, curved crests."""
    canvas = _vertical(y, "#3f7fc4", "#f3d9b8", 0.0, 0.45)
    sun = np.exp(-((x - 1.1) ** 2 + (y - 0.16) ** 2) / 0.004)[..., None]
    canvas = canvas * (1 - sun) + _rgb("#fff6e0") * sun
    layers = [(0.42, 0.030, 2.3, 0.4, "#e9c39a", "#c98f5e"),
              (0.55, 0.050, 1.6, 1.9, "#e4b47f", "#b3713f"),
              (0.72, 0.070, 1.1, 3.1, "#dca36b", "#9c5a2d")]
    for base, height, frequency, phase, lit, shade in layers:
        wave = x * frequency * np.pi + phase + 0.25 * np.sin(x * 3.7 + phase)
        crest = base - height * (1 - np.abs(np.sin(wave)) ** 0.6)
        below = y > crest
        light = (0.5 + 0.5 * np.sin(2 * wave + 0.8))[..., None]  # the sunlit flank, smoothly
        depth = np.clip((y - crest) / 0.35, 0, 1)[..., None]
        sand = (_rgb(lit) * light + _rgb(shade) * (1 - light)) * (1 - 0.25 * depth)
        canvas[below] = sand[below]
    return canvas


def facade(x: np.ndarray, y: np.ndarray) -> Canvas:
    """A modern building against the sky: a regular grid of windows, columns and shadows."""
    canvas = _vertical(y, "#6fa8dc", "#dbe9f5", 0.0, 0.6)
    _paint(canvas, (x > 0.18) & (x < 1.32) & (y > 0.08), "#d8cbb5")
    _paint(canvas, (x > 1.32) & (x < 1.42) & (y > 0.12), "#9d907c")  # the side in shade
    column = ((x - 0.18) % 0.19) < 0.025
    _paint(canvas, column & (x > 0.18) & (x < 1.32) & (y > 0.08), "#bcae97")
    cell_x, cell_y = (x - 0.22) % 0.19, (y - 0.13) % 0.12
    window = (cell_x < 0.13) & (cell_y < 0.08) & (x > 0.2) & (x < 1.3) & (y > 0.12) & (y < 0.9)
    reflection = _vertical(cell_y / 0.08, "#2c4a6b", "#8fb3d1")
    _paint(canvas, window, reflection)
    _paint(canvas, window & (cell_x > 0.062) & (cell_x < 0.068), "#4a4a4a")  # mullions
    _paint(canvas, (y > 0.9), "#8a8f94")
    _paint(canvas, (y > 0.9) & (((x - y * 0.4) % 0.16) < 0.01), "#767b80")  # paving joints
    return canvas


def illustration(x: np.ndarray, y: np.ndarray) -> Canvas:
    """A flat-colour, anime-like landscape: cel-shaded clouds, hills and a tree, dark outlines."""
    canvas = _vertical(y, "#4da3ff", "#bfe3ff", 0.0, 0.6)
    outline = np.zeros(x.shape, bool)
    for cx, cy, r in [(0.3, 0.22, 0.07), (0.4, 0.18, 0.09), (0.5, 0.23, 0.06),
                      (1.0, 0.3, 0.05), (1.08, 0.26, 0.07), (1.17, 0.31, 0.05)]:
        distance = np.hypot(x - cx, y - cy)
        _paint(canvas, distance < r, "#ffffff")
        _paint(canvas, (distance < r) & (y > cy + 0.35 * r), "#d6e4f5")  # cel shadow
    for base, amplitude, frequency, colour, shadow in [
            (0.62, 0.05, 4.0, "#7fcf6a", "#5fae52"), (0.74, 0.04, 6.5, "#4fae4c", "#3a8a3c")]:
        ridge = base - amplitude * np.sin(x * frequency)
        below = y > ridge
        _paint(canvas, below, colour)
        _paint(canvas, below & (y > ridge + 0.07 + 0.02 * np.sin(x * 9)), shadow)
        outline |= np.abs(y - ridge) < 0.004
    trunk = (np.abs(x - 1.05) < 0.025) & (y > 0.45) & (y < 0.72)
    _paint(canvas, trunk, "#8b5a2b")
    crown = np.zeros(x.shape, bool)
    for cx, cy, r in [(1.05, 0.38, 0.11), (0.97, 0.45, 0.08), (1.13, 0.45, 0.08)]:
        crown |= np.hypot(x - cx, y - cy) < r
    _paint(canvas, crown, "#2f8f46")
    _paint(canvas, crown & (x > 1.07) & (y > 0.4), "#237239")
    edge = np.zeros(x.shape, bool)
    for mask in (trunk & ~crown, crown):
        edge |= np.roll(mask, 3, 0) ^ mask | np.roll(mask, 3, 1) ^ mask
    _paint(canvas, (outline & ~trunk & ~crown) | edge, "#1d2a3a")
    sun = np.hypot(x - 0.2, y - 0.12) < 0.05
    _paint(canvas, sun, "#fff3a0")
    return canvas


def feathers(x: np.ndarray, y: np.ndarray) -> Canvas:
    """Peacock feather eyes in a staggered grid: concentric rings and fine radiating barbs."""
    canvas = np.broadcast_to(_rgb("#0f3d2e"), x.shape + (3,)).copy()
    row = np.floor(y / 0.25)
    cx = (np.floor((x + (row % 2) * 0.15) / 0.3) + 0.5) * 0.3 - (row % 2) * 0.15
    cy = (row + 0.5) * 0.25
    dx, dy = x - cx, (y - cy) * 1.3
    radius, angle = np.hypot(dx, dy), np.arctan2(dy, dx)
    barbs = 0.5 + 0.5 * np.cos(angle * 90)
    canvas = canvas * (0.75 + 0.25 * barbs[..., None])
    for limit, colour in [(0.11, "#3a7d44"), (0.085, "#b08d3c"), (0.065, "#1fa3a3"),
                          (0.04, "#123a8c"), (0.018, "#08102e")]:
        _paint(canvas, radius < limit, colour)
    return canvas


SCENES: dict[str, Callable[[np.ndarray, np.ndarray], Canvas]] = {
    "clean-dunes": dunes,  # first: the page's default example
    "clean-facade": facade,
    "clean-illustration": illustration,
    "clean-feathers": feathers,
}


def render(scene: Callable[[np.ndarray, np.ndarray], Canvas]) -> Image.Image:
    x, y = _grid(WIDTH * SUPERSAMPLE, HEIGHT * SUPERSAMPLE)
    pixels = np.clip(np.rint(scene(x, y) * 255), 0, 255).astype(np.uint8)
    return Image.fromarray(pixels, "RGB").resize((WIDTH, HEIGHT), Image.Resampling.LANCZOS)


if __name__ == "__main__":
    for name, scene in SCENES.items():
        render(scene).save(TARGET / f"{name}.png", optimize=True)
        print(TARGET / f"{name}.png")
