"""Everything a visitor can make on this server's disk, and its share of `BANANA_KEEP_GB`.

Runs (frames, zips), uploads (gradio's upload folder: files sent to `/upload`, and what the MCP
server saves of a data: URL), and input previews are all counted: uploads may take a quarter of
the budget and previews a hundredth, runs the rest (`banana_space.runs.prune_runs` keeps them
within it, and each visitor within a tenth of it). The upload folder belongs to this runs folder
(named after it), so the files a killed process left there are removed when the next one starts.

Imported by app.py before gradio: gradio reads its upload folder (`GRADIO_TEMP_DIR`) at import.
No gradio here.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
RUNS_ROOT = Path(os.environ.get("BANANA_RUNS_DIR", HERE / "runs")).resolve()
KEEP_RUNS = int(os.environ.get("BANANA_KEEP_RUNS", "200"))  # older run directories are deleted
KEEP_BYTES = int(float(os.environ.get("BANANA_KEEP_GB", "20")) * 1e9)  # everything below
UPLOADS_BYTES = KEEP_BYTES // 4
PREVIEWS_BYTES = KEEP_BYTES // 100
RUNS_BYTES = KEEP_BYTES - UPLOADS_BYTES - PREVIEWS_BYTES
# One visitor (client address) keeps at most this share of the runs; beyond it their own oldest
# runs go first, so no flood of runs from one address evicts anybody else's.
RUNS_PER_VISITOR = int(os.environ.get("BANANA_RUNS_PER_VISITOR", str(max(1, KEEP_RUNS // 10))))
RUN_BYTES_PER_VISITOR = RUNS_BYTES // 10
# Uploads stay only as long as a visitor needs them (a replayed recording is read while its run
# goes on): checked hourly, deleted after a day, all of them on a restart.
UPLOADS_KEEP_S = int(os.environ.get("BANANA_UPLOADS_KEEP_S", "86400"))
UPLOADS = Path(os.environ.get("BANANA_UPLOADS_DIR") or Path(tempfile.gettempdir()) / (
    "banana-uploads-" + hashlib.sha256(str(RUNS_ROOT).encode()).hexdigest()[:12]))
os.environ["GRADIO_TEMP_DIR"] = str(UPLOADS)
PREVIEWS = RUNS_ROOT / ".previews"  # a dot-name: never a run id, never pruned as a run


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under `folder`; files that vanish meanwhile count as nothing."""
    total = 0
    for parent, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(parent, name)).st_size
    return total


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


def clear_stale() -> None:
    """At start: what a previous process left in the upload folder and the previews."""
    for folder in (UPLOADS, PREVIEWS):
        shutil.rmtree(folder, ignore_errors=True)  # each is made again when first written
