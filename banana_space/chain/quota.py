"""What a run will cost in ZeroGPU seconds, said before it runs.

ZeroGPU gives each visitor a daily GPU quota (hub-docs `docs/hub/spaces-zerogpu.md`, "Usage
Tiers", commit 242f4a1 of 2026-08-22): 2 minutes unauthenticated, 5 with a free account, 40 with
PRO or as a Team member, 60 as an Enterprise member; the last three can go past it on pre-paid
credits ($1 per 10 minutes). Every edit step and every judged frame books a slice as long as its
`gpu_task` estimate says (gpu.py), so a run costs

    steps × edit + judged frames × judge

in quota seconds, and `estimate` computes exactly that from the same estimates the booking
uses (`DiffusersEditBackend.quota_seconds`: its booking, twice over for an editor that needs
ZeroGPU's `xlarge` size; `VisualQualityR1Judge.booking_seconds`). A
100-step chain with VisualQuality-R1 rating every frame books far more than a day's quota, so
on ZeroGPU the judges rate only the checkpoints by default: 0, 1, the paper's 5, 10 and 20, 50,
100 and the last step (`judges.schedule.judged_steps`), which is all the verdict reads; a
visitor may ask for every frame. The page states a run's cost in each tier's own unit (a share
of that tier's day), and on ZeroGPU a GPU generator's default run is cut to what fits the
smallest day (`steps_for_the_smallest_day`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PIL import Image

from ..backends import REGISTRY as BACKENDS
from ..backends import create_backend
from ..judges import REGISTRY as JUDGES
from ..judges import create_judge
from ..judges.schedule import judged_steps
from ..prompts import repeats_for
from ..settings import engine_settings

# Included daily GPU quota by account tier, in seconds (hub-docs, above). "extensible": PRO, Team
# and Enterprise go on past it on pre-paid credits.
DAILY_QUOTA_S = {"without signing in": 120, "free account": 300, "PRO": 2400,
                 "Team member": 2400, "Enterprise member": 3600}
EXTENSIBLE = frozenset({"PRO", "Team member", "Enterprise member"})
SMALLEST_DAY_S = min(DAILY_QUOTA_S.values())


def on_zerogpu() -> bool:
    """True on a ZeroGPU Space (spaces sets SPACES_ZERO_GPU there)."""
    return engine_settings().zero_gpu


def default_judge_at() -> str:
    """Checkpoints on ZeroGPU, where each judged frame costs quota; every frame elsewhere."""
    return "checkpoints" if on_zerogpu() else "every"


@dataclass(frozen=True)
class GpuCost:
    edits: int  # edit calls on the GPU (steps × the prompt's repeats), 0 off the GPU
    edit_s: int  # quota seconds per edit call (its booking, twice over on an xlarge GPU)
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
        edit_s = create_backend(backend, **options).quota_seconds(size)
    judge_s = sum(create_judge(name).booking_seconds() for name in judges
                  if JUDGES[name].info.needs_gpu)
    judged = judged_steps(steps, judge_at)
    frames = (steps + 1 if judged is None else len(judged)) if judge_s else 0
    return GpuCost(steps * repeats_for(prompt) if edit_s else 0, edit_s, frames, judge_s)


def steps_within(budget_s: int, backend: str, options: dict[str, Any], size: tuple[int, int],
                 prompt: str, judges: list[str], judge_at: str, most: int) -> int:
    """The most steps (1..`most`) whose run books at most `budget_s` seconds; 1 when even one
    step books more. Loads no model."""
    fits = 1
    for steps in range(1, most + 1):
        if estimate(backend, options, size, steps, prompt, judges, judge_at).total_s > budget_s:
            break
        fits = steps
    return fits


def share_of_days(total_s: int) -> str:
    """`total_s` in each tier's unit: "3.6 × the day without signing in (2 min); 1.4 × the day
    free account (5 min); 18% of the day PRO (40 min); …"."""
    shares = []
    for who, day in DAILY_QUOTA_S.items():
        ratio = total_s / day
        share = f"{ratio:.1f} ×" if ratio >= 1 else f"{ratio:.0%} of"
        more = ", then credits" if who in EXTENSIBLE and ratio > 1 else ""
        shares.append(f"{share} the day {who} ({day // 60} min{more})")
    return "; ".join(shares)


def gpu_cost_text(cost: GpuCost) -> str:
    """One line for the page: the estimate, how it is made, and what it is of each tier's day."""
    if cost.total_s == 0:
        return "**GPU time:** none (this generator and these judges run without a GPU)."
    parts = []
    if cost.edits:
        parts.append(f"{cost.edits} edits × {cost.edit_s} s")
    if cost.judged:
        parts.append(f"{cost.judged} judged frames × {cost.judge_s} s")
    return (f"**Estimated GPU time:** ≈ {cost.total_s} s on ZeroGPU ({' + '.join(parts)}; "
            f"estimates until measured on a GPU): {share_of_days(cost.total_s)}.")


def _form_size(upload: str | None) -> tuple[int, int]:
    """The upload's size from its header; an unknown image is 1 MP, the open editors' largest
    working size."""
    if upload:
        try:
            with Image.open(upload) as image:  # reads the header only
                return image.size
        except (OSError, ValueError):  # a zip for replay, a broken file: refused at Run
            pass
    return (1024, 1024)


def _estimable(backend: str, judges: list[str] | None, options: dict[str, Any]
               ) -> dict[str, Any] | None:
    """The options this backend takes, or None where the form names an unknown backend or
    judge."""
    if backend not in BACKENDS or not all(name in JUDGES for name in judges or []):
        return None
    takes = BACKENDS[backend].info.takes
    return {k: v for k, v in options.items() if takes(k)}


def page_note(upload: str | None, steps: float, backend: str, judges: list[str] | None,
              judge_at: str, prompt: str, options: dict[str, Any]) -> str:
    """The page's line under Run, from the form as it stands; "" while the form cannot be
    estimated."""
    taken = _estimable(backend, judges, options)
    if taken is None:
        return ""
    try:
        cost = estimate(backend, taken, _form_size(upload), max(1, int(steps)), prompt or "",
                        list(judges or []), judge_at)
    except (ValueError, TypeError):
        return ""
    return gpu_cost_text(cost)


def steps_for_the_smallest_day(upload: str | None, steps: float, backend: str,
                               judges: list[str] | None, judge_at: str, prompt: str,
                               options: dict[str, Any]) -> int | None:
    """On ZeroGPU, the steps a GPU generator's run is cut to so it fits the smallest day (2 min
    without signing in), or None to leave the form's steps as they are (no GPU generator, not
    on ZeroGPU, the form not estimable, or it fits already)."""
    taken = _estimable(backend, judges, options)
    if taken is None or not on_zerogpu() or not BACKENDS[backend].info.needs_gpu:
        return None
    try:
        most = max(1, int(steps))
        fits = steps_within(SMALLEST_DAY_S, backend, taken, _form_size(upload), prompt or "",
                            list(judges or []), judge_at, most)
    except (ValueError, TypeError):
        return None
    return fits if fits < most else None


def per_step_note() -> str:
    """For the API's docs: what one step books with each GPU generator at ~1 MP, and the
    quotas; from the same estimates as the booking."""
    costs = [f"{name} {create_backend(name).quota_seconds((1024, 1024))} s"
             for name, entry in BACKENDS.items() if entry.info.needs_gpu]
    quotas = ", ".join(f"{seconds} s {who}" for who, seconds in DAILY_QUOTA_S.items())
    return (f"GPU cost on ZeroGPU: steps x the quota seconds one step costs ({', '.join(costs)}, "
            f"at ~1 MP; estimates; an xlarge GPU counts twice; other generators use no GPU). "
            f"Daily quota: {quotas}.")
