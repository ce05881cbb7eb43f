"""The one adapter from run events to what a screen shows, as plain data (no gradio here).

`RunView.apply(event)` folds an event into the view and returns a `Screen`: the status line,
the one-line summary of the finding, the current frame, the strip of frames, the curves, the
verdict table, what the model said and the zip. The app maps a `Screen` onto its components;
tests read it directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .analysis import CHECKPOINTS, REFERENCE_METRIC, History, VerdictRow
from .events import Event, Finished, FrameMade, FrameScored, Notice, Started
from .markup import plain
from .plots import Figure, delta_figure, display_name, raw_figure, value_text
from .rundir import THUMB_SIDE, SavedRun, frame_name, thumb_path, zip_path

# The answer first (it must fit a phone's width): does it detect (the paper's test, then the
# same test beyond the score's noise floor), does it rank like fidelity, and from the first copy?
VERDICT_HEADERS = ["metric", "verdict", "beyond floor", "ρ vs PSNR", "from 1st copy", "Δ now",
                   "Δ5", "Δ10", "Δ20", "better when"]
VERDICT_COLUMN = VERDICT_HEADERS.index("verdict")
VERDICT_WORDS = {True: "✅ detects", False: "❌ fooled", None: "… undecided"}
ROBUST_WORDS = {True: "✅ detects", False: "❌ no", None: "…"}
PROVISIONAL = " so far"  # after a verdict word while the paper's last checkpoint is ahead
NOTICE_MARKS = {"info": "ℹ️", "warning": "⚠️"}
MAX_NOTICES_SHOWN = 4


@dataclass
class Screen:
    status: str
    summary: str  # the finding in words and numbers, one or two lines
    frame: str | None
    first_frame: str | None  # frame 0, what every frame is compared with
    strip: list[tuple[str, str]]  # (thumbnail, frame) paths for each step so far
    figure: Figure  # a plotly figure spec (plain dict)
    verdict: list[list[Any]]
    model_text: str
    zip_path: str | None
    run_dir: str | None
    running: bool


@dataclass
class RunView:
    raw: bool = False  # small multiples of raw scores instead of the shared delta axis
    run_dir: Path | None = None
    steps: int = 0
    history: History = field(default_factory=lambda: History([]))
    unavailable: dict[str, str] = field(default_factory=dict)
    texts: dict[int, str] = field(default_factory=dict)
    notices: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    last_step: int = -1  # the newest frame made (its scores may still be coming)
    calls: int = 0
    cost_usd: float = 0.0
    ended: Finished | None = None

    def apply(self, event: Event) -> Screen:
        if isinstance(event, Started):
            self.run_dir, self.steps = event.run_dir, event.steps
            self.unavailable = dict(event.unavailable)
            if not self.history.infos:
                self.history = History(event.infos)
        elif isinstance(event, FrameMade):
            self.last_step = event.step
        elif isinstance(event, FrameScored):
            self.history.add(event.step, event.scores)
            self.calls += event.calls
            self.cost_usd += event.cost_usd or 0.0
            self.texts[event.step] = "\n".join(t for t in (event.text, event.judge_text) if t)
        elif isinstance(event, Notice):
            # "resumed after step 20" says its step itself; a warning gets "step 3: …".
            where = f"step {event.step}: " if event.step is not None and \
                str(event.step) not in event.message else ""
            self.notices.append((event.level, f"{where}{event.message}"))
        elif isinstance(event, Finished):
            self.ended = event
        return self.screen()

    @classmethod
    def from_saved(cls, saved: SavedRun) -> RunView:
        """A finished (or killed) run read back from disk, as the screen showed it."""
        view = cls(run_dir=saved.path, steps=saved.meta.get("steps", saved.last_step),
                   unavailable=saved.meta.get("unavailable", {}), last_step=saved.last_step)
        view.history = saved.history
        view.texts = {step: row[5] for step, row in saved.steps.items() if len(row) > 5}
        kept = [s for s in range(saved.last_step + 1)
                if (saved.path / "frames" / frame_name(s)).is_file()]
        if len(kept) < saved.last_step + 1:  # a bundled recording, kept small
            view.notices.append((
                "info", f"full frames are kept at steps {', '.join(map(str, kept))} only; the "
                f"other steps show their {THUMB_SIDE} px thumbnails (scored on the full frames)"))
        status = saved.meta.get("status", "running")
        view.ended = Finished(status if status != "running" else "stopped", saved.last_step,
                              saved.meta.get("reason") or
                              ("interrupted: resume to continue" if status == "running" else ""))
        return view

    def frame_path(self, step: int) -> str | None:
        if self.run_dir is None or step < 0:
            return None
        return str(shown_frame(self.run_dir, step))

    def strip_path(self, step: int) -> str | None:
        """The strip's small copy of a frame; the frame itself where a run has none."""
        if self.run_dir is None or step < 0:
            return None
        thumb = thumb_path(self.run_dir, step)
        return str(thumb) if thumb.is_file() else self.frame_path(step)

    def screen(self) -> Screen:
        strip = [(self.strip_path(s), self.frame_path(s)) for s in range(self.last_step + 1)]
        download = zip_path(self.run_dir) if self.run_dir else None
        figure = raw_figure(self.history) if self.raw else delta_figure(self.history)
        return Screen(
            status=self.status(), summary=summarise(self.history, self.steps,
                                                    running=self.ended is None),
            frame=self.frame_path(self.last_step),
            first_frame=self.frame_path(0) if self.last_step >= 0 else None, strip=strip,
            figure=figure, verdict=self.verdict_rows(), model_text=self.model_text(),
            zip_path=str(download) if download and download.is_file() and self.ended else None,
            run_dir=str(self.run_dir) if self.run_dir else None, running=self.ended is None)

    def status(self) -> str:
        made = f"step {max(self.last_step, 0)} of {self.steps}"
        # Calls and spend matter where calls cost money; an offline backend's are noise.
        money = f" · {self.calls} calls · ≈ ${self.cost_usd:.2f} spent" if self.cost_usd else ""
        if self.ended is None and self.run_dir is None:  # metrics load before `Started`
            head = "⏳ **Starting** · loading the metrics…"
        elif self.ended is None:
            scoring = " · scoring it…" if self.history.last_step < self.last_step else ""
            head = f"⏳ **Running** · {made}{scoring}{money}"
        elif self.ended.status == "completed":
            head = f"✅ **Completed** · {made}{money}"
        elif self.ended.status == "stopped":
            head = f"⏹ **Stopped** after step {self.ended.last_step} " \
                   f"{_why(self.ended.reason, 'stopped ')}{money}. " \
                   f"Frames 0–{self.ended.last_step} are kept."
        else:
            head = f"❌ **Failed** {_why(self.ended.reason, 'failed ')}. " \
                   f"Frames 0–{self.ended.last_step} and their scores are kept{money}."
        recent = self.notices[-MAX_NOTICES_SHOWN:]
        return head + "".join(f"\n\n{NOTICE_MARKS[level]} {plain(text)}"
                              for level, text in recent)

    def verdict_rows(self) -> list[list[Any]]:
        """One row per column of scores; "—" where a checkpoint lies beyond the run so far."""
        rows = []
        last = self.history.last_step
        so_far = PROVISIONAL if last < max(CHECKPOINTS) else ""
        for row in self.history.verdict():
            info = self.history.infos[row.metric]
            label = display_name(info) + (" (reference)" if info.role != "metric" else "")
            if info.role == "fidelity":  # by its value: "= 27.8 dB" (a Δ from 80 dB is noise)
                series = self.history.scores[row.metric]
                at = [f"= {value_text(row.metric, series[s])}" if 0 <= s <= last else "—"
                      for s in (*CHECKPOINTS, last)]
            else:
                deltas = self.history.deltas(row.metric)
                at = [_fmt(v) if step <= last else "—" for step, v in
                      ((5, row.delta_5), (10, row.delta_10), (20, row.delta_20))]
                at.append(_fmt(deltas[-1]) if deltas else "")
            rho = "" if row.metric == REFERENCE_METRIC else _fmt(row.spearman_vs_psnr)
            word = VERDICT_WORDS[row.detects] + (so_far if row.detects is not None else "")
            robust = ROBUST_WORDS[row.detects_robust] + (
                so_far if row.detects_robust is not None else "")
            rows.append([label, word, robust, rho, _from_first(row), at[3], *at[:3],
                         info.direction.split(" is ")[0]])
        blank = [""] * (len(VERDICT_HEADERS) - 2)
        rows += [[name, f"unavailable: {why}", *blank] for name, why in self.unavailable.items()]
        return rows

    def model_text(self) -> str:
        said = [f"**step {s}**: {plain(t)}" for s, t in sorted(self.texts.items()) if t.strip()]
        return "\n\n".join(said[-20:]) or "_The generator said nothing (or has no words)._"


def shown_frame(run_dir: Path, step: int) -> Path:
    """The frame to show for a step: the full frame, or its thumbnail where a recording kept
    only that (`rundir.has_frame`)."""
    full = Path(run_dir) / "frames" / frame_name(step)
    thumb = thumb_path(run_dir, step)
    return thumb if not full.is_file() and thumb.is_file() else full


def _from_first(row: VerdictRow) -> str:
    """The trend from the first copy: ρ against PSNR over steps 1..N, and in words where a
    "fooled" verdict comes from step 0 -> 1 alone."""
    if row.metric == REFERENCE_METRIC:
        return ""
    rho = _fmt(row.spearman_from_first)
    if row.fooled_by_first_step:
        return f"fooled by step 1 only: worse at every checkpoint since (ρ {rho})"
    return rho


def _fmt(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.3g}"


def _why(reason: str, verb: str) -> str:
    """"by the user" from "stopped by the user", so the status does not say it twice. The
    reason may quote what a visitor controls (zip member names): it is shown as plain text."""
    return plain(reason.removeprefix(verb) if reason.startswith(verb) else f"({reason})")


def summarise(history: History, steps: int, running: bool) -> str:
    """The finding in one breath, in words and numbers, e.g. "After 20 steps, PSNR to the
    input fell 41 → 27 dB; 3 of 4 metrics call it better". Fidelity is quoted from step 1 (step
    0 is the input against itself); metrics by the sign of their Δ now; then the paper's
    verdict, marked "so far" while its checkpoints are ahead."""
    last = history.last_step
    if last < 1:
        return "" if last < 0 else "Step 0 is your input; the first copy is on its way…"
    when = f"So far, after {last} of {steps} steps" if running else f"After {last} steps"
    moves = _reference_moves(history, last)
    metrics = [n for n, i in history.infos.items() if i.role == "metric"]
    delta_now = {n: history.deltas(n)[last] for n in metrics}
    better = [n for n in metrics if math.isfinite(delta_now[n]) and delta_now[n] > 0]
    worse = [n for n in metrics if math.isfinite(delta_now[n]) and delta_now[n] < 0]
    parts = [f"**{when}**, " + (" and ".join(moves) if moves else "no reference is scored")]
    if metrics:
        parts.append(f"**{len(better)} of {len(metrics)} quality metrics call it better**"
                     + (f" ({', '.join(better)})" if better else "")
                     + (f", {len(worse)} worse" if worse else ""))
    rows = [row for row in history.verdict() if row.role == "metric"]
    tail = PROVISIONAL if last < max(CHECKPOINTS) else ""
    verdicts = [row.detects for row in rows]
    if any(v is not None for v in verdicts):
        parts.append(f"by the paper's test (Δ < 0 at steps 5, 10 and 20) "
                     f"{verdicts.count(True)} detect{'s' if verdicts.count(True) == 1 else ''} "
                     f"the damage and {verdicts.count(False)} "
                     f"{'is' if verdicts.count(False) == 1 else 'are'} fooled{tail}")
    robust = [row.detects_robust for row in rows]
    if any(v is not None for v in robust):
        parts.append(f"beyond each score's noise floor {robust.count(True)} of "
                     f"{len(rows)} detect{'s' if robust.count(True) == 1 else ''} it{tail}")
    first_only = [row.metric for row in rows if row.fooled_by_first_step]
    if first_only:
        one = len(first_only) == 1
        parts.append(f"{', '.join(first_only)} {'is' if one else 'are'} fooled by step 1 "
                     f"alone: from the first copy on, {'it gets' if one else 'they get'} "
                     "worse at every checkpoint")
    return "; ".join(parts) + "."


def _reference_moves(history: History, last: int) -> list[str]:
    """How each reference moved from step 1 to `last`: "PSNR to the input fell 41 → 27 dB"."""
    moves = []
    for name, info in history.infos.items():
        first, now = history.scores[name][1], history.scores[name][last]
        if info.role == "metric" or not (math.isfinite(first) and math.isfinite(now)):
            continue
        what = f"{name.upper()} to the input" if info.role == "fidelity" else display_name(info)
        if last == 1 or first == now:
            moves.append(f"{what} is {value_text(name, now)}")
        else:
            verb = "fell" if (now < first) != info.lower_better else "rose"
            moves.append(f"{what} {verb} {first:.3g} → {value_text(name, now)}")
    return moves
