"""A limit on every request body: ASGI middleware in front of gradio.

gradio reads a queue join or a REST call (`/gradio_api/queue/join`, `/gradio_api/call/*`)
whole, whatever its size, keeps each session's input values, and prints a join with too few
inputs whole in its log (`Blocks.validate_inputs`): thirty 20 MB `/stop` tokens kept 512 MB,
four 100 MB joins wrote 400 MB of log. No request of the page or the API needs more than a
prompt, a few names and file references (the files themselves go to `/upload`), so every body
is held to `BODY_BYTES`; a body past it is answered 413 before gradio sees a byte of it, and
what was read of it is dropped unread and unlogged. Two routes carry files: `/upload` keeps
caps of its own (gradio's `max_file_size`, and `uploads.UploadGuard`'s per-visitor share), and
the MCP server's tool calls carry their images inline as data: URLs (base64: 4/3 of the file).
Those are held to what the MCP server itself accepts (`MCP_BODY_BYTES`, the SDK's 4 MiB, which
gradio's MCP server keeps on both of its transports): a larger one it would refuse anyway,
after this had buffered it. So an MCP image comes to about 3 MB at most as a data: URL
(docs/api.md); a larger one goes in as an https URL. No gradio here: plain ASGI.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

BODY_BYTES = 1_000_000  # a 4000-character prompt and every other field, many times over
UPLOAD_BYTES = 100_000_000  # app.py's max_file_size: gradio refuses a larger upload itself
MCP_BODY_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE  # what the MCP server accepts (4 MiB)
MCP_ROUTE = "/gradio_api/mcp"  # gradio's MCP server (SSE and streamable HTTP)
TOO_LARGE = (f"A request body may be at most {BODY_BYTES // 1_000_000} MB here: send files "
             "with /upload (gradio_client's handle_file does), never inside a call.").encode()
MCP_TOO_LARGE = (f"An MCP call may be at most {MCP_BODY_BYTES // 2**20} MiB, so an image about "
                 f"{MCP_BODY_BYTES * 3 // 4 // 1_000_000} MB at most as a data: URL: give a "
                 "larger one as an https URL.").encode()

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
        refusal = MCP_TOO_LARGE if scope["path"].startswith(MCP_ROUTE) else TOO_LARGE
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _refuse(send, refusal)
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
                await _refuse(send, refusal)
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


async def _refuse(send: Send, message: bytes) -> None:
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(message)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": message})
