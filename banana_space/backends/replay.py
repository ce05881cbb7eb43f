"""`replay`: plays back a chain recorded elsewhere, so any chain can be scored here.

A recording is anything `banana_space.sources.dispatch` reads: a folder of frames, a zip, an
animated GIF/WebP, one of our run directories, or `hf://datasets/OWNER/NAME[/PATH]`. Its steps
are the ones its names give (`sources/chain_layout.py`): step 0 is the chain's input, and a step
it has no frame for is played as a gap (`steps`: the run makes no frame and no score there).
The checks (zip bombs, pixel limits, the layout) live there, once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image

from ..backends.base import GenerationFailed, Report, report_nothing
from ..sources.dispatch import HUB_PREFIX, open_frames
from ..sources.images import BadImage, LoadedImage
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
        self._index = {step: i for i, step in enumerate(self.recording.steps)}

    def unavailable_reason(self) -> str | None:
        return None

    def settings(self) -> dict[str, Any]:
        name = self.source if self.source.startswith(HUB_PREFIX) else Path(self.source).name
        return {"source": name, "frames": len(self.recording)}

    @property
    def steps(self) -> tuple[int, ...]:
        """The steps the recording has a frame for, rising from 0 (gaps kept)."""
        return self.recording.steps

    def first_frame(self) -> LoadedImage:
        """Step 0 is the chain's input; the notes say what was skipped or changed."""
        first = self.recording.frame(0)
        return LoadedImage(first.image, first.notes + self.recording.notes)

    def edit(self, image: Image.Image, prompt: str, *, seed: int, step: int,
             report: Report = report_nothing) -> Edit:
        if step not in self._index:
            raise GenerationFailed(f"the recording has no frame for step {step}")
        index = self._index[step]
        try:
            loaded = self.recording.frame(index)
        except BadImage as error:
            raise GenerationFailed(f"frame {self.recording.names[index]}: {error}") from None
        return Edit(image=loaded.image, text="; ".join(loaded.notes), calls=0)


ENTRIES = (Entry(INFO, ReplayBackend),)
