"""A local HTTP server that speaks the Hugging Face hub's API for the calls
`banana_space.sources.hub` makes, for tests of the real `huggingface_hub` client (pointed here by
HF_ENDPOINT).

- `GET /api/datasets/{owner}/{name}/tree/{revision}[/{path}]?recursive=…`: the tree listing,
  JSON entries `{"type": "file"|"directory", "oid", "size", "path"}`, as the hub answers it;
- `HEAD|GET /datasets/{owner}/{name}/resolve/{revision}/{path}`: a file, with the headers the
  client reads (`X-Repo-Commit`, `ETag`, `Content-Length`); a `Range: bytes=A-B` request is
  answered `206 Partial Content` with that slice, as the hub's CDN does (parquet shards are
  read that way). Every range served is recorded (`ranges`).

An unknown dataset answers 404 with `X-Error-Code: RepoNotFound`, an unknown file 404 with
`EntryNotFound`, as the hub does. A dataset in `private` answers a request without the hub's
`token` (`Authorization: Bearer …`) as the hub answers one for a private repo: 401 with
`X-Error-Code: RepoNotFound` and "Repository not found" (a wrong token: 401, "Invalid
credentials in Authorization header"); one in `gated`, 401 with `X-Error-Code: GatedRepo`.
Every request path is recorded (`requests`), and those that carried a token (`with_token`),
so a test can assert that only the files a chain needs were fetched, and by whom.

    with FakeHub({"kenantang/Banana100": {"README.md": b"…", "a/0.png": b"…"}}) as hub:
        os.environ["HF_ENDPOINT"] = hub.url
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
REVISIONS = ("main", COMMIT)


class FakeHub:
    def __init__(self, datasets: dict[str, dict[str, bytes]], private: set[str] = frozenset(),
                 gated: set[str] = frozenset(), token: str = "hf_the_owners_token_0001") -> None:
        self.datasets = datasets
        self.private, self.gated, self.token = set(private), set(gated), token
        self.requests: list[str] = []
        self.with_token: list[str] = []
        self.ranges: list[tuple[str, int, int]] = []  # (path in its dataset, first, last byte)
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet: tests print what matters
                pass

            def do_GET(self) -> None:
                hub.answer(self, with_body=True)

            def do_HEAD(self) -> None:
                hub.answer(self, with_body=False)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fetched(self) -> list[str]:
        """The files downloaded whole (GET on resolve, no range), as paths in their dataset."""
        return [path.split("/resolve/", 1)[1].split("/", 1)[1] for path in self.requests
                if path.startswith("GET /datasets/")]

    def answer(self, handler: BaseHTTPRequestHandler, with_body: bool) -> None:
        path = unquote(urlsplit(handler.path).path)
        ranged = " (range)" if handler.headers.get("Range") else ""
        self.requests.append(f"{handler.command}{ranged} {path}")
        if handler.headers.get("Authorization"):
            self.with_token.append(f"{handler.command} {path}")
        parts = path.strip("/").split("/")
        repo = ("/".join(parts[2:4]) if parts[:2] == ["api", "datasets"] else
                "/".join(parts[1:3]) if parts[0] == "datasets" else "")
        if not self._may_read(handler, repo, with_body):
            return
        if parts[:2] == ["api", "datasets"] and len(parts) >= 6 and parts[4] == "tree":
            self._tree(handler, self.datasets.get("/".join(parts[2:4])), parts[5],
                       "/".join(parts[6:]))
        elif parts[0] == "datasets" and len(parts) >= 6 and parts[3] == "resolve":
            self._file(handler, "/".join(parts[1:3]), parts[4], "/".join(parts[5:]), with_body)
        else:
            self._send(handler, 404, b'{"error": "not found"}', {"X-Error-Code": "EntryNotFound"})

    def _may_read(self, handler: BaseHTTPRequestHandler, repo: str, with_body: bool) -> bool:
        """A private or gated repo's answer to a request without the owner's token."""
        given = handler.headers.get("Authorization")
        if given == f"Bearer {self.token}" or repo not in self.private | self.gated:
            return True
        if given:
            code, message = "", "Invalid credentials in Authorization header"
        elif repo in self.gated:
            code, message = "GatedRepo", f"Access to dataset {repo} is restricted."
        else:
            code, message = "RepoNotFound", "Repository not found"
        headers = {"X-Error-Message": message, "Content-Type": "application/json",
                   **({"X-Error-Code": code} if code else {})}
        self._send(handler, 401, json.dumps({"error": message}).encode(), headers, with_body)
        return False

    def _tree(self, handler: BaseHTTPRequestHandler, files: dict[str, bytes] | None,
              revision: str, folder: str) -> None:
        """The listing of one repo's `files` (None: no such repo) under `folder`."""
        if files is None or revision not in REVISIONS:
            self._send(handler, 404, b'{"error": "Repository not found"}',
                       {"X-Error-Code": "RepoNotFound"})
            return
        prefix = f"{folder}/" if folder else ""
        under = {name: data for name, data in files.items() if name.startswith(prefix)}
        if folder and not under:
            self._send(handler, 404, b'{"error": "not found"}', {"X-Error-Code": "EntryNotFound"})
            return
        recursive = "recursive=true" in (urlsplit(handler.path).query or "").lower()
        entries, folders = [], set()
        for name in sorted(under):
            rest = name[len(prefix):].split("/")
            if len(rest) > 1:
                folders.update(prefix + "/".join(rest[:depth]) for depth in
                               range(1, len(rest) if recursive else 2))
            if len(rest) == 1 or recursive:
                entries.append({"type": "file", "oid": _oid(under[name]),
                                "size": len(under[name]), "path": name})
        entries += [{"type": "directory", "oid": _oid(f.encode()), "path": f}
                    for f in sorted(folders)]
        self._send(handler, 200, json.dumps(entries).encode(),
                   {"Content-Type": "application/json"})

    def _file(self, handler: BaseHTTPRequestHandler, repo: str, revision: str, name: str,
              with_body: bool) -> None:
        files = self.datasets.get(repo)
        if files is None or revision not in REVISIONS:
            self._send(handler, 404, b"", {"X-Error-Code": "RepoNotFound"}, with_body)
        elif name not in files:
            self._send(handler, 404, b"", {"X-Error-Code": "EntryNotFound"}, with_body)
        else:
            data, status = files[name], 200
            headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{_oid(data)}"',
                       "Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
            wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", handler.headers.get("Range") or "")
            if wanted and with_body:
                first = int(wanted.group(1))
                last = min(int(wanted.group(2) or len(data) - 1), len(data) - 1)
                self.ranges.append((name, first, last))
                headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
                data, status = data[first:last + 1], 206
            self._send(handler, status, data, headers, with_body)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes,
              headers: dict[str, str], with_body: bool = True) -> None:
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if with_body:
            handler.wfile.write(body)


def _oid(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()
