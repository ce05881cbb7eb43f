"""Which runs are kept: the runs folder within a count and a byte budget, by shares (a
visitor's flood evicts its own), never a run being written; folders that never became a run
cleared after a grace period.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from .diskspace import free_bytes
from .run import Run, RunBusy, runs_in


def directory_bytes(path: Path) -> int:
    """Bytes on disk under `path`; files that vanish meanwhile (a writer's temporaries, a run
    another prune deletes) count as nothing."""
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.path.getsize(os.path.join(folder, name))
    return total


def prune_runs(root: Path, keep: int, active: Iterable[Path] = (),
               keep_bytes: int | None = None, owner: str | None = None,
               owner_keep: int | None = None, owner_bytes: int | None = None,
               min_age_s: float = 0.0, min_free_bytes: int = 0) -> list[Path]:
    """Delete the oldest run directories beyond the newest `keep`, or beyond `keep_bytes` on
    disk all together (zips included), never one being written (by any thread or process:
    its writer's lock is held) nor one in `active`. Those spared still count toward both.
    With `owner`, that owner's own runs beyond its newest `owner_keep` (or `owner_bytes`) go
    first, so one visitor's flood of runs evicts only its own. A run is never evicted to make
    room for someone else while it is younger than `min_age_s` or inside its owner's share
    (its owner's newest `owner_keep` within `owner_bytes`; a run without an owner, a
    recording or a restored run, has no share): one visitor with many addresses evicts
    nobody's run but its own, and the runs kept may then pass `keep` for a while.
    Owners are opaque keys (`Run.made_by`). With `min_free_bytes`, the runs then keep that
    much of their disk free (oldest first, shares or not: the disk is the hard limit, and the
    owners of old runs may be long gone), never deleting a run younger than `min_age_s`.

    Returns:
        The run directories deleted: the owner's own first, then the rest; each pass
        newest first.
    """
    protected = {Path(p).resolve() for p in active}
    runs = [run.path for run in sorted(runs_in(root), key=Run.modified, reverse=True)]
    doomed = []
    if owner is not None:
        mine = [run for run in runs if Run(run).made_by == owner]
        doomed = _beyond(mine, owner_keep or len(mine), owner_bytes, protected)
        runs = [run for run in runs if run not in doomed]
    now = time.time()
    young = {run.resolve() for run in runs if now - Run(run).modified() < min_age_s}
    doomed += _beyond(runs, keep, keep_bytes,
                      protected | young | _in_shares(runs, owner_keep, owner_bytes))
    if min_free_bytes:  # the disk is the hard limit: shares give way to it, young runs not
        runs = [run for run in runs if run not in doomed]
        room = sum(map(directory_bytes, runs)) + free_bytes(root) - min_free_bytes
        doomed += _beyond(runs, len(runs), room, protected | young)
    return doomed


def clear_orphans(root: Path, grace_s: float) -> list[Path]:
    """Delete the folders in the runs folder that never became a run (no run.json: a run
    whose start failed, on a full disk say) once older than `grace_s` and not being written;
    dot-folders (previews, restores) are not runs. Returns the folders deleted."""
    now, cleared = time.time(), []
    for folder in Path(root).iterdir() if Path(root).is_dir() else ():
        if (folder.name.startswith(".") or not folder.is_dir() or folder.is_symlink()
                or Run(folder).exists()):
            continue
        with contextlib.suppress(FileNotFoundError):
            if now - folder.stat().st_mtime > grace_s and _delete_unless_busy(folder):
                cleared.append(folder)
    return cleared


def _in_shares(runs: list[Path], owner_keep: int | None, owner_bytes: int | None
               ) -> set[Path]:
    """The runs (newest first) inside their owner's share: each owner's newest `owner_keep`
    within `owner_bytes`; none without a share."""
    if owner_keep is None:
        return set()
    shared, counted = set(), defaultdict(lambda: [0, 0])  # owner -> [runs, bytes] in its share
    for directory in runs:
        made_by = Run(directory).made_by
        if made_by is None:
            continue
        held, size = counted[made_by], directory_bytes(directory)
        if held[0] < owner_keep and (owner_bytes is None or held[1] + size <= owner_bytes):
            held[0], held[1] = held[0] + 1, held[1] + size
            shared.add(directory.resolve())
    return shared


def _beyond(runs: list[Path], keep: int, keep_bytes: int | None, protected: set[Path]
            ) -> list[Path]:
    """Delete the runs (newest first) beyond `keep` of them or `keep_bytes`; the deleted."""
    kept, used, doomed = 0, 0, []
    for directory in runs:
        size = directory_bytes(directory)
        fits = kept < keep and (keep_bytes is None or used + size <= keep_bytes)
        if fits or directory.resolve() in protected or not _delete_unless_busy(directory):
            kept, used = kept + 1, used + size
        else:
            doomed.append(directory)
    return doomed


def _delete_unless_busy(directory: Path) -> bool:
    try:
        lock = Run(directory).lock()
    except (RunBusy, FileNotFoundError):
        return False
    try:
        shutil.rmtree(directory, ignore_errors=True)
    finally:
        os.close(lock)
    return True
