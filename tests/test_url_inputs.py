"""An image given as an https URL (page/door/url_inputs.py): fetched when its host is global,
refused for every private, loopback, link-local or other non-global address (and any IPv4
address a 6to4, mapped or compatible one wraps), written or resolved, and for a redirect to
one; limited in size and time like an upload.

The web is a local HTTP server that logs every request. Nothing public can be reached from a
test, so the public case injects the two parts that touch the network: a resolver that
answers a public address (93.184.215.14) for `images.example`, and a transport that routes a
connection to that checked address to the local server (the URL stays https; the route
stands in for the TLS connection safehttpx's transport would open). Every refusal uses the
real resolver and transport, and the server's log shows that no request reached it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
import pytest
from local_web import LocalWeb, answer, png

from page.door import url_inputs
from page.door.url_inputs import UrlRefused, fetch

PUBLIC = "93.184.215.14"


class Web(LocalWeb):
    """A local server: /photo.png, /go?to=URL (302), /big (says 2 MB), /endless (streams
    without a length), /stall (answers when the test ends)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        super().__init__()

    def get(self, request: BaseHTTPRequestHandler) -> None:
        self.requests.append(request.path)
        if request.path == "/photo.png":
            answer(request, 200, png(), {"Content-Type": "image/png"})
        elif request.path.startswith("/go?to="):
            answer(request, 302, b"", {"Location": request.path.removeprefix("/go?to=")})
        elif request.path == "/big":
            answer(request, 200, b"x" * (2 * 1024**2), {})
        elif request.path == "/endless":
            request.send_response(200)
            request.end_headers()
            for _ in range(64):
                request.wfile.write(b"x" * 65536)
        elif request.path == "/stall":
            self.release.wait(600)
            answer(request, 200, png(), {})
        else:
            answer(request, 404, b"", {})


@pytest.fixture()
def web() -> Iterator[Web]:
    server = Web()
    yield server
    server.close()


def routed(web: Web, connected: list[str]):
    """The injected transport: a connection to the checked address goes to the local server."""
    class Route(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=web.port)
            return await super().handle_async_request(request)

    def transport(address: str) -> httpx.AsyncBaseTransport:
        connected.append(address)
        return Route()
    return transport


def answers(table: dict[str, list[str]]):
    async def resolve(host: str) -> list[str]:
        return table[host]
    return resolve


def get(url: str, folder: Path, max_bytes: int = 1_000_000, **injected: object) -> Path:
    return asyncio.run(fetch(url, folder, max_bytes, **injected))


def test_a_public_https_url_is_fetched_through_the_checked_address(web, tmp_path) -> None:
    connected: list[str] = []
    path = get("https://images.example/photo.png", tmp_path, resolve=answers(
        {"images.example": [PUBLIC]}), transport=routed(web, connected))
    assert path.read_bytes() == png() and path.parent == tmp_path
    assert path.name.endswith("-photo.png")
    assert connected == [PUBLIC] and web.requests == ["/photo.png"]
    # A redirect to another public host is followed, each hop checked again.
    path = get("https://images.example/go?to=https://cdn.example/photo.png", tmp_path,
               resolve=answers({"images.example": [PUBLIC], "cdn.example": ["8.8.4.4"]}),
               transport=routed(web, connected))
    assert path.read_bytes() == png() and connected[1:] == [PUBLIC, "8.8.4.4"]


@pytest.mark.parametrize("host", ["127.0.0.1", "10.1.2.3", "169.254.169.254", "[::1]",
                                  "[::ffff:127.0.0.1]", "0.0.0.0", "192.168.0.1", "[fe80::1]",
                                  # not global, and passed by Python 3.11's is_global or
                                  # wrapping an IPv4 address that is not
                                  "100.64.0.1", "192.0.0.8", "192.88.99.1", "[fec0::1]",
                                  "[2002:7f00:1::]", "[2002:a9fe:a9fe::]", "[::127.0.0.1]",
                                  "[64:ff9b::a9fe:a9fe]", "224.0.0.1"])
def test_an_address_inside_is_refused_before_any_connection(web, tmp_path, host) -> None:
    with pytest.raises(UrlRefused, match="private, loopback or link-local"):
        get(f"https://{host}:{web.port}/photo.png", tmp_path)  # the real resolver and transport
    assert web.requests == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("resolved", [["127.0.0.1"], ["10.0.0.7"], ["169.254.169.254"],
                                      ["::1"], [PUBLIC, "127.0.0.1"], ["100.100.100.200"],
                                      [PUBLIC, "2002:a9fe:a9fe::"], ["fec0::1"]])
def test_a_name_that_resolves_inside_is_refused(web, tmp_path, resolved) -> None:
    connected: list[str] = []
    with pytest.raises(UrlRefused, match="private, loopback or link-local"):
        get("https://evil.example/photo.png", tmp_path,
            resolve=answers({"evil.example": resolved}), transport=routed(web, connected))
    assert connected == [] and web.requests == []


@pytest.mark.parametrize("inside", ["https://127.0.0.1/photo.png", "https://10.0.0.7/photo.png",
                                    "https://169.254.169.254/latest/meta-data",
                                    "https://[::1]/photo.png", "https://intranet.example/x"])
def test_a_redirect_inside_is_refused(web, tmp_path, inside) -> None:
    connected: list[str] = []
    with pytest.raises(UrlRefused, match="private, loopback or link-local"):
        get(f"https://images.example/go?to={inside}", tmp_path, transport=routed(web, connected),
            resolve=answers({"images.example": [PUBLIC], "intranet.example": ["10.9.9.9"]}))
    assert connected == [PUBLIC] and web.requests == [f"/go?to={inside}"]  # the first hop only
    assert list(tmp_path.iterdir()) == []


def test_only_https_and_a_few_redirects(web, tmp_path) -> None:
    connected: list[str] = []
    public = {"resolve": answers({"images.example": [PUBLIC]}),
              "transport": routed(web, connected)}
    for url in (f"http://images.example:{web.port}/photo.png", "ftp://images.example/x",
                "file:///etc/passwd", "https://images.example/go?to=http://images.example/x"):
        with pytest.raises(UrlRefused, match="a file as an upload or an https URL"):
            get(url, tmp_path, **public)
    loop = "https://images.example/go?to=https://images.example/go?to=" * 3 + "x"
    with pytest.raises(UrlRefused, match="redirects more than"):
        get(loop, tmp_path, **public)
    assert len(web.requests) == 1 + url_inputs.MAX_REDIRECTS + 1


def test_size_and_time_are_limited_like_an_upload(web, tmp_path) -> None:
    public = {"resolve": answers({"images.example": [PUBLIC]}), "transport": routed(web, [])}
    for path in ("/big", "/endless"):  # said too large, or found too large as it streams
        with pytest.raises(UrlRefused, match="at that URL is larger than 1 MB, the upload limit"):
            get(f"https://images.example{path}", tmp_path, 1_000_000, **public)
    with pytest.raises(UrlRefused, match="did not answer within 1 s"):
        get("https://images.example/stall", tmp_path, timeout_s=1, **public)
    with pytest.raises(UrlRefused, match="answered 404"):
        get("https://images.example/nothing", tmp_path, **public)
    assert list(tmp_path.iterdir()) == []  # nothing half-written is kept
