"""GPU check: a few real edit steps per diffusers backend, each frame rated by VisualQuality-R1.

Needs CUDA and the weights in the Hugging Face cache (or a network to fetch them). Prints, per
backend, the load time, seconds per step and peak GPU memory (torch.cuda.max_memory_allocated),
then the judge's seconds per frame and scores. These numbers size the ZeroGPU bookings
(`seconds_per_step` in banana_space/backends/diffusers_edit.py) and docs/generators.md's VRAM table.

    .venv/bin/python bench/gpu_check.py [--steps 3] [--image assets/examples/chelsea.png]
        [--backends qwen-image-edit,flux-kontext,flux2,flux2:dev] [--no-judge]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from PIL import Image  # noqa: E402

from banana_space.gpu import cuda_available  # noqa: E402
from banana_space.prompts import DEFAULT_PROMPT  # noqa: E402


def gigabytes_peak() -> float:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30


def run_backend(spec: str, image: Image.Image, steps: int) -> list[Image.Image]:
    import torch

    from banana_space.backends import create_backend

    name, _, variant = spec.partition(":")
    backend = create_backend(name, **({"variant": variant} if variant else {}))
    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    backend.load()
    loaded_s = time.perf_counter() - started
    print(f"{spec}: {backend.settings()['repo_id']} loaded in {loaded_s:.0f} s")
    frames = [image]
    for step in range(1, steps + 1):
        started = time.perf_counter()
        frames.append(backend.edit(frames[-1], DEFAULT_PROMPT, seed=0, step=step).image)
        torch.cuda.synchronize()
        print(f"  step {step}: {time.perf_counter() - started:.1f} s")
    print(f"  peak GPU memory {gigabytes_peak():.1f} GiB")
    return frames


def rate(frames: list[Image.Image]) -> None:
    from banana_space.judges import create_judge

    judge = create_judge("judge_vqr1")
    judge.load()
    for index, frame in enumerate(frames):
        started = time.perf_counter()
        rating = judge.rate(frame)
        print(f"  frame {index}: {rating.score:.2f} in {time.perf_counter() - started:.1f} s"
              + (f" ({rating.warning})" if rating.warning else ""))
    print(f"  peak GPU memory with the judge {gigabytes_peak():.1f} GiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--image", type=Path, default=REPO / "assets/examples/chelsea.png")
    parser.add_argument("--backends", default="qwen-image-edit,flux-kontext,flux2")
    parser.add_argument("--no-judge", action="store_true")
    args = parser.parse_args()
    if not cuda_available():
        print("gpu_check needs a CUDA GPU (and the model weights); none here. Nothing was run.")
        return 2
    from banana_space.sources.images import load_image

    image = load_image(args.image).image
    print(f"input {args.image.name}: {image.width} x {image.height}")
    for spec in args.backends.split(","):
        try:
            frames = run_backend(spec, image, args.steps)
        except Exception as error:  # one missing checkpoint should not hide the others' numbers
            print(f"{spec}: failed: {type(error).__name__}: {error}")
            continue
        if not args.no_judge:
            rate(frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
