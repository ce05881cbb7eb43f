"""Runs that outlive the server: a shared `?run=` link still opens after a restart.

A Space's disk is wiped on every restart and rebuild, and with it the runs folder. Two things
bring a run back when its link is opened and the run is not on disk (`restore`):

- a bundled recording (`assets/recorded/<id>`) is copied in, so its link works on a fresh
  server without anyone clicking it first;
- with BANANA_RUNS_REPO=OWNER/NAME (a dataset repo on the Hugging Face hub), each finished run
  (completed, stopped or failed; again after a resume) is pushed there by `keep`, one commit per
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
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from .images import BadImage
from .runids import copy_in, run_path

RUNS_REPO_ENV = "BANANA_RUNS_REPO"
IN_REPO = "runs"  # runs/<id>/… inside the dataset
# The files of a run directory, relative to it, that are pushed and may be restored.
RUN_FILE = re.compile(r"(run\.json|scores\.csv|verdict\.csv|steps\.csv|"
                      r"frames/step_\d{3}\.png|\.thumbs/\.step_\d{3}\.png)")
PUSHED = ["run.json", "*.csv", "frames/step_*.png", ".thumbs/.step_*.png"]
MAX_RESTORED_BYTES = 2 * 1024**3  # 101 lossless 2K frames and their thumbnails fit
STAGING = ".restoring"  # inside the runs folder: a dot-name, never a run id

_pushes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="runs-push")  # one at a time
_created: set[str] = set()


def runs_repo() -> str | None:
    """The dataset that keeps finished runs (BANANA_RUNS_REPO), or None."""
    return os.environ.get(RUNS_REPO_ENV, "").strip() or None


def restore(root: Path, run_id: object, recorded: Path) -> None:
    """Put run `run_id` into the runs folder `root` if it is not there and can be found: a
    bundled recording, else (with BANANA_RUNS_REPO) the run kept on the hub. Raises
    `BadRunId` for an id that is not one; finding nothing is not an error (the caller's own
    lookup then says "No run called …")."""
    target = run_path(root, run_id, must_exist=False)
    if (target / "run.json").is_file():
        return
    if (Path(recorded) / target.name / "run.json").is_file():
        copy_in(Path(recorded) / target.name, root)
        return
    repo = runs_repo()
    if repo:
        _download(repo, target)


def _download(repo: str, target: Path) -> None:
    """Fetch `runs/<id>/` of the dataset into `target`, or nothing at all."""
    from .hub import HubPath, fetch, list_files

    prefix = f"{IN_REPO}/{target.name}/"
    try:
        listing = list_files(HubPath(repo, prefix.rstrip("/")))
    except BadImage:  # not kept there, or the hub cannot be reached: not restored
        return
    names = [name for name, _ in listing if RUN_FILE.fullmatch(name.removeprefix(prefix))]
    if f"{prefix}run.json" not in names or \
            sum(size for name, size in listing if name in names) > MAX_RESTORED_BYTES:
        return
    try:
        fetched = fetch(repo, names)
    except BadImage:
        return
    staging = target.parent / STAGING / f"{target.name}-{secrets.token_hex(4)}"
    try:
        for name in names:
            relative = name.removeprefix(prefix)
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fetched / name, staging / relative)
        os.rename(staging, target)  # at once; fails if someone restored it meanwhile
    except OSError:
        pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def keep(run_dir: Path) -> Future | None:
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
                          path_in_repo=f"{IN_REPO}/{run_dir.name}", allow_patterns=PUSHED,
                          commit_message=f"Run {run_dir.name}")
    except Exception as error:  # the hub is down, the token cannot write: the run stays here
        print(f"banana-space: run {run_dir.name} not kept in {repo}: "
              f"{type(error).__name__}", file=sys.stderr)
