"""A limit on every request body: ASGI middleware in front of gradio.

gradio reads a queue join or a REST call (`/gradio_api/queue/join`, `/gradio_api/call/*`)
whole, whatever its size, keeps each session's input values, and prints a join with too few
inputs whole in its log (`Blocks.validate_inputs`): thirty 20 MB `/stop` tokens kept 512 MB,
four 100 MB joins wrote 400 MB of log. No request of the page or the API needs more than a
prompt, a few names and file references (the files themselves go to `/upload`), so every body
is held to `BODY_BYTES`; a body past it is answered 413 before gradio sees a byte of it, and
what was read of it is dropped unread and unlogged. Two routes carry files and keep caps of
their own: `/upload` (gradio's `max_file_size`, and `uploads.UploadGuard`'s per-visitor share)
and the MCP server, whose tool calls carry their images inline as data: URLs (base64: 4/3 of
the file). No gradio here: plain ASGI.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

BODY_BYTES = 1_000_000  # a 4000-character prompt and every other field, many times over
UPLOAD_BYTES = 100_000_000  # app.py's max_file_size: gradio refuses a larger upload itself
MCP_BODY_BYTES = UPLOAD_BYTES * 4 // 3 + BODY_BYTES  # one upload's worth of base64, and the call
MCP_ROUTE = "/gradio_api/mcp"  # gradio's MCP server (SSE and streamable HTTP)
TOO_LARGE = (f"A request body may be at most {BODY_BYTES // 1_000_000} MB here: send files "
             "with /upload (gradio_client's handle_file does), never inside a call.").encode()

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def body_limit(path: str) -> int | None:
    """The most bytes a request to `path` may send; None where another guard bounds it."""
    if path.endswith("/upload"):
        return None  # gradio's max_file_size, read as it streams to disk
    if path.startswith(MCP_ROUTE):
        return MCP_BODY_BYTES
    return BODY_BYTES


class BodyLimit:
    """Read a request's body up to its limit before the app sees it, then hand it on; past the
    limit, answer 413 and drop what was read."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        limit = body_limit(scope["path"]) if scope["type"] == "http" else None
        if limit is None:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _refuse(send)
            return
        received, size = [], 0
        while True:  # a body without a length (chunked) is counted as it arrives
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replayed([message], receive), send)
                return
            size += len(message.get("body", b""))
            if size > limit:
                received.clear()
                await _refuse(send)
                return
            received.append(message)
            if not message.get("more_body"):
                break
        await self.app(scope, _replayed(received, receive), send)


def _replayed(messages: list[dict[str, Any]], receive: Receive) -> Receive:
    """`receive` that gives `messages` first, then the client's own (a disconnect)."""
    async def replay() -> dict[str, Any]:
        return messages.pop(0) if messages else await receive()
    return replay


async def _refuse(send: Send) -> None:
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(TOO_LARGE)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": TOO_LARGE})
