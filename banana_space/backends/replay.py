"""`replay`: plays back a chain recorded elsewhere, so any chain can be scored here.

A recording is anything `banana_space.sources.dispatch` reads: a folder of frames, a zip, an animated
GIF/WebP, one of our run directories, or `hf://datasets/OWNER/NAME[/PATH]`. Frame 0 is its
first frame: the chain's input. The checks (zip bombs, pixel limits) live there, once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image

from ..common import GenerationFailed, Report, report_nothing
from ..sources.images import BadImage, LoadedImage
from ..sources.dispatch import HUB_PREFIX, open_frames
from .base import BackendInfo, Edit, Entry, Option

INFO = BackendInfo(
    name="replay",
    label="Replay a recorded chain (offline)",
    description="Plays back frames recorded elsewhere: a folder, a zip, an animated GIF/WebP, "
                "or a chain on the Hugging Face hub (hf://datasets/…).",
    options=(Option("source", flag=False),),  # the upload, or `banana-space score FRAMES`
    plays_recording=True,
)


class ReplayBackend:
    info = INFO

    def __init__(self, source: str | Path) -> None:
        self.source = str(source)
        self.recording = open_frames(source)

    def unavailable_reason(self) -> str | None:
        return None

    def settings(self) -> dict[str, Any]:
        name = self.source if self.source.startswith(HUB_PREFIX) else Path(self.source).name
        return {"source": name, "frames": len(self.recording)}

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
