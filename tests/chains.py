"""Small recorded chains of every kind, for the table's tests: a folder of frames nested two
levels down, a zip, an animated GIF, a run directory made by the real engine (the simulated
backend), a broken chain (a truncated frame), a one-frame GIF, and a stray single image."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

from banana_space.chain.runs import RunSpec, start_run
from banana_space.files import png_bytes

METRICS = ["brisque", "entropy"]
FRAMES = 7  # steps 0-6: checkpoint 5 decides


def noisy_chain(photo: Image.Image, seed: int, count: int = FRAMES) -> list[Image.Image]:
    """Noise that piles up step after step (the paper's accumulating static, in spirit)."""
    pixels = np.asarray(photo.resize((96, 64)), dtype=float)
    frames = [Image.fromarray(pixels.astype(np.uint8))]
    rng = np.random.default_rng(seed)
    for _ in range(count - 1):
        pixels = np.clip(pixels + rng.normal(0, 8, pixels.shape), 0, 255)
        frames.append(Image.fromarray(pixels.astype(np.uint8)))
    return frames



def make_chains(root: Path, photo: Image.Image) -> dict[str, str]:
    """Write the chains under `root`; returns chain name -> kind, as the table names them."""
    folder = root / "lab" / "day1" / "cat"
    folder.mkdir(parents=True)
    for i, frame in enumerate(noisy_chain(photo, 1)):
        frame.save(folder / f"frame_{i}.png")
    with zipfile.ZipFile(root / "lab" / "zipped.zip", "w") as archive:
        for i, frame in enumerate(noisy_chain(photo, 2)):
            archive.writestr(f"chain/{i}.png", png_bytes(frame))
    gif_frames = noisy_chain(photo, 3)
    (root / "gifs").mkdir()
    gif_frames[0].save(root / "gifs" / "loop.gif", save_all=True, append_images=gif_frames[1:])
    list(start_run(RunSpec(photo.resize((96, 64)), FRAMES - 1, metrics=METRICS), root / "runs",
                   run_id="sim"))
    broken = root / "broken"
    broken.mkdir()
    for i, frame in enumerate(noisy_chain(photo, 4)):
        data = png_bytes(frame)
        (broken / f"{i}.png").write_bytes(data[:120] if i == 3 else data)
    (root / "single").mkdir()
    photo.resize((96, 64)).save(root / "single" / "one.gif")
    (root / "stray").mkdir()
    photo.resize((96, 64)).save(root / "stray" / "only.png")
    name = root.name
    return {f"{name}/lab/day1/cat": "folder", f"{name}/lab/zipped.zip": "zip",
            f"{name}/gifs/loop.gif": "animation", f"{name}/runs/sim": "folder",
            f"{name}/broken": "folder", f"{name}/single/one.gif": "animation"}


# Planted noise σ (grey levels) per step, steps 0-20, whose verdicts under the paper's test are
# known: worse at step 1, better after it (fooled: Δ from step 1 is positive at 5, 10 and 20,
# though every checkpoint is worse than the input), and worse with every copy (detects).
WORSE_AT_STEP_1_THEN_BETTER = (0.0, 24.0, *(24.0 - step for step in range(1, 20)))
WORSE_WITH_EVERY_COPY = tuple(2.0 * step for step in range(21))


def planted_noise_chain(photo: Image.Image, sigmas: tuple[float, ...]) -> list[Image.Image]:
    """One noise pattern, scaled by σ at each step: a ruler of white noise (`noise_level`)
    reads each frame's σ back, so its verdict is known before the chain is scored."""
    pixels = np.asarray(photo.resize((192, 128)), dtype=float)
    pattern = np.random.default_rng(0).normal(0, 1, pixels.shape)
    return [Image.fromarray(np.clip(pixels + sigma * pattern, 0, 255).round().astype(np.uint8))
            for sigma in sigmas]
