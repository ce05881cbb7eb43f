"""Call the app's events the way its page does (raw HTTP on gradio's queue, by index), for
tests that check what a visitor can reach without gradio_client's manners: private events
included."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Answer:
    success: bool
    data: list[Any] | None  # the last output, for a streaming event
    error: str | None


def dependencies(url: str) -> dict[str, int]:
    """Every event of the page, by its name (api_name, private ones too) -> its index."""
    config = httpx.get(f"{url}config", timeout=30).json()
    return {dep["api_name"]: dep["id"] for dep in config["dependencies"]
            if isinstance(dep.get("api_name"), str)}


def call(url: str, fn_index: int, data: list[Any], *, session: str | None = None,
         query: str = "", timeout: float = 120, headers: dict[str, str] | None = None,
         transport: httpx.HTTPTransport | None = None) -> Answer:
    """Join the queue for event `fn_index` with `data` and read its stream to the end
    (`headers` on both requests: X-Forwarded-For, to be a visitor; `transport`: to connect
    from another local address)."""
    session = session or secrets.token_hex(6)
    body = {"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None,
            "trigger_id": None}
    with httpx.Client(timeout=timeout, headers=headers, transport=transport) as http:
        # json.dumps writes NaN as a browser's JSON.stringify never would: a hostile client may.
        joined = http.post(f"{url}gradio_api/queue/join{query}", content=json.dumps(body),
                           headers={"content-type": "application/json"})
        if joined.status_code != 200:
            return Answer(False, None, f"HTTP {joined.status_code}: {joined.text[:300]}")
        event_id = joined.json()["event_id"]
        last: list[Any] | None = None
        with http.stream("GET", f"{url}gradio_api/queue/data",
                         params={"session_hash": session}) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("event_id") not in (None, event_id):
                    continue
                if message.get("msg") == "process_generating" and message["output"].get("data"):
                    last = message["output"]["data"]
                if message.get("msg") == "process_completed":
                    output = message.get("output") or {}
                    if message.get("success"):
                        return Answer(True, output.get("data") or last, None)
                    return Answer(False, None, str(output.get("error")))
    return Answer(False, None, "the stream ended without an answer")
