"""The Q-ReAlign judge on a CPU: seconds per judged frame, visual tokens, and an estimate for Mini.

    .venv/bin/python bench/judge_cpu.py [--frames 5] [--threads 2]

Measured here, offline, with the tiny random Qwen3.5-VL of tests/tiny_models.py loaded through
pyiqa's own `QReAlign(model=<folder>)` inside the judge (`banana_space/judges/qrealign.py`):
- CPU seconds (process time) and wall seconds per judged 2048 x 1280 frame: the window, the
  processor, the tokenizer and pyiqa's forward, everything but the model's size;
- the visual tokens the processor makes of that frame as the judge shows it (a 512 x 512
  window of native pixels) and, for comparison, of the whole frame at native resolution;
- this CPU's float32 matrix-multiply rate per CPU second (process time, so a machine loaded
  by others does not halve it).

Q-ReAlign Mini's weights are not on this machine, so its seconds are an **estimate**, printed
as one: one forward pass costs about 2 FLOPs per parameter per token it passes (the matrix
multiplies; attention over a few hundred tokens adds little). Where Mini's 0.8B parameters sit
between its vision tower and its language model is not known here, so the estimate is a range:
from every parameter once per merged visual token (the language model's share) to every
parameter once per 16-pixel patch (4 per merged token: the vision tower's), at the measured
matmul rate, plus the tiny model's CPU seconds for everything else; a quiet 2-vCPU Space
spreads those CPU seconds over its two cores (wall = CPU / 2, at best).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import _setup

sys.path.insert(0, str(_setup.REPO / "tests"))

WIDTH, HEIGHT = 2048, 1280
MINI_PARAMETERS = 0.8e9
PROMPT_TOKENS = 40  # the chat template, the question and the answer stem, about


def matmul_gflops_per_cpu_second(threads: int, side: int = 1024, repeats: int = 10) -> float:
    """This CPU's float32 matrix-multiply rate on `threads` threads, in GFLOP per CPU second."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(side, side), torch.randn(side, side)
    a @ b  # warm-up
    began = time.process_time()
    for _ in range(repeats):
        a @ b
    return 2 * side ** 3 * repeats / (time.process_time() - began) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (a Space: 2)")
    args = parser.parse_args()

    import torch
    from tiny_models import tiny_qwen3_5_vl

    from banana_space import settings
    from banana_space.judges import create_judge
    from banana_space.judges.qrealign import WINDOW, visual_tokens

    torch.set_num_threads(args.threads)
    print(_setup.describe_machine(), f"· load average {os.getloadavg()[0]:.1f}")
    tiny = tiny_qwen3_5_vl(Path(tempfile.mkdtemp(prefix="tiny-qrealign-")))
    # as BANANA_QREALIGN_MODEL would: the engine read its environment when it was imported
    settings.SETTINGS = replace(settings.SETTINGS, qrealign_model=str(tiny))
    judge = create_judge("judge_qrealign", device="cpu")
    processor = judge.load().processor
    frame = _setup.photo(WIDTH).resize((WIDTH, HEIGHT))
    judge.rate(frame)  # warm-up
    cpu, wall = [], []
    for _ in range(args.frames):
        began_cpu, began_wall = time.process_time(), time.perf_counter()
        judge.rate(frame)
        cpu.append(time.process_time() - began_cpu)
        wall.append(time.perf_counter() - began_wall)
    tiny_cpu, tiny_wall = sorted(cpu)[len(cpu) // 2], sorted(wall)[len(wall) // 2]
    shown = visual_tokens(processor, WINDOW, WINDOW)
    whole = visual_tokens(processor, WIDTH, HEIGHT)
    _setup.print_table(
        f"Tiny random Qwen3.5-VL through pyiqa's QReAlign, median of {args.frames} "
        f"{WIDTH} x {HEIGHT} frames, {args.threads} torch threads",
        ["CPU s / judged frame", "wall s / judged frame", "visual tokens (window)",
         "visual tokens (whole frame, native)"],
        [[tiny_cpu, tiny_wall, shown, whole]])

    rate = matmul_gflops_per_cpu_second(args.threads) * 1e9

    def cpu_seconds(tokens: int) -> float:
        return 2 * MINI_PARAMETERS * (tokens + PROMPT_TOKENS) / rate + tiny_cpu

    low, high, whole_low = cpu_seconds(shown), cpu_seconds(4 * shown), cpu_seconds(whole)
    _setup.print_table(
        f"ESTIMATE for Q-ReAlign Mini (0.8B, float32) on CPUs like these (matmul {rate / 1e9:.0f} "
        "GFLOP per CPU second, measured)",
        ["shown", "visual tokens", "est. CPU s / judged frame", "est. wall s, quiet 2-vCPU"],
        [[f"{WINDOW} x {WINDOW} window", shown, f"{low:.0f} - {high:.0f}",
          f"{low / 2:.0f} - {high / 2:.0f}"],
         [f"whole {WIDTH} x {HEIGHT} frame", whole, f"> {whole_low:.0f}",
          f"> {whole_low / 2:.0f}"]])


if __name__ == "__main__":
    main()
