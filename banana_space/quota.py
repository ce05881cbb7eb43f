"""What a run will cost in ZeroGPU seconds, said before it runs, and which steps the judges rate.

ZeroGPU gives each visitor a daily GPU quota (hub-docs `spaces-zerogpu.md`, "Usage Tiers"): 2
minutes unauthenticated, 3.5 with a free account, 25 with PRO. Every edit step and every judged
frame books a slice as long as its `gpu_task` estimate says (gpu.py), so a run costs

    steps × edit + judged frames × judge

in booked seconds, and `estimate` computes exactly that from the same estimates the booking
uses (`DiffusersEditBackend.booking_seconds`, `VisualQualityR1Judge.booking_seconds`). A
100-step chain with VisualQuality-R1 rating every frame books far more than a day's quota, so
on ZeroGPU the judges rate only the checkpoints by default: 0, 1, the paper's 5, 10 and 20, 50,
100 and the last step (`judged_steps`), which is all the verdict reads; a visitor may ask for
every frame.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from PIL import Image

from .backends import REGISTRY as BACKENDS
from .backends import create_backend
from .judges import REGISTRY as JUDGES
from .judges import create_judge
from .prompts import repeats_for

CHECKPOINTS = (0, 1, 5, 10, 20, 50, 100)
JUDGE_AT = {"checkpoints": "at the checkpoints (0, 1, 5, 10, 20, 50, 100, the last step)",
            "every": "every frame"}
DAILY_QUOTA_S = {"without signing in": 120, "free account": 210, "PRO": 1500}


def default_judge_at() -> str:
    """Checkpoints on ZeroGPU, where each judged frame costs quota; every frame elsewhere."""
    return "checkpoints" if os.environ.get("SPACES_ZERO_GPU") else "every"


def judged_steps(steps: int, judge_at: str) -> frozenset[int] | None:
    """The steps the judges rate in a run of `steps` steps; None for every step."""
    if judge_at not in JUDGE_AT:
        raise ValueError(f"judge_at must be one of {', '.join(JUDGE_AT)}, got {judge_at!r}")
    if judge_at == "every":
        return None
    return frozenset(step for step in CHECKPOINTS if step <= steps) | {steps}


@dataclass(frozen=True)
class GpuCost:
    edits: int  # edit calls on the GPU (steps × the prompt's repeats), 0 off the GPU
    edit_s: int  # booked seconds per edit call
    judged: int  # frames the GPU judges rate
    judge_s: int  # booked seconds per judged frame (all GPU judges together)

    @property
    def total_s(self) -> int:
        return self.edits * self.edit_s + self.judged * self.judge_s


def estimate(backend: str, options: dict[str, Any], size: tuple[int, int], steps: int,
             prompt: str, judges: list[str], judge_at: str) -> GpuCost:
    """The ZeroGPU seconds a run would book; loads no model."""
    edit_s = 0
    if BACKENDS[backend].info.needs_gpu:
        edit_s = create_backend(backend, **options).booking_seconds(size)
    judge_s = sum(create_judge(name).booking_seconds() for name in judges
                  if JUDGES[name].info.needs_gpu)
    judged = judged_steps(steps, judge_at)
    frames = (steps + 1 if judged is None else len(judged)) if judge_s else 0
    return GpuCost(steps * repeats_for(prompt) if edit_s else 0, edit_s, frames, judge_s)


def describe(cost: GpuCost) -> str:
    """One line for the page: the estimate, how it is made, and the daily quotas."""
    if cost.total_s == 0:
        return "**GPU time:** none (this generator and these judges run without a GPU)."
    parts = []
    if cost.edits:
        parts.append(f"{cost.edits} edits × {cost.edit_s} s")
    if cost.judged:
        parts.append(f"{cost.judged} judged frames × {cost.judge_s} s")
    quotas = ", ".join(f"{seconds} s {who}" for who, seconds in DAILY_QUOTA_S.items())
    over = [who for who, seconds in DAILY_QUOTA_S.items() if cost.total_s > seconds]
    warning = f" More than a day's quota {', '.join(over)}." if over else ""
    return (f"**Estimated GPU time:** ≈ {cost.total_s} s on ZeroGPU ({' + '.join(parts)}). "
            f"Daily quota: {quotas}.{warning}")


def page_note(upload: str | None, steps: float, backend: str, judges: list[str] | None,
              judge_at: str, prompt: str, options: dict[str, Any]) -> str:
    """The page's line under Run, from the form as it stands (an unknown image: 1 MP, the
    open editors' largest working size); "" while the form cannot be estimated."""
    size = (1024, 1024)
    if upload:
        try:
            with Image.open(upload) as image:  # reads the header only
                size = image.size
        except (OSError, ValueError):  # a zip for replay, a broken file: refused at Run
            pass
    if backend not in BACKENDS or not all(name in JUDGES for name in judges or []):
        return ""
    takes = BACKENDS[backend].info.takes
    try:
        cost = estimate(backend, {k: v for k, v in options.items() if takes(k)}, size,
                        max(1, int(steps)), prompt or "", list(judges or []), judge_at)
    except (ValueError, TypeError):
        return ""
    return describe(cost)


def per_step_note() -> str:
    """For the API's docs: what one step books with each GPU generator at ~1 MP, and the
    quotas; from the same estimates as the booking."""
    costs = [f"{name} {create_backend(name).booking_seconds((1024, 1024))} s"
             for name, entry in BACKENDS.items() if entry.info.needs_gpu]
    quotas = ", ".join(f"{seconds} s {who}" for who, seconds in DAILY_QUOTA_S.items())
    return (f"GPU cost on ZeroGPU: steps x the seconds one step books ({', '.join(costs)}, at "
            f"~1 MP; other generators use no GPU). Daily quota: {quotas}.")
