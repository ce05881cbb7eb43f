"""The hub's connection, for every reader of it (`hub`, `shards`, `persist`, `real_chains`):
where (HF_ENDPOINT, else the hub), who (anonymously; the environment's token only inside
`operator_token`, for the operator's own repos), at which commit (`pinned`), and the two calls
that fetch: the tree listing (`list_files`) and downloads into this engine's own cache folder
under HF_HOME (`fetch`, `chains_cache`). Every failure is one clear `BadSource`.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..markup import error_line
from .images import BadSource

HUB_PATTERN = re.compile(r"hf://datasets/([A-Za-z0-9][\w.-]*/[\w.-]+)(?:/(.*))?")
CACHE_FOLDER = "banana-space-chains"  # under HF_HOME: `files/` (downloads) and `rows/` (shards)


@dataclass(frozen=True)
class HubPath:
    repo_id: str  # OWNER/NAME
    path: str = ""  # inside the dataset; "" is its root

    @property
    def root(self) -> str:
        return f"hf://datasets/{self.repo_id}"


def parse_hub(source: str) -> HubPath:
    match = HUB_PATTERN.fullmatch(source.strip())
    path = (match.group(2) or "").strip("/") if match else ""
    if not match or (path and any(p in ("", ".", "..") for p in path.split("/"))):
        raise BadSource(f"{source!r} is not a hub dataset path: write "
                        "hf://datasets/OWNER/NAME or hf://datasets/OWNER/NAME/PATH")
    return HubPath(match.group(1), path)


def endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


_OPERATOR = contextvars.ContextVar("banana_hub_operator", default=False)


@contextlib.contextmanager
def operator_token() -> Iterator[None]:
    """Within this block, and in this thread only (a thread started inside does not inherit
    it), hub reads send the environment's token: for the operator's own repos alone."""
    entered = _OPERATOR.set(True)
    try:
        yield
    finally:
        _OPERATOR.reset(entered)


_PINNED = contextvars.ContextVar("banana_hub_pinned", default=None)


@contextlib.contextmanager
def pinned(commit: str) -> Iterator[None]:
    """Within this block, and in this thread only, hub reads are at `commit`, so every file of
    a dataset comes from the one commit that was recorded (`revision`); "" reads its main
    branch, as outside."""
    entered = _PINNED.set(commit or None)
    try:
        yield
    finally:
        _PINNED.reset(entered)


def pinned_commit() -> str | None:
    """The commit hub reads are pinned to (`pinned`), or None: the main branch."""
    return _PINNED.get()


def token_to_send() -> bool | None:
    """What huggingface_hub is told to send: no token (False), or inside `operator_token`
    whatever the environment holds (None)."""
    return None if _OPERATOR.get() else False


def chains_cache() -> Path:
    """Where hub files and shard rows are kept (HF_HOME/banana-space-chains)."""
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / CACHE_FOLDER


def unreadable(what: str, error: Exception) -> BadSource:
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    if "HF_HUB_OFFLINE" in str(error) or type(error).__name__ == "OfflineModeIsEnabled":
        return BadSource(f"could not read {what}: this server is offline and cannot reach "
                         "the Hugging Face hub. Download the chain elsewhere and upload it as "
                         "a zip.")
    if isinstance(error, GatedRepoError | RepositoryNotFoundError):
        return BadSource(f"could not read {what}: the dataset does not exist, or it is "
                         "private or gated. This server reads a dataset you name anonymously: "
                         "only public datasets can be replayed.")
    return BadSource(f"could not read {what} from the Hugging Face hub: "
                     f"{error_line(error, limit=200)}")


class NotOnHub(BadSource):
    """The path is not in the dataset (the dataset itself exists)."""


def list_files(hub: HubPath) -> list[tuple[str, int]]:
    """Every file under `hub.path` (at any depth), as (path in the dataset, size in bytes)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import EntryNotFoundError
    from huggingface_hub.hf_api import RepoFile

    try:
        entries = HfApi(endpoint=endpoint(), token=token_to_send()).list_repo_tree(
            hub.repo_id, path_in_repo=hub.path or None, repo_type="dataset", recursive=True,
            revision=pinned_commit())
        return [(entry.path, entry.size) for entry in entries if isinstance(entry, RepoFile)]
    except EntryNotFoundError as error:
        raise NotOnHub(str(unreadable(f"{hub.root}/{hub.path}", error))) from None
    except Exception as error:  # offline, not found, refused: one clear message
        raise unreadable(f"{hub.root}/{hub.path}", error) from None


def fetch(repo_id: str, files: Sequence[str]) -> Path:
    """Download `files` (or find them in the cache), with a token only inside
    `operator_token`; returns the local folder that holds them at the same relative paths."""
    from huggingface_hub import hf_hub_download

    root = Path()
    for name in files:
        try:
            local = Path(hf_hub_download(repo_id, name, repo_type="dataset",
                                         cache_dir=chains_cache() / "files",
                                         endpoint=endpoint(), revision=pinned_commit(),
                                         token=token_to_send()))
        except Exception as error:  # offline, not found, refused: one clear message
            raise unreadable(f"{name} of {repo_id}", error) from None
        root = local.parents[len(Path(name).parts) - 1]
    return root
