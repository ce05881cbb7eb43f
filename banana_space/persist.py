"""Runs that outlive the server: a shared `?run=` link still opens after a restart.

A Space's disk is wiped on every restart and rebuild, and with it the runs folder. Two things
bring a run back when its link is opened and the run is not on disk (`restore`):

- a bundled recording (`assets/recorded/<id>`) is copied in, so its link works on a fresh
  server without anyone clicking it first;
- with BANANA_RUNS_REPO=OWNER/NAME (a dataset repo on the Hugging Face hub), each finished run
  (completed, stopped or failed; again after a resume) is pushed there by `push_run`, one commit per
  finished run, under `runs/<id>/`, and a link to a run that is not on disk is restored from it.

What is pushed is what the page redraws a run from: run.json, the CSVs, the frames (frame 0 is
the upload *after* `images.load_image` normalised it: RGB, downscaled, EXIF dropped; the upload
itself never) and the strip's thumbnails. run.json never holds a secret (spec.public_options).
The write needs a token that may write the repo (HF_TOKEN, a Space secret); the repo is created
private if it does not exist. Without the variable nothing is pushed or fetched: links last
until the next restart.

Restoring is confined like everything a visitor names: the id is checked by `runids.run_path`
first, only the files a run directory holds are fetched (names and sizes checked from the
listing), into a staging folder inside the runs folder that is renamed into place at once.
A restored run keeps its age (run.json's `updated_at` becomes its modification time), so
retention (`runs.prune_runs`, which the page runs after a restore) sees it as old as it is.
The repo is the operator's: it is read with the Space's token (`hub.operator_token`), which
is never sent for a dataset a visitor names.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from .images import BadImage
from .run import KEPT_FILE, KEPT_PATTERNS, META_NAME, Run
from .runids import copy_in, run_path
from .settings import engine_settings

RUNS_REPO_ENV = "BANANA_RUNS_REPO"
IN_REPO = "runs"  # runs/<id>/… inside the dataset
MAX_RESTORED_BYTES = 2 * 1024**3  # 101 lossless 2K frames and their thumbnails fit
STAGING = ".restoring"  # inside the runs folder: a dot-name, never a run id

_pushes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="runs-push")  # one at a time
_created: set[str] = set()


def runs_repo() -> str | None:
    """The dataset that keeps finished runs (BANANA_RUNS_REPO), or None."""
    return engine_settings().runs_repo


def restore(root: Path, run_id: object, recorded: Path,
            max_bytes: int = MAX_RESTORED_BYTES) -> bool:
    """Put run `run_id` into the runs folder `root` if it is not there and can be found: a
    bundled recording, else (with BANANA_RUNS_REPO) the run kept on the hub, if its files
    come to at most `max_bytes`. Raises `BadRunId` for an id that is not one; finding nothing
    is not an error (the caller's own lookup then says "No run called …").

    Returns:
        True when a run was brought in (the caller then keeps the runs within their share).
    """
    target = run_path(root, run_id, must_exist=False)
    if Run(target).exists():
        return False
    if Run(Path(recorded) / target.name).exists():
        copy_in(Path(recorded) / target.name, root)
        return True
    repo = runs_repo()
    if not repo:
        return False
    from .hub import operator_token

    with operator_token():  # the operator's own repo: the Space's token reads it
        return _download(repo, target, min(max_bytes, MAX_RESTORED_BYTES))


def _download(repo: str, target: Path, max_bytes: int) -> bool:
    """Fetch `runs/<id>/` of the dataset into `target`, or nothing at all; True if fetched."""
    from .hub import HubPath, fetch, list_files

    prefix = f"{IN_REPO}/{target.name}/"
    try:
        listing = list_files(HubPath(repo, prefix.rstrip("/")))
    except BadImage:  # not kept there, or the hub cannot be reached: not restored
        return False
    names = [name for name, _ in listing if KEPT_FILE.fullmatch(name.removeprefix(prefix))]
    if f"{prefix}{META_NAME}" not in names or \
            sum(size for name, size in listing if name in names) > max_bytes:
        return False
    try:
        fetched = fetch(repo, names)
    except BadImage:
        return False
    staging = target.parent / STAGING / f"{target.name}-{secrets.token_hex(4)}"
    try:
        for name in names:
            relative = name.removeprefix(prefix)
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fetched / name, staging / relative)
        _keep_age(Run(staging).meta_file)
        os.rename(staging, target)  # at once; fails if someone restored it meanwhile
    except OSError:
        return False
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def _keep_age(run_json: Path) -> None:
    """Date a restored run.json by its `updated_at` (when the run last changed), not now."""
    try:
        updated = json.loads(run_json.read_text()).get("updated_at", "")
        when = datetime.strptime(updated, "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except (ValueError, TypeError, AttributeError):  # no date: it stays dated now
        return
    os.utime(run_json, (when, when))


def push_run(run_dir: Path) -> Future | None:
    """Push a finished run to BANANA_RUNS_REPO in the background (one commit); None when the
    variable is unset. A failure is one line on stderr, never the run's failure."""
    repo = runs_repo()
    if not repo:
        return None
    return _pushes.submit(_push, repo, Path(run_dir))


def _push(repo: str, run_dir: Path) -> None:
    from huggingface_hub import HfApi

    from .hub import _endpoint

    try:
        api = HfApi(endpoint=_endpoint())
        if repo not in _created:
            api.create_repo(repo, repo_type="dataset", private=True, exist_ok=True)
            _created.add(repo)
        api.upload_folder(repo_id=repo, repo_type="dataset", folder_path=str(run_dir),
                          path_in_repo=f"{IN_REPO}/{run_dir.name}", allow_patterns=KEPT_PATTERNS,
                          commit_message=f"Run {run_dir.name}")
    except Exception as error:  # the hub is down, the token cannot write: the run stays here
        print(f"banana-space: run {run_dir.name} not kept in {repo}: "
              f"{type(error).__name__}", file=sys.stderr)
