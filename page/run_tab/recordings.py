"""The bundled recordings, ready before anyone clicks one: their downloads (the zip and the
chain's animation) are made at start-up, in the background, in a folder of their own, and a
click copies the recording into the runs folder with them, so that opening it only reads and
shows it (its downloads took 1.3-1.7 s of the click on 2 busy cores, docs/performance.md). A
prepared real chain (`banana_space.chain.real_chains`) is opened the same way, with the
downloads made where it was prepared.

The prepared copies live outside the runs folder (in the system's temporary folder, named after
the runs folder), so the runs folder holds only what visitors opened and retention never
counts them; they are made afresh at every start, from the recordings of this checkout.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from banana_space.chain.runs import open_saved
from banana_space.files import temporary_name
from banana_space.store.run import Run
from banana_space.store.runids import copy_in
from page.settings import RECORDED, SETTINGS


def prepared_folder(runs_root: Path) -> Path:
    """Where the app serving `runs_root` prepares its recordings' downloads."""
    return Path(tempfile.gettempdir()) / (
        "banana-recorded-" + hashlib.sha256(str(runs_root).encode()).hexdigest()[:12])


PREPARED = prepared_folder(SETTINGS.runs_root)


def recording_names() -> set[str]:
    return {p.name for p in RECORDED.iterdir() if p.is_dir()}


def prepare_recordings(folder: Path = PREPARED) -> threading.Thread:
    """Start making every recording's downloads in `folder`, in the background; a failure
    (a full disk) is one line in the log, and that recording is zipped when it is opened."""

    def prepare() -> None:
        shutil.rmtree(folder, ignore_errors=True)  # another checkout's recordings, maybe
        for name in sorted(recording_names()):
            try:
                open_saved(copy_in(RECORDED / name, folder).path)  # zips and animates it
            except OSError as error:
                print(f"recording {name} not prepared: {error.strerror or error}",
                      file=sys.stderr)
                shutil.rmtree(folder / name, ignore_errors=True)

    preparing = threading.Thread(target=prepare, name="prepare-recordings", daemon=True)
    preparing.start()
    return preparing


def opened_copy(source: Path, ready: Path) -> Run:
    """The finished run `source` (a recording, a prepared real chain) copied into the runs
    folder (once), with the downloads made for it in `ready` where they are (each copied whole,
    then renamed into place), so that opening the copy does not make them again."""
    run, made = copy_in(source, SETTINGS.runs_root), Run(ready)
    for prepared, target in ((made.zip_path, run.zip_path),
                             (made.animation_path, run.animation_path)):
        if prepared.is_file() and not target.exists():
            temporary = temporary_name(target)
            try:
                shutil.copyfile(prepared, temporary)
                temporary.replace(target)
            finally:
                temporary.unlink(missing_ok=True)
    return run
