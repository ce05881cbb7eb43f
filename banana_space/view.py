"""The one adapter from run events to what a screen shows, as plain data (no gradio here).

`RunView.apply(event)` folds an event into the view and returns a `Screen`: the status line,
the one-line summary of the finding, the current frame, the strip of frames, the curves, the
verdict table, what the model said and the zip. The app maps a `Screen` onto its components;
tests read it directly.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .backends.simulate import DEFAULT_PROFILE, PROFILES
from .chain import remake
from .chain.comparison import Comparison
from .chain.lifecycle import SideEvent, SideFailed
from .chain.pace import progress_line
from .events import Event, Finished, FrameMade, Notice, Started
from .finding import headline, summarise
from .markup import escape_markdown
from .store.run import THUMB_SIDE, Run, SavedRun
from .verdict.analysis import provisional
from .verdict.columns import VERDICT_HEADERS, Shown, page_cells
from .verdict.history import History, VerdictRow
from .verdict.plots import Figure, delta_figure, raw_figure
from .votes.ledger import DamagedVotes
from .votes.plot import people_traces
from .votes.tally import PairTally, people_row

NOTICE_MARKS = {"info": "ℹ️", "warning": "⚠️"}
# The 21 metrics Banana100 tried (the catalog's preset), for the page's line on its real chains.
MAX_NOTICES_SHOWN = 4


@dataclass
class Screen:
    status: str
    summary: str  # the finding in words and numbers, in full
    headline: str  # the finding in at most `HEADLINE_WORDS` words (`headline`)
    frame: str | None
    first_frame: str | None  # frame 0, what every frame is compared with
    strip: list[tuple[str, str] | None]  # (thumbnail, frame) per step so far; None: no frame
    figure: Figure  # a plotly figure spec (plain dict)
    verdict: list[list[Any]]
    model_text: str
    zip_path: str | None
    animation_path: str | None  # the chain as an animated WebP, made with the zip
    run_dir: str | None
    running: bool
    # The newest step the compare slider has offered: its maximum never shrinks below it, since
    # the page may still send that value (a frame made, then dropped by Stop).
    offered: int = -1


@dataclass
class RunView:
    raw: bool = False  # small multiples of raw scores instead of the shared delta axis
    run_dir: Path | None = None
    steps: int = 0
    history: History = field(default_factory=lambda: History([]))  # the run's fold
    unavailable: dict[str, str] = field(default_factory=dict)
    notices: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    started: bool = False  # `Started` came: the metrics have loaded
    loading: str = ""  # which metric the run waits for before it starts; gone once it starts
    last_step: int = -1  # the newest frame made (its scores may still be coming)
    made_at: dict[int, float] = field(default_factory=dict)  # step -> when it came (monotonic)
    offered: int = -1  # the newest frame ever shown (Screen.offered)
    ended: Finished | None = None
    gaps: frozenset[int] = frozenset()  # steps a sampled chain does not have (no frame)
    simulated: bool = False  # a model of a generator's damage (`simulates_damage`)

    def apply(self, event: Event) -> Screen:
        self.history.apply(event)  # the scores and what was said at each step
        if isinstance(event, Started):
            self.run_dir, self.steps, self.started = event.run_dir, event.steps, True
            self.loading = ""
            self.unavailable = dict(event.unavailable)
            self.simulated = simulates_damage(event.settings)
        elif isinstance(event, FrameMade):
            self.gaps |= frozenset(range(self.last_step + 1, event.step))  # a recording's gap
            self.last_step = event.step
            self.made_at[event.step] = time.monotonic()
            self.offered = max(self.offered, event.step)
        elif isinstance(event, Notice) and not self.started:  # a metric is loading
            self.loading = event.message
        elif isinstance(event, Notice):
            # "resumed after step 20" says its step itself; a warning gets "step 3: …".
            where = f"step {event.step}: " if event.step is not None and \
                f"step {event.step}" not in event.message else ""
            self.add_notice(event.level, f"{where}{event.message}")
        elif isinstance(event, Finished):
            self.ended = event
            self.last_step = event.last_step  # a frame made but not scored was dropped
        return self.screen()

    def add_notice(self, level: str, text: str) -> None:
        """A notice replaces its earlier versions (the same words with other numbers: "step 9:
        frame is 1024 x 673 …" after "step 8: frame is 1024 x 683 …"), so the newest says it."""
        kind = _kind(text)
        self.notices = [n for n in self.notices if _kind(n[1]) != kind] + [(level, text)]

    @classmethod
    def from_saved(cls, saved: SavedRun) -> RunView:
        """A finished (or killed) run read back from disk, as the screen showed it."""
        view = cls(run_dir=saved.path, steps=saved.meta.get("steps", saved.last_step),
                   unavailable=saved.meta.get("unavailable", {}), last_step=saved.last_step,
                   started=True,
                   simulated=simulates_damage(saved.meta.get("settings", {})))
        view.history = saved.history
        # What the input was (its source, its licence, a downscale): facts of the run.
        view.notices += [("info", note) for note in
                         saved.meta.get("settings", {}).get("input_notes", [])]
        made = [s for s in range(saved.last_step + 1) if saved.run.has_frame(s)]
        view.gaps = frozenset(range(saved.last_step + 1)) - set(made)
        view.notices += recording_notices(saved)
        status = saved.meta.get("status", "running")
        view.ended = Finished(status if status != "running" else "stopped", saved.last_step,
                              saved.meta.get("reason") or
                              ("interrupted: resume to continue" if status == "running" else ""))
        return view

    def frame_path(self, step: int) -> str | None:
        if self.run_dir is None or step < 0:
            return None
        return str(Run(self.run_dir).shown_frame(step))

    def strip_path(self, step: int) -> str | None:
        """The strip's small copy of a frame; the frame itself where a run has none."""
        if self.run_dir is None or step < 0:
            return None
        thumb = Run(self.run_dir).thumb_path(step)
        return str(thumb) if thumb.is_file() else self.frame_path(step)

    def screen(self) -> Screen:
        strip = [None if s in self.gaps else (self.strip_path(s), self.frame_path(s))
                 for s in range(self.last_step + 1)]
        run = Run(self.run_dir) if self.run_dir else None
        download, animation = (run.zip_path, run.animation_path) if run else (None, None)
        # The compared frame is the newest unless the visitor picks another (handlers.compare).
        pairs, people = people_of(self.run_dir, self.history.last_step)
        figure = raw_figure(self.history, marked=self.last_step) if self.raw else \
            delta_figure(self.history, marked=self.last_step, also=people_traces(pairs, people))
        return Screen(
            status=self.status(), summary=summarise(self.history, self.steps,
                                                    running=self.ended is None,
                                                    simulated=self.simulated, people=people),
            headline=headline(self.history, self.steps, running=self.ended is None),
            frame=self.frame_path(self.last_step),
            first_frame=self.frame_path(0) if self.last_step >= 0 and 0 not in self.gaps
            else None, strip=strip,
            figure=figure, verdict=self.verdict_rows(people), model_text=self.model_text(),
            zip_path=str(download) if download and download.is_file() and self.ended else None,
            animation_path=str(animation) if animation and animation.is_file() and self.ended
            else None,
            run_dir=str(self.run_dir) if self.run_dir else None, running=self.ended is None,
            offered=max(self.offered, self.last_step))

    def status(self) -> str:
        made = f"step {max(self.last_step, 0)} of {self.steps}"
        # Calls and spend matter where calls cost money; an offline backend's are noise.
        calls, cost = self.history.calls, self.history.cost_usd
        money = f" · {calls} calls · ≈ ${cost:.2f} spent" if cost else ""
        if self.ended is None and not self.started:  # metrics load before `Started`
            head = f"⏳ **Starting** · {escape_markdown(self.loading) or 'loading the metrics…'}"
        elif self.ended is None:
            scoring = " · scoring it…" if self.history.last_step < self.last_step else ""
            head = f"⏳ **Running** · {progress_line(self.made_at, self.steps)}{scoring}{money}"
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
        return head + "".join(f"\n\n{NOTICE_MARKS[level]} {escape_markdown(text)}"
                              for level, text in recent)

    def verdict_rows(self, people: VerdictRow | None = None) -> list[list[Any]]:
        """One row per column of scores, as the verdict table's columns make it
        (`verdict.columns`, the answer first), the room's votes' row where anyone voted, then
        one per metric that could not be used."""
        shown = Shown(self.history, provisional(self.history.last_step, self.steps,
                                                self.ended is None))
        verdict = [*self.history.verdict(), *([people] if people is not None else [])]
        rows = [page_cells(row, shown) for row in verdict]
        blank = [""] * (len(VERDICT_HEADERS) - 2)
        rows += [[name, f"unavailable: {why}", *blank] for name, why in self.unavailable.items()]
        return rows

    def model_text(self) -> str:
        said = [f"**step {s}**: {escape_markdown(row.said)}"
                for s, row in sorted(self.history.steps.items()) if row.said.strip()]
        return "\n\n".join(said[-20:]) or "_The generator said nothing (or has no words)._"


@dataclass
class PairView:
    """A comparison's two sides as two `RunView`s, folded from the pair's events (a side that
    could not start has none); the record says what each side is and why one failed."""

    comparison: Comparison
    views: dict[str, RunView] = field(default_factory=lambda: {"A": RunView(), "B": RunView()})

    def apply(self, event: SideEvent | SideFailed) -> PairView:
        if isinstance(event, SideFailed):
            self.views.pop(event.side, None)
        else:
            self.views[event.side].apply(event.event)
        return self

    def screen(self) -> PairView:
        return self

    @classmethod
    def from_saved(cls, comparison: Comparison, saved: dict[str, SavedRun]) -> PairView:
        """A finished comparison as saved (`saved`: each side's run that started)."""
        return cls(comparison, {side: RunView.from_saved(run) for side, run in saved.items()})


def simulates_damage(settings: dict[str, Any]) -> bool:
    """Whether a run's settings (run.json's) make a simulation of a generator's damage: the
    `simulate` backend with a profile of kind "damage", not a control or a nuisance chain."""
    if settings.get("backend") != "simulate":
        return False
    profile = settings.get("backend_options", {}).get("profile", DEFAULT_PROFILE)
    return profile in PROFILES and PROFILES[profile].kind == "damage"


def recording_notices(saved: SavedRun) -> list[tuple[str, str]]:
    """What a bundled recording (kept small) shows instead of its dropped full frames."""
    kept = [s for s in range(saved.last_step + 1)
            if saved.run.frame_path(s).is_file()]
    if len(kept) == saved.last_step + 1:
        return []
    failed = remake.FAILED.get(saved.path.resolve())
    if remake.remakeable(saved.path) and not failed:
        return [("info", "this recording keeps a few full frames; the others are re-made from "
                         "its seed as they are shown, each checked against the recorded "
                         "frame's pixel hash")]
    why = f" ({failed})" if failed else ""
    return [("warning", f"full frames are kept at steps {', '.join(map(str, kept))} only{why}; "
                        f"the other steps show their {THUMB_SIDE} px thumbnails, labelled so "
                        "(scored on the full frames)")]


def _kind(text: str) -> str:
    """What a notice is about, whatever its numbers."""
    return re.sub(r"\d+(\.\d+)?", "#", re.sub(r"^step \d+: ", "", text))


def _why(reason: str, verb: str) -> str:
    """"by the user" from "stopped by the user", so the status does not say it twice. The
    reason may quote what a visitor controls (zip member names): it is shown as plain text."""
    return escape_markdown(reason.removeprefix(verb) if reason.startswith(verb) else f"({reason})")


def people_of(run_dir: Path | None, last_step: int) -> tuple[list[PairTally], VerdictRow | None]:
    """The room's votes on a run so far and their people row (`votes.tally`); none for a run
    not on disk yet, or one whose votes.csv cannot be read (the page goes on without them)."""
    if run_dir is None:
        return [], None
    try:
        pairs = Run(run_dir).ledger().pairs()
    except DamagedVotes:
        return [], None
    return pairs, people_row(pairs, last_step)
