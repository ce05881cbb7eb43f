"""Publish this checkout as a Hugging Face Space: `banana-space deploy OWNER/NAME`.

Through `huggingface_hub`'s HTTP API, not a git push. A new Space is made by one `create_repo`
that carries its hardware, secrets, variables and volumes (`space_hardware`, `space_secrets`,
`space_variables`, `space_volumes`), so the one build the upload starts has them all; set
afterwards, each would restart a Space that had already built without them. An existing Space
(the Hub answers 409) first gets what was asked and differs from what it has (`update_space`),
then the upload, so its rebuild runs the new code with the new settings. The upload is one
`upload_folder` commit of exactly what the Space runs (`space_files`); the client asks the Hub
which files are binary and sends those through LFS (or Xet, when `hf_xet` is installed), as the
Hub requires. Optional: the hardware (`--hardware`), a private Space, the secrets
GEMINI_API_KEY, HF_TOKEN and BANANA_OWNER_KEY copied from this environment (`--secrets`), never
printed, and a Storage Bucket for the runs (`--bucket`). `--dry-run` lists the files and their
sizes.

A new Space is given an owner key, the secret BANANA_OWNER_KEY that runs' owners are hashed with
(`page.door.identity`), drawn here and never printed (`--secrets` copies this environment's
instead, where it is set): without one the page keeps a key beside its runs, which a Space
whose disk is wiped loses at each restart, and with it every visitor's runs. An existing Space
keeps its key (another would take every visitor's runs away).

A new Space asks for ZeroGPU (`zero-a10g`) unless `--hardware` names another: since 2026-07-21
a Gradio Space on any other hardware needs a paid plan, and a free account may host up to two
Gradio Spaces on ZeroGPU (hub-docs `spaces-overview.md`, `PLAN_RULE`). An existing Space keeps
its hardware unless `--hardware` is given.

`--bucket NAME` keeps the runs on a Storage Bucket, the Hub's recommended persistence
(hub-docs `spaces-storage.md`): the bucket is created private if it does not exist
(`create_bucket`), mounted read-write at `BUCKET_MOUNT`, and the Space's variable
BANANA_RUNS_DIR points inside it, so a restart or rebuild keeps every run and link with nothing
to upload. `set_space_volumes` replaces a Space's whole list, so on an existing Space the
volumes its owner mounted elsewhere are read (`get_space_runtime`) and kept; only the one at
`BUCKET_MOUNT` is ours to set.

What is sent is an allow-list (`SPACE_GLOBS`, plus every file the card links or shows): the
app's own top-level modules, the engine, the assets, the manual's pages, what the Leaderboard
tab reads, the requirements with their constraints, the card and the licence. A virtual
environment, runs, caches, tests, benchmarks, the run archives and screenshots under docs/ that
the card does not link, and every dot-file but `.gitattributes` stay home; a file holding the
value of a secret from the environment stops the upload.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from secrets import token_hex
from typing import Any

# What --secrets copies, and whose values no published file may hold (`check_no_secrets`).
SECRETS = ("GEMINI_API_KEY", "HF_TOKEN", "BANANA_OWNER_KEY")
OWNER_KEY = "BANANA_OWNER_KEY"
DEFAULT_HARDWARE = "zero-a10g"  # the Hub's id for ZeroGPU (huggingface_hub's SpaceHardware)
PLAN_RULE = ("Hub rule since 2026-07-21: free accounts may host up to 2 Gradio Spaces on ZeroGPU "
             "(zero-a10g); cpu-basic and every other hardware need a PRO or Team plan. A "
             "duplicate follows the same rule and starts on cpu-basic: duplicate onto ZeroGPU "
             "with `hf repos duplicate OWNER/NAME YOU/NAME --type space --flavor zero-a10g`.")
BUCKET_MOUNT = "/data"  # where the bucket appears in the Space's container
RUNS_IN_BUCKET = f"{BUCKET_MOUNT}/runs"  # BANANA_RUNS_DIR on a Space with --bucket
RUNS_VARIABLE = {"key": "BANANA_RUNS_DIR", "value": RUNS_IN_BUCKET,
                 "description": "runs on the Storage Bucket mounted by banana-space deploy"}
# What the Space runs and shows, relative to the checkout: the entry (app.py),
# whole folders for the page, the engine and the assets, the manual's pages (the card links
# them), and the results the Leaderboard tab reads and serves (page/leaderboard_tab.py).
# requirements.txt applies constraints.txt (`-c`): the Space installs every package at the
# version the tests ran on. `*` stays within a folder, `**/` crosses any number of them.
SPACE_GLOBS = ("*.py", "README.md", "LICENSE", "requirements.txt", "constraints.txt",
               ".gitattributes",
               "page/**", "banana_space/**", "assets/**",
               "docs/**/*.md", "docs/leaderboard/*.csv", "docs/leaderboard/chains/*")
CARD = "README.md"
# A file the card links, `[words](path#part)`, or shows, `![words](path)`, by a path in the
# checkout (not an address such as https: or mailto:).
CARD_LINK = re.compile(r"\]\((?![\w+.-]+:)([^)\s#]+)")
NEVER = ("__pycache__", "*.pyc", "*.pyo", ".*", "*.egg-info", "runs", ".venv", "venv")
KEPT_DOT_FILES = (".gitattributes",)


class DeployRefused(RuntimeError):
    """The checkout cannot be published as it is; the message says why (never a secret)."""


@dataclass(frozen=True)
class SpaceFile:
    path: str  # relative to the checkout, "/"-separated: also its path in the Space
    size: int


def space_files(root: Path) -> list[SpaceFile]:
    """Every file of the checkout the Space needs, sorted; nothing under a NEVER name."""
    root = Path(root).resolve()
    linked = card_links(root)
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if not path.is_file() or path.is_symlink() or _excluded(relative):
            continue
        if _wanted(relative.as_posix()) or relative.as_posix() in linked:
            found.append(SpaceFile(relative.as_posix(), path.stat().st_size))
    return found


def card_links(root: Path) -> set[str]:
    """What the card (README.md) links or shows, as paths from the checkout."""
    card = root / CARD
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    return {match.removeprefix("./") for match in CARD_LINK.findall(text)}


def _wanted(name: str) -> bool:
    return any(_glob(pattern).fullmatch(name) for pattern in SPACE_GLOBS)


def _glob(pattern: str) -> re.Pattern[str]:
    """`pattern` as a regular expression: `*` and `?` stay within one folder, `**/` stands for
    any number of folders (none included) and a final `**` for everything below."""
    regex = re.escape(pattern).replace(r"\*\*/", "(?:.+/)?").replace(r"\*\*", ".*")
    return re.compile(regex.replace(r"\*", "[^/]*").replace(r"\?", "[^/]"))


def _excluded(relative: Path) -> bool:
    return any(part not in KEPT_DOT_FILES and any(fnmatch(part, never) for never in NEVER)
               for part in relative.parts)


def file_listing(files: list[SpaceFile]) -> str:
    """The dry run's listing: one line per file with its size, then the total."""
    lines = [f"{_size(f.size):>10}  {f.path}" for f in files]
    total = sum(f.size for f in files)
    return "\n".join([*lines, f"{len(files)} files, {_size(total)} in all"])


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    return f"{count / 1024:.1f} KB" if count < 1024**2 else f"{count / 1024**2:.1f} MB"


def check_no_secrets(root: Path, files: list[SpaceFile]) -> None:
    """Refuse to publish a file holding the value of a secret set in this environment."""
    values = {name: os.environ[name].encode() for name in SECRETS
              if len(os.environ.get(name, "")) >= 8}
    for file in files:
        data = (Path(root) / file.path).read_bytes()
        for name, value in values.items():
            if value in data:
                raise DeployRefused(f"{file.path} holds the value of {name}: not published")


def bucket_id(bucket: str, repo_id: str) -> str:
    """OWNER/NAME of the runs' bucket: a bare NAME lives with the Space's owner."""
    return bucket if "/" in bucket else f"{repo_id.split('/')[0]}/{bucket}"


def deploy(root: Path, repo_id: str, *, hardware: str | None = None, private: bool = False,
           secrets: bool = False, bucket: str | None = None, api: Any = None) -> str:
    """Create the Space with its settings in one call, or bring an existing one's settings up
    to what was asked, then upload the checkout's Space files in one commit; returns the
    Space's address. A new Space asks for `DEFAULT_HARDWARE` unless `hardware` names another."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = api or HfApi()
    files = space_files(root)
    check_no_secrets(root, files)
    copied = [{"key": name, "value": os.environ[name]}
              for name in SECRETS if secrets and os.environ.get(name)]
    drawn = [] if any(secret["key"] == OWNER_KEY for secret in copied) else [
        {"key": OWNER_KEY, "value": token_hex(32),
         "description": "the key runs' owners are hashed with"}]
    volume = runs_volume(api, bucket_id(bucket, repo_id)) if bucket else None
    variables = [RUNS_VARIABLE] if bucket else []
    try:
        url = str(api.create_repo(
            repo_id, repo_type="space", space_sdk="gradio", private=private or None,
            space_hardware=hardware or DEFAULT_HARDWARE, space_secrets=(copied + drawn) or None,
            space_variables=variables or None, space_volumes=[volume] if volume else None))
    except HfHubHTTPError as error:
        if not exists_already(api, repo_id, error):
            raise
        url = f"{api.endpoint}/spaces/{repo_id}"
        update_space(api, repo_id, hardware=hardware, secrets=copied, variables=variables,
                     volume=volume)
    # The Space holds exactly the checkout's Space files: what is gone from the checkout (a
    # module moved into a package) is deleted there in the same commit (never .gitattributes).
    api.upload_folder(repo_id=repo_id, repo_type="space", folder_path=str(root),
                      allow_patterns=[f.path for f in files], delete_patterns=["*"],
                      commit_message="Deploy Banana Space (banana-space deploy)")
    return url


def exists_already(api: Any, repo_id: str, error: Any) -> bool:
    """Whether the Hub refused to create the Space because it is there: 409, or 401/402/403
    for a token that may write to the Space but not create one (a fine-grained token), when
    the Space can be read (huggingface_hub's own `exist_ok` reads these the same way)."""
    status = error.response.status_code if error.response is not None else None
    return status == 409 or (status in (401, 402, 403)
                             and api.repo_exists(repo_id, repo_type="space"))


def runs_volume(api: Any, bucket: str) -> Any:
    """Create the bucket if needed (private: runs hold visitors' normalised uploads); the
    volume that mounts it read-write at BUCKET_MOUNT."""
    from huggingface_hub import Volume

    api.create_bucket(bucket, private=True, exist_ok=True)
    return Volume(type="bucket", source=bucket, mount_path=BUCKET_MOUNT, read_only=False)


def update_space(api: Any, repo_id: str, *, hardware: str | None, secrets: list[dict],
                 variables: list[dict], volume: Any) -> None:
    """An existing Space's settings: each is set only where it was asked and differs from what
    the Space has, since each change restarts it (the upload that follows rebuilds it where a
    file changed).
    Secrets cannot be read back, so those asked are always set. The hardware moves only when
    named. `set_space_volumes` replaces the whole list, so the owner's volumes at other mount
    paths are read and kept; ours takes BUCKET_MOUNT."""
    runtime = api.get_space_runtime(repo_id) if hardware or volume is not None else None
    if hardware and hardware != (runtime.requested_hardware or runtime.hardware):
        api.request_space_hardware(repo_id, hardware)
    for secret in secrets:
        api.add_space_secret(repo_id, secret["key"], secret["value"])
    current = api.get_space_variables(repo_id) if variables else {}
    for variable in variables:
        if getattr(current.get(variable["key"]), "value", None) != variable["value"]:
            api.add_space_variable(repo_id, variable["key"], variable["value"],
                                   description=variable["description"])
    if volume is not None:
        mounted = runtime.volumes or []
        if not any(other.to_dict() == volume.to_dict() for other in mounted):
            kept = [other for other in mounted if other.mount_path != BUCKET_MOUNT]
            api.set_space_volumes(repo_id, [*kept, volume])


def run_deploy(repo_id: str, source: Path, *, hardware: str | None = None,
               private: bool = False, secrets: bool = False, bucket: str | None = None,
               dry_run: bool = False) -> int:
    """The `deploy` command: 0 published (or listed), 1 refused by the Hub, 2 bad input."""
    from huggingface_hub import SpaceHardware
    from huggingface_hub.errors import HfHubHTTPError

    source = Path(source).resolve()
    flavors = [flavor.value for flavor in SpaceHardware]
    problem = (f"{repo_id!r} is not OWNER/NAME" if repo_id.count("/") != 1 else
               f"{source} is not a Banana Space checkout (no app.py)"
               if not (source / "app.py").is_file() else
               f"unknown hardware {hardware!r}; valid: {', '.join(flavors)}"
               if hardware and hardware not in flavors else None)
    if problem:
        print(f"error: {problem}")
        return 2
    copied = [name for name in SECRETS if os.environ.get(name)] if secrets else []
    if OWNER_KEY not in copied:
        copied.append(f"{OWNER_KEY} (drawn here, if the Space is new)")
    plan = (f" on {hardware}" if hardware else f" on {DEFAULT_HARDWARE} (ZeroGPU) if new")
    extras = ((f", setting the secrets {', '.join(copied)}" if copied else "")
              + (f", runs on the bucket {bucket_id(bucket, repo_id)} mounted at "
                 f"{BUCKET_MOUNT} (BANANA_RUNS_DIR={RUNS_IN_BUCKET})" if bucket else ""))
    print(PLAN_RULE)
    if dry_run:
        print(file_listing(space_files(source)))
        print(f"would publish to the Space {repo_id}{plan}{extras}")
        return 0
    try:
        url = deploy(source, repo_id, hardware=hardware, private=private, secrets=secrets,
                     bucket=bucket)
    except (DeployRefused, HfHubHTTPError) as error:
        print(f"error: {error}")
        return 1
    print(f"published: {url}{plan}{extras}")
    return 0
