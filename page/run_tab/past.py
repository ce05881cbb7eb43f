"""Past runs as a visitor finds them again: each of their own runs (`guard.own_runs` says whose)
with the date it started, a thumbnail of its newest frame, its generator (and the simulation's
profile), its steps and its status, newest first.

Read from each run's run.json alone (its scores are not needed to say what it is); a run.json
that cannot be read is listed by its id with one line that says so, never skipped in silence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from banana_space.backends import REGISTRY as BACKENDS
from banana_space.store.run import Run

STATUS_MARKS = {"completed": "✅", "stopped": "⏹", "failed": "❌", "running": "⏳",
                "interrupted": "⏸"}
STARTED_FORMAT = "%Y-%m-%dT%H:%M:%S%z"  # run.json's `started_at`


@dataclass(frozen=True)
class PastRun:
    id: str
    started: str  # run.json's `started_at`: sorts as it reads ("" where unknown)
    caption: str  # "5 Dec 2026 07:12 UTC · Simulated (offline) (blur) · 10 steps · ✅ completed"
    thumb: str | None  # the newest frame's thumbnail (the frame where there is none)


def described(run: Run) -> PastRun:
    """What one run is, in a line a visitor recognises it by."""
    try:
        meta = json.loads(run.meta_file.read_text())
        settings = meta.get("settings", {})
        started = str(meta.get("started_at", ""))
        last, steps = int(meta.get("last_step", -1)), int(meta.get("steps", 0))
    except (OSError, ValueError, AttributeError, TypeError):
        return PastRun(run.id, "", f"{run.id} · its {run.meta_file.name} cannot be read", None)
    backend = str(settings.get("backend", "?"))
    what = BACKENDS[backend].info.label if backend in BACKENDS else backend
    profile = settings.get("backend_options", {}).get("profile")
    what += f" ({profile})" if profile else ""
    plural = "" if steps == 1 else "s"
    made = f"{steps} step{plural}" if last >= steps else f"{max(last, 0)} of {steps} steps"
    status = run.live_status(str(meta.get("status", "running")))
    caption = f"{when(started)} · {what} · {made} · {STATUS_MARKS.get(status, '')} {status}"
    return PastRun(run.id, started, caption, newest_picture(run, last))


def when(started: str) -> str:
    """"5 Dec 07:12 UTC" from run.json's `started_at` ("date unknown" where it has none)."""
    try:
        moment = datetime.strptime(started, STARTED_FORMAT).astimezone(UTC)
    except ValueError:
        return "date unknown"
    return f"{moment.day} {moment:%b %Y %H:%M} UTC"


def newest_picture(run: Run, last: int) -> str | None:
    """The newest frame's thumbnail, or the frame itself where it has none."""
    for step in range(last, -1, -1):
        for path in (run.thumb_path(step), run.frame_path(step)):
            if path.is_file():
                return str(path)
    return None


def newest_first(runs: list[Run]) -> list[PastRun]:
    """The runs described, the one started last first (by id where dates tie or are unknown)."""
    return sorted((described(run) for run in runs), key=lambda p: (p.started, p.id),
                  reverse=True)
