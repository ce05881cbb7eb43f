"""Chains on the Hugging Face hub: `hf://datasets/OWNER/NAME[/PATH]`.

Read through the real `huggingface_hub` client, so files land in its usual cache (HF_HOME) and
only the files a chain needs are fetched. Three calls are used: the tree listing
(`list_repo_tree`), file downloads (`hf_hub_download`), and, for parquet shards (the hub's
usual image dataset, `shards.py`), HTTP range requests on a file's resolve URL, so only the
footer, the image paths and the row groups holding a wanted frame are transferred.
HF_ENDPOINT points them all at another server (the tests' `tests/fake_hub.py`); HF_HUB_OFFLINE=1
turns the hub off. Sizes come from the listing and are checked before anything is downloaded:
each file, and a replay's whole (`MAX_REPLAY_BYTES`, `replay_bytes` for the page's share).

A dataset someone names is read anonymously (`token=False`): the environment's HF_TOKEN (a
Space's secret) is sent only inside `operator_token()`, which the operator's own reads enter
(`persist.py`'s BANANA_RUNS_REPO, `real_chains.py`'s dataset), so naming the owner's private
repo gets a visitor "private or gated", never its files. Inside `pinned(commit)` every read
is at that commit (`real_chains.py` reads Banana100 at the one commit it records). Files are
kept in this engine's own folder under HF_HOME (`chains_cache`), apart from the models there,
so the page can hold it to its share of the disk.
The dataset card's `license:` line becomes a credit that goes with the frames (Banana100,
arXiv 2604.03400, is CC BY-NC-SA 4.0).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..store.run import FRAMES, META_NAME
from .chain_layout import Numbered, as_chain, chain_steps
from .frames import (
    ANIMATION_SUFFIXES,
    ARCHIVE_SUFFIXES,
    MAX_MEMBER_BYTES,
    Frames,
    frames_from_files,
    frames_in_file,
    is_image_name,
)
from .hub_client import (
    HubPath,
    NotOnHub,
    chains_cache,
    endpoint,
    fetch,
    list_files,
    parse_hub,
    pinned_commit,
    token_to_send,
    unreadable,
)
from .images import BadImage, BadSource
from .shards import chain_rows, frames_in_rows, is_shard_name

# A replayed chain (app, `score`) plays steps 0 to MAX_STEPS = 100: fetch no frame past them.
LAST_REPLAYED_STEP = 100
MAX_CARD_BYTES = 1 << 20
MAX_ARROW_BYTES = 2 * 2**30
# All the files one replay downloads whole: 101 lossless 2K frames (~6 MB each) fit 3 times.
MAX_REPLAY_BYTES = 2 * 2**30
LICENCES = {"cc-by-nc-sa-4.0": "CC BY-NC-SA 4.0", "cc-by-sa-4.0": "CC BY-SA 4.0",
            "cc-by-nc-4.0": "CC BY-NC 4.0", "cc-by-4.0": "CC BY 4.0", "cc0-1.0": "CC0 1.0",
            "mit": "MIT", "apache-2.0": "Apache 2.0"}


class RemoteFile(io.RawIOBase):
    """A file on the hub read by HTTP range requests (seekable, read-only), for pyarrow."""

    def __init__(self, url: str, size: int, name: str, token: bool | None) -> None:
        self.url, self.size, self.name, self.position = url, size, name, 0
        self.token = token  # pyarrow reads from its own threads: the caller's, kept

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        start = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, start + offset)
        return self.position

    def readinto(self, buffer: Any) -> int:
        from huggingface_hub.utils import build_hf_headers, hf_raise_for_status, http_backoff

        end = min(self.position + len(buffer), self.size)
        if end <= self.position:
            return 0
        headers = {**build_hf_headers(token=self.token),
                   "Range": f"bytes={self.position}-{end - 1}"}
        try:
            answer = http_backoff("GET", self.url, headers=headers)
            hf_raise_for_status(answer)
        except Exception as error:  # offline, gone, refused: one clear message
            raise unreadable(self.name, error) from None
        data = answer.content
        if answer.status_code != 206 or len(data) != end - self.position:
            raise BadSource(f"the hub did not answer a range request for {self.name}")
        buffer[:len(data)] = data
        self.position = end
        return len(data)


class HubShards:
    """Parquet shards of one dataset read in ranges (arrow files are downloaded whole: they
    cannot be read in pieces); rows extracted under HF_HOME, keyed by each shard's ETag."""

    def __init__(self, repo_id: str) -> None:
        self.repo_id = repo_id
        self.token = token_to_send()  # read later, maybe from pyarrow's threads: the maker's
        self.revision = pinned_commit()  # likewise
        self._metadata: dict[str, Any] = {}

    def _meta(self, shard: str) -> Any:
        from huggingface_hub import get_hf_file_metadata, hf_hub_url

        if shard not in self._metadata:
            url = hf_hub_url(self.repo_id, shard, repo_type="dataset", endpoint=endpoint(),
                             revision=self.revision)
            try:
                self._metadata[shard] = (url, get_hf_file_metadata(url, token=self.token,
                                                                   endpoint=endpoint()))
            except Exception as error:  # offline, not found, refused: one clear message
                raise unreadable(f"{shard} of {self.repo_id}", error) from None
        return self._metadata[shard]

    def open(self, shard: str) -> AbstractContextManager[Any]:
        import pyarrow as pa

        if not shard.lower().endswith(".parquet"):
            size = self._meta(shard)[1].size or 0
            if size > MAX_ARROW_BYTES:
                raise BadImage(f"{shard} is {size / 2**20:,.0f} MB; an arrow shard is "
                               f"downloaded whole, up to {MAX_ARROW_BYTES / 2**20:,.0f} MB")
            return pa.memory_map(str(fetch(self.repo_id, [shard]) / shard))
        url, meta = self._meta(shard)
        # Unbuffered: pyarrow asks for the footer and whole column chunks, one range each, and
        # a read-ahead would fetch the neighbouring images with every small `path` chunk.
        return RemoteFile(url, meta.size or 0, f"{shard} of {self.repo_id}", self.token)

    def cache(self, shard: str) -> Path:
        version = self._meta(shard)[1].etag or ""
        key = hashlib.sha1(f"{self.repo_id}|{shard}|{version}".encode()).hexdigest()[:20]
        return chains_cache() / "rows" / key


def check_sizes(listing: Sequence[tuple[str, int]]) -> None:
    """Refuse, from the listing's sizes, a file past the limit per file or a replay whose
    files come to more than `MAX_REPLAY_BYTES` together."""
    for name, size in listing:
        if size > MAX_MEMBER_BYTES:
            raise BadImage(f"{name} is {size / 2**20:,.0f} MB; the limit per file is "
                           f"{MAX_MEMBER_BYTES / 2**20:,.0f} MB")
    total = sum(size for _, size in listing)
    if total > MAX_REPLAY_BYTES:
        raise BadImage(f"the files to fetch come to {total / 2**20:,.0f} MB; the limit per "
                       f"replay is {MAX_REPLAY_BYTES / 2**20:,.0f} MB")


def replay_bytes(source: str) -> int:
    """What replaying `source` downloads whole, from the tree listing alone (nothing is
    fetched): the archive or animation it names, else the frames under it, else its arrow
    shards (parquet shards are read by range, and only the row groups that hold a frame)."""
    hub = parse_hub(source)
    if Path(hub.path).suffix.lower() in ARCHIVE_SUFFIXES | ANIMATION_SUFFIXES | {".arrow"}:
        return sum(size for name, size in _parent_listing(hub) if name == hub.path)
    if is_shard_name(hub.path):
        return 0
    try:
        listing = list_files(hub)
    except NotOnHub:  # a chain in the rows of shards above it
        return 0
    images, _ = _frame_files(hub, listing)
    return sum(size for name, size in images or listing
               if images or name.lower().endswith(".arrow"))


def _parent_listing(hub: HubPath) -> list[tuple[str, int]]:
    return list_files(HubPath(hub.repo_id, str(Path(hub.path).parent).strip(".")))


def _frame_files(hub: HubPath, listing: list[tuple[str, int]]
                 ) -> tuple[list[tuple[str, int]], list[str]]:
    """The frame files a replay of the folder `hub` reads from its listing, in step order by
    their names (`chain_layout.chain_steps`; a run directory's frames only; steps 0 to 100),
    and a note where some were left out.

    Raises:
        BadSource: the names are not a chain's; nothing is fetched.
    """
    prefix = f"{hub.path}/" if hub.path else ""
    if any(name == f"{prefix}{META_NAME}" for name, _ in listing):  # one of our runs
        listing = [(n, s) for n, s in listing if n.startswith(f"{prefix}{FRAMES}/")]
    sizes = {n: s for n, s in listing if is_image_name(n)
             and not any(p.startswith(".") for p in n.split("/"))}
    if not sizes:
        return [], []
    kept, notes = _replayed(chain_steps(list(sizes), f"{hub.root}/{hub.path}".rstrip("/")))
    return [(name, sizes[name]) for name in kept], notes


def open_hub_frames(source: str) -> Frames:
    """One chain on the hub: an archive or animation, one of our run directories, the images
    under a folder, or a chain among the rows of parquet/arrow shards, read as a chain
    (`chain_layout.as_chain`); the credit is the last note."""
    hub = parse_hub(source)
    suffix = Path(hub.path).suffix.lower()
    if suffix in ARCHIVE_SUFFIXES | ANIMATION_SUFFIXES:
        listing = [(n, s) for n, s in _parent_listing(hub) if n == hub.path]
        if not listing:
            raise BadSource(f"{source} was not found on the hub")
        check_sizes(listing)
        frames = frames_in_file(fetch(hub.repo_id, [hub.path]) / hub.path)
    elif is_shard_name(hub.path):  # the chain(s) in one shard
        frames = _chain_in_shards(hub, source, [(hub.path, 0)])
    else:
        frames = _hub_folder(hub, source)
    frames = as_chain(frames)
    frames.notes.append(credit(hub.repo_id))
    return frames


def _hub_folder(hub: HubPath, source: str) -> Frames:
    try:
        listing = list_files(hub)
    except NotOnHub:  # a chain inside shards: its folder exists only in the rows' paths
        return _chain_in_shards(hub, source)
    if not any(is_image_name(n) for n, _ in listing) and any(is_shard_name(n)
                                                            for n, _ in listing):
        return _chain_in_shards(hub, source, listing)
    images, notes = _frame_files(hub, listing)
    if not images:
        raise BadImage(f"no images under {source}")
    check_sizes(images)
    names = [n for n, _ in images]
    frames = frames_from_files(fetch(hub.repo_id, names), names, source)
    frames.notes.extend(notes)
    return frames


def _replayed(numbers: Numbered) -> tuple[list[str], list[str]]:
    """The files of steps 0 to `LAST_REPLAYED_STEP`, and a note where there are more."""
    kept = [file for step, file in zip(numbers.steps, numbers.files, strict=True)
            if step <= LAST_REPLAYED_STEP]
    if len(kept) == len(numbers.files):
        return kept, []
    return kept, [f"only steps 0–{LAST_REPLAYED_STEP} were used ({len(kept)} of "
                  f"{len(numbers.files)} frames)"]


def _chain_in_shards(hub: HubPath, source: str,
                     listing: Sequence[tuple[str, int]] | None = None) -> Frames:
    """The chain `source` names among the rows of the shards under it, or of the nearest
    folder above it that exists: `hf://datasets/OWNER/NAME/chain_07` is the rows whose paths
    lie in `chain_07/`, as `table` names that chain; only the rows of steps 0 to 100 are
    read."""
    folder = hub.path
    while listing is None:
        folder = str(Path(folder).parent).strip(".")
        try:
            listing = list_files(HubPath(hub.repo_id, folder))
        except NotOnHub:
            if not folder:
                raise
    names = (hub.path, hub.path[len(folder):].strip("/")) if hub.path != folder else ()
    shards = HubShards(hub.repo_id)
    rows = chain_rows(listing, shards, source, names)
    kept, notes = _replayed(chain_steps(list(rows), source))
    frames = frames_in_rows([rows[path] for path in kept], shards, source, kept)
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


def revision(repo_id: str) -> str:
    """The commit the dataset's main branch points at now (as its card's download reports
    it), to read it at (`pinned`) and keep with what was read; "" where the hub does not
    say."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    try:
        url = hf_hub_url(repo_id, "README.md", repo_type="dataset", endpoint=endpoint())
        return (get_hf_file_metadata(url, token=token_to_send(), endpoint=endpoint()).commit_hash
                or "")
    except Exception:  # no card, or the hub does not say: the revision is then not known
        return ""


def credit(repo_id: str) -> str:
    """One plain-text line naming the dataset and its licence, for the frames' notes."""
    from huggingface_hub import hf_hub_download

    try:
        card = Path(hf_hub_download(repo_id, "README.md", repo_type="dataset",
                                    cache_dir=chains_cache() / "files", endpoint=endpoint(),
                                    revision=pinned_commit(), token=token_to_send()))
        licence = card_licence(card.read_bytes()[:MAX_CARD_BYTES].decode(errors="replace"))
    except Exception:  # a dataset without a card still plays; its licence is then unknown
        licence = "unknown (no dataset card)"
    return (f"frames from the dataset {repo_id} on the Hugging Face hub "
            f"(huggingface.co/datasets/{repo_id}); licence: {licence}")
