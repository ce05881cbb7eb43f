"""A local web for the tests of image URLs (test_url_inputs, test_url_fetch_app): a threaded
HTTP server on a free port of this machine, each test's subclass saying how it answers a GET."""

from __future__ import annotations

import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from PIL import Image


def png() -> bytes:
    """A small orange picture, as an image host would serve it."""
    buffer = io.BytesIO()
    Image.new("RGB", (16, 12), "orange").save(buffer, format="PNG")
    return buffer.getvalue()


def answer(request: BaseHTTPRequestHandler, status: int, body: bytes,
           headers: dict[str, str]) -> None:
    """One whole answer: its status, its headers and its length, then its body."""
    request.send_response(status)
    for name, value in {**headers, "Content-Length": str(len(body))}.items():
        request.send_header(name, value)
    request.end_headers()
    request.wfile.write(body)


class LocalWeb:
    """Serves from construction to `close`; `release` is what a stalled answer waits for."""

    def __init__(self) -> None:
        self.release = threading.Event()
        web = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                web.get(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def get(self, request: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
