"""What gradio's file routes may serve from the runs folder: never a run's private files.

The runs folder is served as it lies (`app.py`: `set_static_paths`, `allowed_paths`), so that
frames stream without a copy; gradio's `blocked_paths` names whole paths only, never a kind of
file. A run keeps a few files of its own beside its frames, each a dot-name: `.owner` (who made
it: anyone holding two run links could tell whether one visitor made both),
`.writer.lock`, and a writer's temporaries. This ASGI middleware answers 404 to a request on a
file route (`/file=…`, `/file/…`) for a dot-name; the previews' folder (`.previews`) is a
folder, its files have plain names and are served. No gradio here: plain ASGI.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from banana_space.store.run import KEPT_FILE

FILE_ROUTES = ("/file=", "/file/")
NOT_SERVED = b"Not found."


def private_file(path: str) -> bool:
    """Whether `path` (a request's path) asks a file route for a dot-named file other than a
    frame's thumbnail (`.thumbs/.step_000.png`: the frame strip's pictures, meant to be seen)."""
    route = next((path.split(r, 1)[1] for r in FILE_ROUTES if r in path), None)
    if route is None:
        return False
    file = PurePosixPath(route)
    # Of a run's kept files (`run.KEPT_FILE`), only a thumbnail is a dot-name in its folder.
    thumbnail = KEPT_FILE.fullmatch(f"{file.parent.name}/{file.name}") is not None
    return file.name.startswith(".") and not thumbnail


class PrivateFiles:
    """Answer 404 to a file route asking for a dot-named file; hand anything else on."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and private_file(scope["path"]):
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", str(len(NOT_SERVED)).encode())]})
            await send({"type": "http.response.body", "body": NOT_SERVED})
            return
        await self.app(scope, receive, send)
