"""What the first screen offers to open at once: the real chains prepared so far (Banana100's
own, `real_chains`), then the bundled recordings, the damage a generator leaves first and the
controls after, each labelled; and the dataset's own starts, for the example pictures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..backends.simulate import KINDS, PROFILES
from ..store.run import Run
from .real_chains import LABEL, prepared


@dataclass(frozen=True)
class Example:
    """A finished chain the page opens at once: a real one, or one of our simulations."""

    path: Path  # the run to copy into the runs folder
    label: str  # the button's text
    credit: str  # where it comes from and under which licence ("" for our own)
    real: bool


@dataclass(frozen=True)
class Start:
    """One of the dataset's own starts (a prepared chain's step 0, read from the dataset), for
    the page's example pictures: the paper's conditions exactly."""

    image: Path  # the full picture, what picking it uploads
    thumb: Path  # what the gallery shows
    caption: str  # "Banana100 start · chains/0007 · CC BY-NC-SA 4.0": whose, and its licence


def dataset_starts(root: Path) -> list[Start]:
    """The starts of the real chains prepared so far that have one (a chain with no step 0
    has none to offer), in the page's order."""
    shown = []
    for path in prepared(root):
        run = Run(path)
        if not run.frame_path(0).is_file():
            continue
        settings = run.load().meta["settings"]
        chain = settings.get("real_chain", LABEL).removeprefix(LABEL).strip()
        credit = next((n for n in settings.get("input_notes", []) if "licence:" in n), "")
        licence = credit.rpartition("licence: ")[2] or "licence unknown"
        thumb = run.thumb_path(0)
        shown.append(Start(run.frame_path(0), thumb if thumb.is_file() else run.frame_path(0),
                           f"Banana100 start · {chain} · {licence}"))
    return shown


def examples(root: Path, recorded: Path) -> list[Example]:
    """Real chains first (those prepared so far), then the bundled recordings: the damage a
    generator leaves first, then the controls (`simulate.KINDS`' order), each labelled
    "simulated" with its profile, and a control or a nuisance as one."""
    shown = []
    for path in prepared(root):
        saved = Run(path).load()
        notes = saved.meta["settings"].get("input_notes", [])
        label = saved.meta["settings"].get("real_chain", LABEL)
        first = 0 if saved.run.has_frame(0) else 1
        shown.append(Example(path, f"{label} · steps {first}–{saved.last_step}",
                             next((n for n in notes if "licence:" in n), ""), True))
    recordings = []
    for path in (p for p in Path(recorded).iterdir() if Run(p).exists()):
        settings = Run(path).load().meta["settings"]
        profile = settings.get("backend_options", {}).get("profile")
        kind = PROFILES[profile].kind if profile in PROFILES else "damage"
        start = path.name.split("-")[0].capitalize()
        what = "simulated" if kind == "damage" else f"simulated {kind}"
        what += f" ({profile} profile)" if profile else ""
        recordings.append((KINDS.index(kind), path.name, Example(
            path, f"{start} · {what} · {settings.get('steps')} steps", "", False)))
    return shown + [example for *_, example in sorted(recordings)]
