"""Chains on the Hugging Face hub: `hf://datasets/OWNER/NAME[/PATH]`.

Read through the real `huggingface_hub` client, so files land in its usual cache (HF_HOME) and
only the files a chain needs are fetched. Two calls are used: the tree listing
(`list_repo_tree`) and file downloads (`hf_hub_download`). HF_ENDPOINT points both at another
server (the tests' `tests/fake_hub.py`); HF_HUB_OFFLINE=1 turns the hub off. Sizes come from
the listing and are checked before anything is downloaded. The dataset card's `license:` line
becomes a credit that goes with the frames (Banana100, arXiv 2604.03400, is CC BY-NC-SA 4.0).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .images import BadImage
from .sources import (
    ANIMATION_SUFFIXES,
    ARCHIVE_SUFFIXES,
    MAX_MEMBER_BYTES,
    Frames,
    frames_from_files,
    is_image_name,
    natural_key,
    open_local,
)

HUB_PATTERN = re.compile(r"hf://datasets/([A-Za-z0-9][\w.-]*/[\w.-]+)(?:/(.*))?")
# A replayed chain (app, `score`) uses at most MAX_STEPS + 1 = 101 frames: fetch no more.
MAX_REPLAY_FRAMES = 101
MAX_CARD_BYTES = 1 << 20
LICENCES = {"cc-by-nc-sa-4.0": "CC BY-NC-SA 4.0", "cc-by-sa-4.0": "CC BY-SA 4.0",
            "cc-by-nc-4.0": "CC BY-NC 4.0", "cc-by-4.0": "CC BY 4.0", "cc0-1.0": "CC0 1.0",
            "mit": "MIT", "apache-2.0": "Apache 2.0"}


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
        raise BadImage(f"{source!r} is not a hub dataset path: write "
                       "hf://datasets/OWNER/NAME or hf://datasets/OWNER/NAME/PATH")
    return HubPath(match.group(1), path)


def _endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


def _failed(what: str, error: Exception) -> BadImage:
    if "HF_HUB_OFFLINE" in str(error) or type(error).__name__ == "OfflineModeIsEnabled":
        return BadImage(f"could not read {what}: this server is offline and cannot reach the "
                        "Hugging Face hub. Download the chain elsewhere and upload it as a zip.")
    text = str(error).strip().splitlines()
    return BadImage(f"could not read {what} from the Hugging Face hub: {type(error).__name__}"
                    + (f": {text[0][:200]}" if text else ""))


def list_files(hub: HubPath) -> list[tuple[str, int]]:
    """Every file under `hub.path` (at any depth), as (path in the dataset, size in bytes)."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    try:
        entries = HfApi(endpoint=_endpoint()).list_repo_tree(
            hub.repo_id, path_in_repo=hub.path or None, repo_type="dataset", recursive=True)
        return [(entry.path, entry.size) for entry in entries if isinstance(entry, RepoFile)]
    except Exception as error:  # offline, not found, refused: one clear message
        raise _failed(f"{hub.root}/{hub.path}", error) from None


def fetch(repo_id: str, files: Sequence[str]) -> Path:
    """Download `files` (or find them in the cache); returns the local folder that holds them
    at the same relative paths."""
    from huggingface_hub import hf_hub_download

    root = Path()
    for name in files:
        try:
            local = Path(hf_hub_download(repo_id, name, repo_type="dataset",
                                         endpoint=_endpoint()))
        except Exception as error:  # offline, not found, refused: one clear message
            raise _failed(f"{name} of {repo_id}", error) from None
        root = local.parents[len(Path(name).parts) - 1]
    return root


def check_sizes(listing: Sequence[tuple[str, int]]) -> None:
    for name, size in listing:
        if size > MAX_MEMBER_BYTES:
            raise BadImage(f"{name} is {size / 2**20:,.0f} MB; the limit per file is "
                           f"{MAX_MEMBER_BYTES / 2**20:,.0f} MB")


def open_hub_frames(source: str) -> Frames:
    """One chain on the hub: an archive or animation, one of our run directories, or the
    images under a folder; the credit is the last note."""
    hub = parse_hub(source)
    if Path(hub.path).suffix.lower() in ARCHIVE_SUFFIXES | ANIMATION_SUFFIXES:
        parent = HubPath(hub.repo_id, str(Path(hub.path).parent).strip("."))
        listing = [(n, s) for n, s in list_files(parent) if n == hub.path]
        if not listing:
            raise BadImage(f"{source} was not found on the hub")
        check_sizes(listing)
        frames = open_local(fetch(hub.repo_id, [hub.path]) / hub.path)
    else:
        frames = _hub_folder(hub, source)
    frames.notes.append(credit(hub.repo_id))
    return frames


def _hub_folder(hub: HubPath, source: str) -> Frames:
    listing = list_files(hub)
    prefix = f"{hub.path}/" if hub.path else ""
    run_frames = f"{prefix}frames/"
    if any(name == f"{prefix}run.json" for name, _ in listing):  # one of our run directories
        listing = [(n, s) for n, s in listing if n.startswith(run_frames)]
    images = sorted(((n, s) for n, s in listing if is_image_name(n)
                     and not any(p.startswith(".") for p in n.split("/"))),
                    key=lambda item: natural_key(item[0]))
    if not images:
        raise BadImage(f"no images under {source}")
    notes = []
    if len(images) > MAX_REPLAY_FRAMES:
        notes.append(f"only the first {MAX_REPLAY_FRAMES} of {len(images)} frames were used")
        images = images[:MAX_REPLAY_FRAMES]
    check_sizes(images)
    names = [n for n, _ in images]
    frames = frames_from_files(fetch(hub.repo_id, names), names, source)
    frames.notes.extend(notes)
    return frames


def card_licence(card: str) -> str:
    """The `license:` of a dataset card's YAML header, by its common name where known."""
    header = card.split("---", 2)[1] if card.startswith("---") and card.count("---") >= 2 else ""
    for line in header.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "license" and value.strip():
            licence = value.strip().strip("'\"")
            return LICENCES.get(licence.lower(), licence)
    return "not stated on its dataset card"


def credit(repo_id: str) -> str:
    """One plain-text line naming the dataset and its licence, for the frames' notes."""
    from huggingface_hub import hf_hub_download

    try:
        card = Path(hf_hub_download(repo_id, "README.md", repo_type="dataset",
                                    endpoint=_endpoint()))
        licence = card_licence(card.read_bytes()[:MAX_CARD_BYTES].decode(errors="replace"))
    except Exception:  # a dataset without a card still plays; its licence is then unknown
        licence = "unknown (no dataset card)"
    return (f"frames from the dataset {repo_id} on the Hugging Face hub "
            f"(huggingface.co/datasets/{repo_id}); licence: {licence}")
