"""The real app (`app.main`) with the one part a test of image URLs injects: every host
resolves to a public address (`PUBLIC`) and every connection goes to a local server on
`BANANA_TEST_WEB_PORT`, as tests/test_url_inputs.py injects into the fetcher itself. The URL
stays https; everything else (the door, the fetch, the caps) is the app's own. The app's
process id is written to `BANANA_TEST_PID_FILE`, for a test that reads its memory."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import app  # noqa: E402
from page.door import url_inputs  # noqa: E402

PUBLIC = "93.184.215.14"
WEB_PORT = int(os.environ["BANANA_TEST_WEB_PORT"])


class Route(httpx.AsyncHTTPTransport):
    """A connection to the checked address goes to the local server, over plain HTTP."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(scheme="http", host="127.0.0.1", port=WEB_PORT)
        return await super().handle_async_request(request)


async def resolve(host: str) -> list[str]:
    return [PUBLIC]


if __name__ == "__main__":
    Path(os.environ["BANANA_TEST_PID_FILE"]).write_text(str(os.getpid()))
    url_inputs.fetch = functools.partial(url_inputs.fetch, resolve=resolve,
                                         transport=lambda address: Route())
    app.main()
