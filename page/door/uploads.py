"""Files a visitor sends: a file argument is a file gradio received (`received_file`), never a
folder, never a path a client names; a visitor's uploads within `uploads_keep_s` are bounded
(`upload_bytes_per_visitor`, `upload_bytes_per_address` per address; `UploadGuard` on gradio's
upload route, `arriving` for an image fetched from a URL as its bytes arrive), and so are the
hub files fetched for its replays (`count_hub_bytes`); the upload folder is kept within its
share of the disk, oldest first.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gradio.context import LocalContext
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from page.door import disk
from page.door.guard import Refused, Served
from page.door.identity import Visitor, visitor_of
from page.settings import SETTINGS

_upload_lock = threading.Lock()
# who -> [time, bytes] of each file it sent (a fetch's grows as its bytes arrive)
ByteLog = dict[str, deque[list[float]]]
_uploads: ByteLog = defaultdict(deque)
_hub_bytes: ByteLog = defaultdict(deque)  # the same, for replays


def received_file(path: Any) -> str:
    """`path` if it is a regular file gradio received from a client (an upload, or a file its
    MCP server made from a data: URL and uploaded), else `Refused`: never a folder, a link or
    any other server path (gradio lets a client name any file under a static path)."""
    blocks = LocalContext.blocks.get(None) or Served.demo
    received = set(getattr(blocks, "upload_file_set", ()))
    if blocks is not None:
        for block in blocks.blocks.values():
            received |= getattr(block, "temp_files", set())
    if not isinstance(path, str) or os.path.abspath(path) not in received:
        raise Refused("Upload the file: a file argument must be a file you sent.")
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        raise Refused("That upload is gone (uploads are kept for a while): upload it "
                      "again.") from None
    if not stat.S_ISREG(mode):
        raise Refused("Upload a file: a folder or a link is not a file argument.")
    return path


class UploadGuard:
    """ASGI middleware on gradio's upload route: a visitor's uploads within the window are
    bounded, and the upload folder is kept within its share of the disk (oldest first)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if (scope["type"] == "http" and scope["method"] == "POST"
                and scope["path"].endswith("/upload")):
            try:
                _admit_upload(Request(scope))
            except Refused as refusal:
                await PlainTextResponse(str(refusal), status_code=429)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _admit_upload(request: Request) -> None:
    length = request.headers.get("content-length", "")
    if not length.isdigit():
        raise Refused("An upload must say its length (Content-Length).")
    admit_bytes(request, int(length))


def admit_bytes(request: Any, size: int) -> None:
    """`size` more bytes in the upload folder from `request`'s visitor, or `Refused`."""
    _count(_uploads, _upload_shares(request), size, "uploads")
    disk.make_room(Path(disk.UPLOADS), size, SETTINGS.uploads_bytes)


@contextlib.contextmanager
def arriving(request: Any) -> Iterator[Callable[[int], None]]:
    """A file that arrives in pieces (an image fetched from a URL) counted as it arrives:
    `arrived(size)` adds a piece to the visitor's uploads, or `Refused` past a share, so its
    fetches in flight count against each other. Once it is written, the upload folder is
    kept within its share of the disk."""
    shares, entries = _upload_shares(request), []

    def arrived(size: int) -> None:
        entries[:] = _count(_uploads, shares, size, "uploads", entries or None)

    yield arrived
    disk.make_room(Path(disk.UPLOADS), 0, SETTINGS.uploads_bytes)


def _upload_shares(request: Any) -> list[tuple[str, int, str]]:
    """The (who, cap, per what) an upload from `request` counts against."""
    # Behind the proxy, only the app's own MCP client uploads without the proxy's header: MCP
    # callers' files are bounded by the upload folder's share alone.
    if SETTINGS.trust_proxy and "x-forwarded-for" not in request.headers:
        return []
    visitor = visitor_of(request)
    return [(visitor.share, SETTINGS.upload_bytes_per_visitor, "visitor"),
            ("address " + visitor.address, SETTINGS.upload_bytes_per_address, "address")]


def count_hub_bytes(visitor: Visitor, size: int) -> None:
    """Add `size` (what a replay fetches from the hub) to the visitor's share within the
    upload window, or `Refused` past it (`SETTINGS.hub_bytes_per_visitor`)."""
    _count(_hub_bytes, [(visitor.share, SETTINGS.hub_bytes_per_visitor, "visitor")], size,
           "replays from the hub")


def _count(sent_by: ByteLog, shares: list[tuple[str, int, str]], size: int, what: str,
           entries: list[list[float]] | None = None) -> list[list[float]]:
    """Add `size` to each (who, cap, per what) of `shares` within the window, as a new entry
    or grown onto `entries` (one per share, as this returned them), or `Refused` (adding to
    none) where one would pass its cap. Returns the entries it added to."""
    now = time.monotonic()
    with _upload_lock:
        for who, cap, per in shares:
            recent = sent_by[who]
            while recent and now - recent[0][0] > SETTINGS.uploads_keep_s:
                recent.popleft()
            sent = sum(nbytes for _, nbytes in recent)
            if sent + size > cap:
                whose = "Your" if per == "visitor" else "Your network's"
                raise Refused(f"{whose} {what} came to {_mb(sent)} recently and this needs "
                              f"{_mb(size)} more; at most {_mb(cap)} per {per} within "
                              f"{SETTINGS.uploads_keep_s / 3600:g} h.")
        if entries is None:
            entries = [[now, 0] for _ in shares]
            for (who, _, _), entry in zip(shares, entries, strict=True):
                sent_by[who].append(entry)
        for entry in entries:
            entry[1] += size
    return entries


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:,.0f} MB" if nbytes >= 1e7 else f"{nbytes / 1e6:.2g} MB"
