"""Everything a visitor can make on this server's disk, and its share of `BANANA_KEEP_GB`.

Runs (frames, zips), uploads (gradio's upload folder: files sent to `/upload`, and what the MCP
server saves of a data: URL), input previews and the hub files replays fetched
(`banana_space.sources.hub_client.chains_cache`) are all counted: uploads may take a quarter of the
budget, previews a hundredth, hub files a tenth (`handlers.room_for_replay` makes room before each
replay), runs the rest (`banana_space.store.retention.prune_runs` keeps them within it, and each
visitor within a tenth of it). The upload folder belongs to this runs folder
(named after it), so the files a killed process left there are removed when the next one starts.

app.py points gradio at `UPLOADS` (`GRADIO_TEMP_DIR`) before importing gradio, which reads it
then. No gradio here. The sizes and lifetimes are `page.settings.SETTINGS`'s.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from banana_space.store.retention import clear_orphans
from page.settings import SETTINGS

RUNS_ROOT = SETTINGS.runs_root
UPLOADS = SETTINGS.uploads
PREVIEWS = RUNS_ROOT / ".previews"  # a dot-name: never a run id, never pruned as a run


def make_room(folder: Path, incoming: int, limit: int) -> None:
    """Delete the oldest files under `folder` until `incoming` more bytes fit within `limit`."""
    files = []
    for parent, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                info = os.lstat(os.path.join(parent, name))
                files.append((info.st_mtime, info.st_size, os.path.join(parent, name)))
    used = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if used + incoming <= limit:
            break
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            used -= size
            if os.path.dirname(path) != str(folder):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.dirname(path))  # an upload's own folder, once empty


def clear_stale(orphan_grace_s: float) -> None:
    """At start: what a previous process left in the upload folder and the previews, and the
    folders of runs whose start failed (no run.json) once older than `orphan_grace_s`."""
    for folder in (UPLOADS, PREVIEWS):
        shutil.rmtree(folder, ignore_errors=True)  # each is made again when first written
    clear_orphans(RUNS_ROOT, orphan_grace_s)
