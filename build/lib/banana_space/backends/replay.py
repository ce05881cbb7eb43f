"""`replay`: plays back a chain recorded elsewhere, so any chain can be scored here.

A recording is a folder of frames, a zip of frames, or an animated GIF/WebP. Frames sort
naturally (`2.png` before `10.png`) and frame 0 is the first one: it is the chain's input.
Files that are not images are skipped and listed in `notes`. A zip is read in memory and never
extracted, so a member named `../../x.png` cannot write anywhere.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image

from ..images import BadImage, LoadedImage, load_image
from .base import BackendInfo, Edit, Entry, GenerationFailed, Report, report_nothing

INFO = BackendInfo(
    name="replay",
    label="Replay a recorded chain (offline)",
    description="Plays back frames recorded elsewhere: a folder, a zip, or an animated GIF/WebP.",
    options=("source",),
    plays_recording=True,
)

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff", ".gif"}


def natural_key(name: str) -> list[Any]:
    """Sort key that orders embedded numbers by value: step_2 before step_10."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


class Recording:
    """The frames of a recorded chain, decoded one at a time on demand."""

    def __init__(self, names: list[str], read: Callable[[str], LoadedImage],
                 notes: list[str]) -> None:
        self.names = names
        self._read = read
        self.notes = notes

    def __len__(self) -> int:
        return len(self.names)

    def frame(self, index: int) -> LoadedImage:
        return self._read(self.names[index])

    @classmethod
    def open(cls, source: str | Path) -> Recording:
        path = Path(source)
        if path.is_dir():
            recording = cls._from_folder(path)
        elif zipfile.is_zipfile(path):
            recording = cls._from_zip(path)
        elif path.is_file():
            recording = cls._from_animation(path)
        else:
            raise BadImage(f"{path} is not a folder, zip or animated image")
        if len(recording) < 2:
            raise BadImage(f"a recording needs at least 2 frames; {path.name} has "
                           f"{len(recording)}")
        return recording

    @classmethod
    def _from_folder(cls, folder: Path) -> Recording:
        files = [p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")]
        return cls._sorted([str(p.relative_to(folder)) for p in files],
                           lambda name: load_image(folder / name))

    @classmethod
    def _from_zip(cls, path: Path) -> Recording:
        with zipfile.ZipFile(path) as archive:
            names = [i.filename for i in archive.infolist()
                     if not i.is_dir() and not Path(i.filename).name.startswith(".")
                     and "__MACOSX" not in i.filename]

        def read(name: str) -> LoadedImage:
            with zipfile.ZipFile(path) as archive:
                return load_image(archive.read(name))

        return cls._sorted(names, read)

    @classmethod
    def _sorted(cls, names: list[str], read: Callable[[str], LoadedImage]) -> Recording:
        images = [n for n in names if Path(n).suffix.lower() in IMAGE_SUFFIXES]
        skipped = sorted(set(names) - set(images))
        notes = [f"skipped {len(skipped)} non-image file(s): {', '.join(skipped[:5])}"
                 + (" …" if len(skipped) > 5 else "")] if skipped else []
        return cls(sorted(images, key=natural_key), read, notes)

    @classmethod
    def _from_animation(cls, path: Path) -> Recording:
        try:
            with Image.open(path) as animation:
                count = getattr(animation, "n_frames", 1)
        except OSError as error:
            raise BadImage(f"{path.name} is not a folder, zip or animated image ({error})") \
                from None

        def read(name: str) -> LoadedImage:
            with Image.open(path) as animation:
                animation.seek(int(name))
                return load_image(animation.convert("RGBA"))

        return cls([str(i) for i in range(count)], read, [])


class ReplayBackend:
    info = INFO

    def __init__(self, source: str | Path) -> None:
        self.source = str(source)
        self.recording = Recording.open(source)

    def unavailable_reason(self) -> str | None:
        return None

    def settings(self) -> dict[str, Any]:
        return {"source": Path(self.source).name, "frames": len(self.recording)}

    @property
    def frame_count(self) -> int:
        return len(self.recording)

    def first_frame(self) -> LoadedImage:
        """Frame 0 is the chain's input; the notes say what was skipped or changed."""
        first = self.recording.frame(0)
        return LoadedImage(first.image, first.notes + self.recording.notes)

    def edit(self, image: Image.Image, prompt: str, *, seed: int, step: int,
             report: Report = report_nothing) -> Edit:
        if step >= len(self.recording):
            raise GenerationFailed(f"the recording has only {len(self.recording)} frames")
        try:
            loaded = self.recording.frame(step)
        except BadImage as error:
            raise GenerationFailed(f"frame {self.recording.names[step]}: {error}") from None
        return Edit(image=loaded.image, text="; ".join(loaded.notes), calls=0)


ENTRIES = (Entry(INFO, ReplayBackend),)
