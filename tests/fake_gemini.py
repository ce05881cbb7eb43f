"""A local HTTP server that speaks the Gemini REST shape, for tests of the real google-genai client.

It answers `POST /{version}/models/{model}:generateContent` (the path the SDK builds from a custom
`base_url`; we pin version v1beta) with camelCase JSON (https://ai.google.dev/api/generate-content)
and records every request so tests can assert what was sent. By default:

- an image request (responseModalities holds IMAGE) gets the input image back, re-encoded as PNG
  with its red channel raised by 1 (so frames differ, deterministically), after the text part
  "Here is the exact replica.";
- any other request (the judge) gets a text part, `judge_text`.

Replies can be scripted for the next requests of any kind, in order (`script`), or for the k-th
image request (`fail_at`), using the builders below: errors with a status (429, 500, 400), a
blocked prompt, a stopped candidate, a text-only answer, arbitrary parts, or a hang past the
client's timeout.

    with FakeGemini() as server:
        backend = create_backend("nano-banana-pro", api_key="k", base_url=server.base_url)
"""

from __future__ import annotations

import base64
import io
import json
import re
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image

from banana_space.files import png_bytes

PATH = re.compile(r"^/(v1beta|v1|v1alpha)/models/([^/:]+):generateContent$")
REPLICA_TEXT = "Here is the exact replica."


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] | None = None  # None: the default answer for this request
    delay_s: float = 0.0  # wait this long before answering (a hang, for timeouts)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]

    @property
    def model(self) -> str:
        match = PATH.match(self.path)
        return match.group(2) if match else ""

    @property
    def parts(self) -> list[dict[str, Any]]:
        return self.body["contents"][-1]["parts"]

    @property
    def prompt(self) -> str:
        return "".join(part["text"] for part in self.parts if "text" in part)

    @property
    def image_bytes(self) -> bytes:
        data = next(p["inlineData"]["data"] for p in self.parts if "inlineData" in p)
        # The SDK sends URL-safe base64 (- and _); the API accepts both alphabets, so do we.
        return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))

    @property
    def config(self) -> dict[str, Any]:
        return self.body.get("generationConfig", {})

    @property
    def wants_image(self) -> bool:
        return "IMAGE" in self.config.get("responseModalities", [])


# Builders of reply parts and replies.


def image_part(png: bytes, *, thought: bool = False) -> dict[str, Any]:
    part: dict[str, Any] = {"inlineData": {"mimeType": "image/png",
                                           "data": base64.b64encode(png).decode()}}
    return {**part, "thought": True} if thought else part


def text_part(text: str, *, thought: bool = False) -> dict[str, Any]:
    return {"text": text, "thought": True} if thought else {"text": text}


def answer(*parts: dict[str, Any], finish_reason: str = "STOP") -> Reply:
    return Reply(body={"candidates": [{"content": {"role": "model", "parts": list(parts)},
                                       "finishReason": finish_reason, "index": 0}]})


def text_only(text: str) -> Reply:
    return answer(text_part(text))


def blocked(reason: str = "SAFETY") -> Reply:
    """The prompt itself was refused: no candidates, only promptFeedback."""
    return Reply(body={"promptFeedback": {"blockReason": reason}})


def stopped(reason: str = "SAFETY", text: str | None = None) -> Reply:
    """A candidate stopped for `reason`, with no image."""
    return answer(*([text_part(text)] if text else []), finish_reason=reason)


def empty() -> Reply:
    return Reply(body={"candidates": []})


def error(status: int, message: str, status_name: str = "UNKNOWN",
          retry_delay: str | None = None) -> Reply:
    details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": retry_delay}] if retry_delay else []
    return Reply(status, {"error": {"code": status, "message": message, "status": status_name,
                                    "details": details}})


def rate_limited(retry_delay: str | None = None) -> Reply:
    return error(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED",
                 retry_delay)


def server_error() -> Reply:
    return error(500, "An internal error has occurred.", "INTERNAL")


def hang(seconds: float) -> Reply:
    return Reply(delay_s=seconds)


def replica_png(request_png: bytes) -> bytes:
    """The input, nudged: red + 1 everywhere (clipped), so each frame differs from the last."""
    image = Image.open(io.BytesIO(request_png)).convert("RGB")
    red, green, blue = image.split()
    return png_bytes(Image.merge("RGB", (red.point(lambda v: min(255, v + 1)), green, blue)))


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.server.fake.answer_for(Recorded(self.path, headers, body))
        if reply.delay_s:
            if self.server.fake.closing.wait(reply.delay_s):
                return
            self.server.fake.hang_ended.set()  # a hang that ran its whole length
        data = json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a hung handler must not hold up the test's teardown
    fake: FakeGemini


class FakeGemini:
    def __init__(self, *, judge_text: str = "<answer>3.42</answer>",
                 api_key: str | None = None) -> None:
        self.judge_text = judge_text
        self.api_key = api_key  # when set, any other key gets the API's 400 "API key not valid"
        self.requests: list[Recorded] = []
        self.closing = threading.Event()
        self.hang_ended = threading.Event()
        self._queue: deque[Reply] = deque()
        self._at: dict[int, Reply] = {}
        self._lock = threading.Lock()
        self._server: _Server | None = None

    def __enter__(self) -> FakeGemini:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        # A short poll so that shutdown() returns at once rather than after 0.5 s.
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use FakeGemini as a context manager"
        return f"http://127.0.0.1:{self._server.server_port}"

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with these replies, in order, then go back to defaults."""
        self._queue.extend(replies)

    def fail_at(self, k: int, reply: Reply | None = None) -> None:
        """Answer the k-th image request (1-based) with `reply`, by default a safety block.

        Only image requests count, so a judge sharing this server does not shift k: for a chain
        with one call per step, k is the step that fails."""
        self._at[k] = reply or blocked("SAFETY")

    def answer_for(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            number = sum(r.wants_image for r in self.requests)
            at = self._at.pop(number, None) if request.wants_image else None
            scripted = at or (self._queue.popleft() if self._queue else None)
        if not PATH.match(request.path):
            return error(404, f"no such method: {request.path}", "NOT_FOUND")
        if self.api_key is not None and request.headers.get("x-goog-api-key") != self.api_key:
            return error(400, "API key not valid. Please pass a valid API key.",
                         "INVALID_ARGUMENT")
        if scripted is not None:
            return scripted if scripted.body is not None else Reply(
                scripted.status, self._default(request).body, scripted.delay_s)
        return self._default(request)

    def _default(self, request: Recorded) -> Reply:
        if request.wants_image:
            return answer(text_part(REPLICA_TEXT), image_part(replica_png(request.image_bytes)))
        return text_only(self.judge_text)
