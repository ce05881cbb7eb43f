"""Run ids: the only way a visitor names a run, confined to the runs folder.

A run id is one directory name inside the runs folder (`20260130-101500-a1b2c3`, or a copied
recording's name such as `dunes-simulated-30`). Whatever a visitor sends (`?run=`, the hidden
field the page posts back, an API call, an MCP tool call) goes through `run_path` before any
file is touched: an absolute path, `..`, a path separator, a NUL byte, an over-long id, a hidden
name or a symlink that leads out of the folder is refused with `BadRunId`, and nothing is read
or written. Bundled recordings are copied in (`copy_in`) before anyone may resume or redraw
them, so the app's own files are never written. `open_run` only looks: a run that is not on disk
stays missing (bringing it back is `persist.restore`'s, asked for by the caller).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .run import Run

MAX_RUN_ID = 80  # generated ids are 22 characters; recordings' names are shorter than this
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class BadRunId(ValueError):
    """A run id that names nothing inside the runs folder; the message is safe to show."""


def shown(run_id: str, limit: int = 40) -> str:
    """A visitor's id as a message may quote it: printable, short, never markup (the message
    goes to a toast that renders HTML)."""
    printable = "".join(c if c.isalnum() or c in "._-" else "?" for c in run_id[:limit])
    return printable + ("…" if len(run_id) > limit else "")


def run_path(root: Path, run_id: object, *, must_exist: bool = True) -> Path:
    """The directory of run `run_id` inside `root`, or `BadRunId`. With `must_exist`, it must
    hold a run (`Run.exists`)."""
    if not isinstance(run_id, str) or not run_id:
        raise BadRunId("Give a run id (the `run=` part of a run's link).")
    if len(run_id) > MAX_RUN_ID or not _RUN_ID.fullmatch(run_id):
        raise BadRunId(f"{shown(run_id)!r} is not a run id: a run id is one name of letters, "
                       f"digits, '.', '_' or '-' (at most {MAX_RUN_ID}), never a path.")
    root = Path(root).resolve()
    path = root / run_id
    # A symlink is refused even when it points inside: ids name directories the app made.
    if path.is_symlink() or (path.exists() and path.resolve().parent != root):
        raise BadRunId(f"{shown(run_id)!r} is not a run of this server.")
    if must_exist and not Run(path).exists():
        raise BadRunId(f"No run called {shown(run_id)!r} (runs are deleted after a while; "
                       "start a new one).")
    return path


def open_run(root: Path, run_id: object) -> Run:
    """Run `run_id` of the runs folder `root`, or `BadRunId` (`run_path`). Never downloads
    or re-makes anything."""
    return Run(run_path(root, run_id))


def copy_in(source: Path, root: Path) -> Run:
    """A bundled recording's copy inside the runs folder (made once): what the app opens,
    redraws and resumes, so the original is never written."""
    target = Run(run_path(root, source.name, must_exist=False))
    if not target.exists():
        shutil.copytree(source, target.path, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.zip"))
    return target
