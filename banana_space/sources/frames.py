"""Reading the frames of one chain from local files: a folder of frames, a zip of frames, an
animated GIF/WebP (in the order it plays), one of our run directories (its `frames/`, by step).
A folder's or a zip's files come in natural order (`2.png` before `10.png`) with the names they
have; their steps are read from those names by `chain_layout.py`. `dispatch.py` sends any source
(these, parquet/arrow shards, a hub dataset) to the reader here or in `shards.py`/`hub.py`, so
every source gets the same checks:

- a zip's declared sizes, compression ratio and total are checked before any member is
  inflated, and no member is ever read past its declared size: a zip bomb (a 2.6 MB upload
  holding 2.5 GB of zeros) is refused at once, with flat memory;
- an animated image's size is checked from its header before any frame is decoded, and its
  frames are read in order from one open decoder, each decoded once (`Animation`);
- every frame is decoded by `load_image`, under the same pixel limit as an upload.

Frames are decoded one at a time, on demand; the first is the chain's input, step 0. A zip is
read in memory and never extracted, so a member named `../../x.png` cannot write anywhere. Names
that come from a source are plain text in every message here: nothing is turned into markup.
This module imports no other reader, so `shards.py` and `hub.py` build on it without a circle.
"""

from __future__ import annotations

import re
import threading
import weakref
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from ..store.run import FRAME_STEP_JS, Run, frame_files
from .images import BadImage, LoadedImage, load_frame, load_image, open_image

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff", ".gif"}
ANIMATION_SUFFIXES = {".gif", ".webp"}  # a lone one in a folder is a chain by itself
ARCHIVE_SUFFIXES = {".zip"}
SHARD_SUFFIXES = {".parquet", ".arrow"}  # image datasets as rows of {bytes, path}
HUB_PREFIX = "hf://"

# A frame is at most 64 megapixels (images.MAX_DECLARED_PIXELS): 192 MB as raw 8-bit RGB, the
# largest an honest frame file can be (a BMP); PNG and JPEG frames are far smaller.
MAX_MEMBER_BYTES = 200 * 2**20
MAX_ZIP_BYTES = 4 * 2**30  # all members together, as declared
MAX_ZIP_MEMBERS = 20_000
# A directory entry is 46 bytes plus its name and extra fields: 20,000 of them with names of
# ~250 characters. zipfile holds an object per entry, so this bounds what it builds.
MAX_DIRECTORY_BYTES = MAX_ZIP_MEMBERS * 300
# Frames are compressed already: a PNG deflates by a few percent, a flat BMP by ~100x. Zeros
# deflate by ~1000x, which is what a bomb is made of. Small members may be as flat as they like.
MAX_RATIO = 200
RATIO_FROM_BYTES = 2**20


@dataclass
class Frames:
    """A chain's frames in order, decoded one at a time on demand, each with its step."""

    label: str  # what the source is called in messages: a file name or a hub path
    names: list[str]  # one per frame, in order
    read: Callable[[str], LoadedImage]
    notes: list[str] = field(default_factory=list)  # what was skipped, and credits
    # Each frame's step, rising: a gap is a step the chain has no frame for. Default: 0, 1, …
    steps: tuple[int, ...] = ()
    # The steps are still to be read from the names (a folder's, a zip's, rows' paths:
    # `chain_layout.as_chain`); False: the order and the steps are the source's own.
    steps_in_names: bool = False

    def __post_init__(self) -> None:
        self.steps = tuple(self.steps) or tuple(range(len(self.names)))

    def __len__(self) -> int:
        return len(self.names)

    def frame(self, index: int) -> LoadedImage:
        """The frame at `index` in order (its step is `steps[index]`)."""
        return self.read(self.names[index])


def natural_key(name: str) -> list[Any]:
    """Sort key that orders embedded numbers by value: frame_2 before frame_10."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


def is_image_name(name: str) -> bool:
    return Path(name).suffix.lower() in IMAGE_SUFFIXES


def hidden_path(relative: Path) -> bool:
    """A dot-file, a dot-folder or macOS's __MACOSX: never a frame."""
    return any(part.startswith(".") or part == "__MACOSX" for part in relative.parts)


def frames_in_memory(label: str, frames: Sequence[tuple[int, Image.Image]]) -> Frames:
    """Frames already decoded, (step, frame) in step order: a chain fetched and checked whole
    (a dataset's chain sampled at some steps)."""
    by_name = {str(step): image for step, image in frames}
    return Frames(label, list(by_name), lambda name: LoadedImage(by_name[name], []),
                  steps=tuple(step for step, _ in frames))


def frames_in_run(run: Path) -> Frames:
    """One of our run directories: its lossless frames by the steps their names give
    (`step_005.png` is step 5; a sampled chain's gaps are kept)."""
    named = ((re.fullmatch(FRAME_STEP_JS, p.name), p) for p in frame_files(Run(run).frames_dir))
    by_step = {int(found.group(1)): path for found, path in named if found}
    steps = sorted(by_step)
    return Frames(run.name, [str(by_step[s].relative_to(run)) for s in steps],
                  lambda name: load_image(run / name), steps=tuple(steps))


def frames_from_files(root: Path, names: list[str], label: str) -> Frames:
    """Image files under `root` (names relative to it) in natural order; the rest skipped."""
    return _sorted(label, names, lambda name: load_image(root / name))


def _sorted(label: str, names: list[str], read: Callable[[str], LoadedImage]) -> Frames:
    images = [n for n in names if is_image_name(n)]
    skipped = sorted(set(names) - set(images))
    notes = [f"skipped {len(skipped)} non-image file(s): {', '.join(skipped[:5])}"
             + (" …" if len(skipped) > 5 else "")] if skipped else []
    return Frames(label, sorted(images, key=natural_key), read, notes, steps_in_names=True)


def check_zip(infos: list[zipfile.ZipInfo], label: str) -> None:
    """Refuse a zip from its directory alone, before anything is inflated."""
    if len(infos) > MAX_ZIP_MEMBERS:
        raise BadImage(f"{label} holds {len(infos)} files; the limit is {MAX_ZIP_MEMBERS}")
    for info in infos:
        if info.file_size > MAX_MEMBER_BYTES:
            raise BadImage(f"{label}: {info.filename} declares {_mb(info.file_size)} "
                           f"uncompressed; the limit per file is {_mb(MAX_MEMBER_BYTES)}")
        if (info.file_size > RATIO_FROM_BYTES
                and info.file_size > MAX_RATIO * max(info.compress_size, 1)):
            ratio = info.file_size // max(info.compress_size, 1)
            raise BadImage(f"{label}: {info.filename} is compressed {ratio}:1, more than "
                           f"{MAX_RATIO}:1 (a zip bomb?)")
    total = sum(info.file_size for info in infos)
    if total > MAX_ZIP_BYTES:
        raise BadImage(f"{label} declares {_mb(total)} uncompressed; the limit is "
                       f"{_mb(MAX_ZIP_BYTES)}")


def _mb(size: int) -> str:
    return f"{size / 2**20:,.0f} MB"


def check_directory(path: Path, label: str) -> None:
    """Refuse a zip whose directory is too large from its end record alone (a few bytes at the
    end of the file), before zipfile reads a single entry: a 1,000,000-member zip once cost
    530 MB of entries before the member count was checked. The record's count and the
    directory's size are both bounded: a lying count cannot pass a larger directory."""
    try:
        with path.open("rb") as handle:
            # zipfile's own reader of the end record (zip64 included), private but unchanged
            # since Python 2; it reads the last 64 KiB at most.
            end = zipfile._EndRecData(handle)  # type: ignore[attr-defined]
    except OSError as error:
        raise BadImage(f"{label} cannot be read ({error.strerror})") from None
    if end is None:
        raise BadImage(f"{label} is a damaged zip (no end of central directory)")
    entries, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]  # type: ignore
    if entries > MAX_ZIP_MEMBERS or size > MAX_DIRECTORY_BYTES:
        raise BadImage(f"{label} holds {entries} files in a {_mb(size)} directory; the limit "
                       f"is {MAX_ZIP_MEMBERS} files")


def frames_in_zip(path: Path) -> Frames:
    label = path.name
    check_directory(path, label)
    try:
        with zipfile.ZipFile(path) as archive:
            infos = [i for i in archive.infolist() if not i.is_dir()]
    except zipfile.BadZipFile as error:
        raise BadImage(f"{label} is a damaged zip ({error})") from None
    check_zip(infos, label)
    names = [i.filename for i in infos if not hidden_path(Path(i.filename))]

    def read(name: str) -> LoadedImage:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo(name)
            with archive.open(info) as member:
                data = member.read(info.file_size + 1)  # never past what it declared
        if len(data) > info.file_size:
            raise BadImage(f"{name} holds more data than it declares (a zip bomb?)")
        return load_image(data)

    return _sorted(label, names, read)


def frames_in_file(path: Path) -> Frames:
    """One file that is a chain by itself: a zip of frames, else an animated GIF/WebP.

    Args:
        path: a local file.

    Returns:
        Its frames, in order.
    """
    return frames_in_zip(path) if zipfile.is_zipfile(path) else frames_in_animation(path)


def frames_in_animation(path: Path) -> Frames:
    """An animated GIF/WebP: its size is checked from the header (`open_image`) before any
    frame is decoded; counting frames only parses their headers; each frame is decoded within
    the memory budget at the animation's full size (`load_frame`), once, in order
    (`Animation`)."""
    with open_image(path) as animation:
        count = getattr(animation, "n_frames", 1)
    return Frames(path.name, [str(i) for i in range(count)], Animation(path, count).read)


class Animation:
    """An animation's frames read from one open decoder kept between reads. GIF and WebP
    frames are deltas on the frames before them, so opening the file again and seeking to
    frame i decodes frames 0…i each time: a 60-frame 2000² GIF read that way cost 128 s, its
    last frame 3.6 s (`bench/animation_reading.py`). Here frame i after frame i-1 decodes frame i
    alone; a read further back opens the file again. The file is closed after the last frame,
    or when the chain's frames are dropped."""

    def __init__(self, path: Path, count: int) -> None:
        self.path, self.count = path, count
        self._open: list[Any] = []  # the decoder, once open (a list the finalizer can empty)
        self._lock = threading.Lock()  # one decoder, one reader at a time
        weakref.finalize(self, _close, self._open)

    def read(self, name: str) -> LoadedImage:
        index = int(name)
        with self._lock:
            if self._open and self._open[0].tell() > index:
                _close(self._open)
            if not self._open:
                self._open.append(open_image(self.path))
            try:
                return load_frame(self._open[0], index)
            except BadImage:
                _close(self._open)  # a damaged frame: the next read starts afresh
                raise
            finally:
                if index == self.count - 1:
                    _close(self._open)


def _close(opened: list[Any]) -> None:
    while opened:
        opened.pop().close()
