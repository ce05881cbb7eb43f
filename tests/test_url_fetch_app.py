"""An image URL given to the running app through gradio's queue (page/door/join.py and
url_inputs.py): a compressed answer is refused without being inflated (a brotli or stacked
gzip bomb, 1 GiB decoded from under 2 KB, costs the app's process < 150 MB); a URL is
fetched only as a chain's or a preview's file, once the chains' caps admit it, at most two
of a visitor's and eight of everyone's at once, its bytes counted against the visitor's
uploads as they arrive; and an address that is not global is refused before anything
connects.

The app is the real one (`app_routed_web.py`: every host resolves to a public address and
every connection goes to this test's local server, the URL staying https), as a public Space
runs it (`visitors.public_app`: 3 MB of uploads per visitor)."""

from __future__ import annotations

import concurrent.futures
import gzip
import re
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import brotli
import pytest
from gradio_client import Client, handle_file
from local_web import LocalWeb, answer, png
from raw_api import call
from visitors import TOKEN, busy_runs, join, noise, public_app, stop, wait_for, waiting

pytestmark = pytest.mark.app

INFLATED = 1 << 30  # what each bomb decodes to
MEMORY_BOUND = 150 * 1024**2


class Web(LocalWeb):
    """A hostile image host: /bomb.br and /bomb.gz (1 GiB of zeros, sent compressed whatever
    was asked), /photo.png, /drip (64 KB pieces, 40 MB, no length), /stall (until released).
    Logs each request's path and Accept-Encoding, and the bytes /drip sent."""

    def __init__(self) -> None:
        zeros = bytes(INFLATED)
        self.bombs = {"/bomb.br": ("br", brotli.compress(zeros, quality=5)),
                      "/bomb.gz": ("gzip, gzip", gzip.compress(gzip.compress(zeros, 9), 9))}
        del zeros
        self.requests: list[tuple[str, str]] = []
        self.dripped = 0
        super().__init__()

    def get(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?")[0]
        self.requests.append((request.path, request.headers.get("Accept-Encoding", "")))
        if path in self.bombs:
            encoding, body = self.bombs[path]
            answer(request, 200, body, {"Content-Encoding": encoding})
        elif path == "/photo.png":
            answer(request, 200, png(), {"Content-Type": "image/png"})
        elif path == "/drip":
            request.send_response(200)
            request.end_headers()
            for _ in range(640):
                request.wfile.write(b"x" * 65536)
                self.dripped += 65536
        elif path == "/stall":
            self.release.wait(60)
            answer(request, 200, png(), {})

    def asked(self, path: str) -> list[str]:
        """The Accept-Encoding of each request for `path` (its query included)."""
        return [encoding for asked, encoding in self.requests if asked == path]


@pytest.fixture(scope="module")
def web() -> Iterator[Web]:
    server = Web()
    yield server
    server.close()


@pytest.fixture(scope="module")
def app(web, tmp_path_factory) -> Iterator[dict]:
    runs = tmp_path_factory.mktemp("url-fetch") / "runs"
    pid_file = runs.parent / "app.pid"
    with public_app(runs, "tests/app_routed_web.py", BANANA_TEST_WEB_PORT=str(web.port),
                    BANANA_TEST_PID_FILE=str(pid_file)) as app:
        yield {**app, "pid": int(pid_file.read_text())}


def url_file(url: str) -> dict:
    return {"path": url, "url": url, "meta": {"_type": "gradio.FileData"}}


def run_chain(app: dict, url: str, who: str):
    """/run_chain joined with `url` as its image, from `who` (no browser)."""
    return join(app, "run_chain", [url_file(url), 1, "simulate", "entropy", 0, "", ""], who)


def memory(pid: int, field: str) -> int:
    """A field of the process's /proc status (VmRSS, VmHWM: its peak), in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", status, re.M).group(1)) * 1024


@pytest.mark.parametrize("bomb", ["/bomb.br", "/bomb.gz"])
def test_a_compressed_answer_is_refused_without_inflating_it(app, web, bomb) -> None:
    Path(f"/proc/{app['pid']}/clear_refs").write_text("5")  # its peak, from now
    before = memory(app["pid"], "VmRSS")
    refused = run_chain(app, f"https://images.example{bomb}", "10.0.51.1")
    growth = memory(app["pid"], "VmHWM") - before
    assert web.asked(bomb) == ["identity"]  # it was served, though not what was asked for
    assert refused.status_code == 400 and "answered compressed" in refused.text
    assert growth < MEMORY_BOUND, f"the app grew by {growth / 1024**2:.0f} MB"


def test_a_url_is_fetched_only_as_a_chains_or_previews_file(app, web) -> None:
    for name, data in (("list_options", [url_file("https://images.example/photo.png?list")]),
                       ("open_run", [url_file("https://images.example/photo.png?open")]),
                       ("stop", [url_file("https://images.example/photo.png?stop")])):
        refused = join(app, name, data, "10.0.51.2")
        assert refused.status_code == 400 and "upload the file here instead" in refused.text
    assert not [path for path, _ in web.requests if path.startswith("/photo.png")]
    preview = call(app["url"], app["index"]["preview"],
                   [url_file("https://images.example/photo.png?preview")],
                   headers={"X-Forwarded-For": "10.0.51.2"})
    assert preview.success and web.asked("/photo.png?preview") == ["identity"]


def test_a_url_is_fetched_only_once_the_chains_caps_admit_it(app, web, tmp_path) -> None:
    who = "10.0.51.6"
    browser = Client(app["url"], verbose=False, headers={"X-Forwarded-For": who})
    picture = handle_file(str(noise(tmp_path / "wide.png", 1024, 768)))
    pair = browser.submit(picture, 100, '{"seed": 0}', '{"seed": 1}', "entropy", TOKEN,
                          api_name="/compare_chains")  # two chains: the visitor's cap
    wait_for(lambda: busy_runs(app["runs"]) == 2, what="both sides running")
    refused = join(app, "run_chain", [url_file("https://images.example/photo.png?capped"), 1,
                                      "simulate", "entropy", 0, "", ""], who, browser=browser)
    assert refused.status_code == 400 and "chains queued or running" in refused.text
    assert web.asked("/photo.png?capped") == []  # refused before anything was fetched
    stop(app, who)
    pair.result(timeout=300)


def test_a_fetchs_bytes_count_against_the_visitors_uploads_as_they_arrive(app, web) -> None:
    refused = run_chain(app, "https://images.example/drip", "10.0.51.3")
    assert refused.status_code == 400 and "Your uploads came to" in refused.text
    time.sleep(1)  # what the server had sent when the app hung up (socket buffers included)
    assert web.dripped < 12 * 1024**2  # 3 MB a visitor, not the 40 MB sent nor 100 MB a file


def test_fetches_in_flight_are_bounded_per_visitor_and_in_all(app, web) -> None:
    def stalled(index: int, who: str):
        return run_chain(app, f"https://images.example/stall?{index}", who)

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        mine = [pool.submit(stalled, index, "10.0.51.4") for index in range(2)]
        _wait_for(lambda: len([p for p, _ in web.requests if p.startswith("/stall")]) == 2)
        third = stalled(2, "10.0.51.4")
        assert third.status_code == 400 and "2 URLs being fetched" in third.text
        others = [pool.submit(stalled, 10 + index, f"10.0.52.{index}") for index in range(6)]
        _wait_for(lambda: len([p for p, _ in web.requests if p.startswith("/stall")]) == 8)
        ninth = stalled(20, "10.0.53.1")
        assert ninth.status_code == 400 and "Many URLs are being fetched" in ninth.text
        web.release.set()
        # Each joins, or is refused by the caps checked again once its file is in (all eight
        # were admitted before their fetches, with nothing queued).
        assert all(future.result().status_code in (200, 400) for future in mine + others)
    assert len([p for p, _ in web.requests if p.startswith("/stall")]) == 8
    # The chains that joined run on (seen: one still queued as this test ended), and the queue
    # holds 3 at most (`public_app`): the next tests' refusals must not be that one.
    wait_for(lambda: not waiting(app) and not busy_runs(app["runs"]),
             what="the end of the chains that joined")


@pytest.mark.parametrize("host", ["100.64.0.1", "192.0.0.8", "192.88.99.1", "[fec0::1]",
                                  "[2002:7f00:1::]", "[2002:a9fe:a9fe::]", "[::127.0.0.1]",
                                  "[64:ff9b::a9fe:a9fe]"])
def test_an_address_that_is_not_global_is_refused(app, web, host) -> None:
    refused = run_chain(app, f"https://{host}/photo.png?{host}", "10.0.51.5")
    assert refused.status_code == 400 and "private, loopback or link-local" in refused.text
    assert web.asked(f"/photo.png?{host}") == []


def _wait_for(condition, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the fetches did not reach the server"
        time.sleep(0.05)
