"""What gradio's REST routes refuse, each in one line a caller can read: through
`/gradio_api/call/<name>` (the documented REST route, which joins the queue), a number too
large to be a cost, a server path or a data: URL as a file, an upper-case `HTTPS://` URL, too
few arguments; and `/gradio_api/run/<name>`, which skipped the queue and every check made
there, is closed. On the app as a public Space runs it (`visitors.public_app`)."""

from __future__ import annotations

import base64
import io
import json

import httpx
import pytest
from PIL import Image
from visitors import noise, public_app, upload

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    with public_app(tmp_path_factory.mktemp("rest") / "runs") as app:
        yield app


def rest_call(app: dict, name: str, data: list, who: str) -> tuple[bool, str | None]:
    """POST /gradio_api/call/<name> and read its event stream: (success, the answer or the
    error's text; None where gradio sent `null`). A refusal where the event joins the queue
    is the POST's own answer."""
    headers = {"X-Forwarded-For": who}
    posted = httpx.post(f"{app['url']}gradio_api/call/{name}", json={"data": data},
                        headers=headers, timeout=60)
    if posted.status_code != 200:
        return False, posted.json().get("detail")
    event_id = posted.json()["event_id"]
    with httpx.stream("GET", f"{app['url']}gradio_api/call/{name}/{event_id}", headers=headers,
                      timeout=300) as stream:
        event = None
        for line in stream.iter_lines():
            if line.startswith("event:"):
                event = line.removeprefix("event:").strip()
            elif line.startswith("data:") and event == "complete":
                return True, json.loads(line.removeprefix("data:"))
            elif line.startswith("data:") and event == "error":
                error = json.loads(line.removeprefix("data:"))  # {"error": ...} or null
                return False, error.get("error") if isinstance(error, dict) else error
    raise AssertionError("the stream ended without an answer")


def file_data(path: str) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}}


def chain(image: dict, steps: float = 1) -> list:
    """/run_chain's arguments: image, steps, generator, metrics, seed, profile, token."""
    return [image, steps, "simulate", "entropy", 0, "", ""]


@pytest.fixture(scope="module")
def photo(app, tmp_path_factory) -> dict:
    path = noise(tmp_path_factory.mktemp("photo") / "photo.png", 32, 24)
    return file_data(upload(app, path, "10.0.11.1").json()[0])


def one_line(error: str | None) -> str:
    assert isinstance(error, str) and error.strip() and "\n" not in error, error
    assert "Traceback" not in error and "/tmp" not in error, error
    return error


def test_each_refusal_says_what_was_wrong_in_one_line(app, photo) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buffer, format="PNG")
    png = base64.b64encode(buffer.getvalue()).decode()
    cases = [
        (chain(photo, 1e308), "not one as large as"),
        (chain(file_data("/etc/hostname")), "a file you sent"),
        (chain(file_data(f"data:image/png;base64,{png}")), "a file you sent"),
        (chain(file_data("HTTPS://127.0.0.1/photo.png")), "private, loopback or link-local"),
        ([photo], "takes 7 arguments and 1 were given"),
    ]
    for data, says in cases:
        ok, error = rest_call(app, "run_chain", data, "10.0.11.2")
        assert not ok and says in one_line(error), (data[:2], error)
    ok, answer = rest_call(app, "run_chain", chain(photo), "10.0.11.2")  # the control
    assert ok and json.loads(answer[0])["status"] == "completed"


def test_the_direct_run_route_is_closed(app, photo) -> None:
    before = sorted(app["runs"].glob("*/run.json"))
    answer = httpx.post(f"{app['url']}gradio_api/run/run_chain", json={"data": chain(photo)},
                        headers={"X-Forwarded-For": "10.0.11.3"}, timeout=300)
    assert answer.status_code == 404 and "join the queue" in answer.text
    assert sorted(app["runs"].glob("*/run.json")) == before

