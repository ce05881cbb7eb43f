"""Runs that outlive the server: a shared `?run=` link still opens after a restart.

A Space's disk is wiped on every restart and rebuild, and with it the runs folder. Two things
bring a run back when its link is opened and the run is not on disk (`restore`):

- a bundled recording (`assets/recorded/<id>`) is copied in, so its link works on a fresh
  server without anyone clicking it first;
- with BANANA_RUNS_REPO=OWNER/NAME (a dataset repo on the Hugging Face hub), each finished run
  (completed, stopped or failed; again after a resume) is queued by `push_run`, and the runs
  queued are committed together at most every BANANA_RUNS_COMMIT_S seconds (default 300,
  CommitScheduler's 5 minutes; and at a clean exit), under
  `runs/<shard>/<id>/`; a link to a run that is not on disk is restored from it. A commit
  that fails leaves its runs queued for the next one (a hub outage loses nothing).

The Hub slows down past a few thousand commits and past about 10k entries in one folder
(hub-docs `repositories-recommendations.md`). So commits are batched, as huggingface_hub's
`CommitScheduler` does, but by hand: the scheduler mirrors one folder as it is, which would
commit runs still being written and keep every run in one folder. Here only finished runs are
committed, each under one of `SHARDS` folders chosen by a hash of its id (`in_repo`), so a
shard reaches 10k runs only when the dataset holds about 2.5 million. A commit holds at most
`MAX_FILES_PER_COMMIT` files, cut between runs (a 100-step run is about 200 files). Runs
pushed by an earlier version under `runs/<id>/` are still restored.

With a Storage Bucket mounted as the runs folder (`banana-space deploy --bucket`), none of this
is needed: the runs are already where a restart finds them.

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
retention (`retention.prune_runs`, which the page runs after a restore) sees it as old as it is.
The repo is the operator's: it is read with the Space's token (`hub_client.operator_token`), which
is never sent for a dataset a visitor names.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import secrets
import shutil
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..settings import engine_settings
from ..sources.images import BadImage
from ..store.run import KEPT_FILE, META_NAME, Run
from ..store.runids import copy_in, run_path

if TYPE_CHECKING:
    from huggingface_hub import CommitOperationAdd

RUNS_REPO_ENV = "BANANA_RUNS_REPO"
IN_REPO = "runs"  # runs/<shard>/<id>/… inside the dataset
SHARDS = 256  # shard folders under runs/: two hex digits of the id's sha256
MAX_FILES_PER_COMMIT = 1000
MAX_RESTORED_BYTES = 2 * 1024**3  # 101 lossless 2K frames and their thumbnails fit
STAGING = ".restoring"  # inside the runs folder: a dot-name, never a run id

_pushes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="runs-push")  # one at a time
_created: set[str] = set()
_queued: dict[str, Path] = {}  # run id -> its folder, waiting for the next commit
_queue_lock = threading.Lock()
_timer: threading.Timer | None = None
_failing = False  # the last commit failed: said once, until one works again


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
    from ..sources.hub_client import operator_token

    with operator_token():  # the operator's own repo: the Space's token reads it
        return _download(repo, target, min(max_bytes, MAX_RESTORED_BYTES))


def _download(repo: str, target: Path, max_bytes: int) -> bool:
    """Fetch `runs/<id>/` of the dataset into `target`, or nothing at all; True if fetched."""
    from ..sources.hub_client import HubPath, fetch, list_files

    listing: list[tuple[str, int]] = []
    for prefix in (f"{in_repo(target.name)}/", f"{IN_REPO}/{target.name}/"):  # then: before shards
        try:
            listing = list_files(HubPath(repo, prefix.rstrip("/")))
            break
        except BadImage:  # not kept there, or the hub cannot be reached: not restored
            continue
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


def in_repo(run_id: str) -> str:
    """Where run `run_id` is kept in the dataset: `runs/<shard>/<id>`."""
    shard = int(hashlib.sha256(run_id.encode()).hexdigest(), 16) % SHARDS
    return f"{IN_REPO}/{shard:02x}/{run_id}"


def push_run(run_dir: Path) -> bool:
    """Queue a finished run for the next commit to BANANA_RUNS_REPO (BANANA_RUNS_COMMIT_S);
    False when the variable is unset. A failure is one line on stderr, never the run's."""
    if not runs_repo():
        return False
    _queue([Path(run_dir)])
    return True


def _queue(run_dirs: list[Path]) -> None:
    """Add runs to the next commit (a run queued again is there once) and start its timer."""
    global _timer
    with _queue_lock:
        for run_dir in run_dirs:
            _queued[run_dir.name] = run_dir
        if _timer is None and _queued:
            _timer = threading.Timer(engine_settings().runs_commit_s, flush)
            _timer.daemon = True
            _timer.start()


def flush() -> Future | None:
    """Commit every queued run now, in the background; None when nothing is queued."""
    repo, runs = _take_queue()
    return _pushes.submit(_commit, repo, runs) if repo and runs else None


def _take_queue() -> tuple[str | None, list[Path]]:
    global _timer
    with _queue_lock:
        runs = list(_queued.values())
        _queued.clear()
        if _timer is not None:
            _timer.cancel()
            _timer = None
    return runs_repo(), runs


@atexit.register
def _commit_at_exit() -> None:
    """A server shut down cleanly commits what it finished (here: the worker is gone)."""
    repo, runs = _take_queue()
    if repo and runs:
        _commit(repo, runs)


def _commit(repo: str, runs: list[Path]) -> None:
    """Commit `runs`, one commit per MAX_FILES_PER_COMMIT files, cut between runs. Where a
    commit fails (the hub is down, the token cannot write) its runs and the ones after it go
    back in the queue for the next commit, and the log says so once until commits work again;
    a run pruned meanwhile is skipped (there is nothing left to keep)."""
    from huggingface_hub import HfApi

    from ..sources.hub_client import endpoint

    global _failing
    committed: list[Path] = []
    try:
        api = HfApi(endpoint=endpoint())
        if repo not in _created:
            api.create_repo(repo, repo_type="dataset", private=True, exist_ok=True)
            _created.add(repo)
        for batch, operations in _batches(runs):
            api.create_commit(repo, operations, repo_type="dataset",
                              commit_message=f"{len(batch)} finished run(s)")
            committed += batch
    except Exception as error:  # noqa: BLE001 (any failure of the hub: the runs wait here)
        _queue([run for run in runs if run not in committed and Run(run).exists()])
        if not _failing:
            print(f"banana-space: runs not kept in {repo} yet ({type(error).__name__}); "
                  "they are retried with the next commit.", file=sys.stderr)
        _failing = True
        return
    if _failing:
        print(f"banana-space: runs are kept in {repo} again.", file=sys.stderr)
    _failing = False


def _batches(runs: list[Path]) -> Iterator[tuple[list[Path], list[CommitOperationAdd]]]:
    """The runs that are still there, with their files' operations, in batches of at most
    MAX_FILES_PER_COMMIT files cut between runs (a run alone may pass it)."""
    from huggingface_hub import CommitOperationAdd

    batch: list[Path] = []
    operations: list[CommitOperationAdd] = []
    for run_dir in runs:
        try:
            added = [CommitOperationAdd(f"{in_repo(run_dir.name)}/{name}", str(run_dir / name))
                     for name in _kept_files(run_dir)]
        except (FileNotFoundError, ValueError):  # pruned as it was read: nothing to keep
            continue
        if operations and len(operations) + len(added) > MAX_FILES_PER_COMMIT:
            yield batch, operations
            batch, operations = [], []
        if added:
            batch.append(run_dir)
            operations += added
    if operations:
        yield batch, operations


def _kept_files(run_dir: Path) -> list[str]:
    """The names (relative, "/"-separated) of a run's files the dataset keeps; none when the
    run is gone."""
    if not Run(run_dir).exists():
        return []
    return sorted(name for path in run_dir.rglob("*") if path.is_file()
                  for name in [path.relative_to(run_dir).as_posix()] if KEPT_FILE.fullmatch(name))
