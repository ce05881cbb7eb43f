"""The write side of the Hugging Face hub's API, beside `fake_hub.FakeHub`'s read side, for
tests of the real `huggingface_hub` client publishing a Space (`banana-space deploy`) or pushing
runs to a dataset (`banana_space.chain.persist`). Point the client here with HF_ENDPOINT and set
HF_HUB_DISABLE_XET=1 before it is imported: this speaks LFS, not Xet.

- `POST /api/repos/create`: a repo (409 with its url when it exists, as the Hub answers; 403
  for a token that may not create repos, `may_create=False`); a new Space's `hardware`,
  `secrets`, `variables` and `volumes` are kept as set at creation;
- `POST /api/validate-yaml`: the card; a Space's `python_version` must be `3.x` or `3.x.x`
  (hub-docs, spaces-config-reference.md);
- `POST /api/{type}s/{id}/preupload/{rev}`: "lfs" for a binary sample (a NUL byte in the first
  bytes, as git decides) or a file over 10 MB, else "regular", with the stored file's oid;
- `POST /{prefix}{id}.git/info/lfs/objects/batch`, then `PUT /lfs/{oid}`: the LFS transfer,
  the body checked against its sha256;
- `POST /api/{type}s/{id}/commit/{rev}`: the ndjson commit. A regular file whose content is
  binary is refused with the Hub's words ("Your push was rejected because it contains binary
  files"), as is an LFS file whose object was never uploaded;
- `POST /api/spaces/{id}/secrets`, `/variables` and `/hardware`, `PUT /api/spaces/{id}/volumes`:
  kept in `secrets` / `variables` / `hardware` / `volumes`; `GET /api/spaces/{id}/runtime`
  answers with the hardware and volumes, `GET /api/spaces/{id}/variables` with the variables.
  A Space builds on each commit (`builds`), and each of these settings changed after its first
  build restarts it, as on the Hub;
- `POST /api/buckets/{namespace}/{name}`: a Storage Bucket, kept in `buckets` with what was
  asked (409 when it exists, as the Hub answers);
- `GET /api/{type}s/{id}/revision/{rev}` (and a Space's `GET /api/spaces/{id}`): the repo's
  last commit and files;
- `GET /api/spaces/{id}` of a Space that is not there: 404 RepoNotFound, as the Hub answers;
- `GET /api/spaces/{id}/tree/{rev}`: a Space's listing, as the read side lists a dataset (the
  client lists a repo before a commit that deletes what is gone).

`down = True` answers every write 503 (an outage) until it is set back.

Committed dataset files are served by the read side (tree, resolve), so a run pushed here can
be restored from here. Every commit is kept in `commits` (repo, message, paths, which were LFS).
"""

from __future__ import annotations

import base64
import hashlib
import json
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

import yaml
from fake_hub import FakeHub

LFS_THRESHOLD = 10 * 1024 * 1024
BINARY_REFUSAL = ("Your push was rejected because it contains binary files. Please use "
                  "https://huggingface.co/docs/hub/xet to store binary files.")


def is_binary(data: bytes) -> bool:
    """git's test: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


class FakeHubWrite(FakeHub):
    def __init__(self, datasets: dict[str, dict[str, bytes]] | None = None,
                 token: str = "hf_the_owners_token_0001", may_create: bool = True) -> None:
        super().__init__(datasets if datasets is not None else {}, token=token)
        self.may_create = may_create
        self.spaces: dict[str, dict[str, bytes]] = {}
        self.repos: dict[str, dict] = {}  # "space/OWNER/NAME" -> what create_repo asked
        self.lfs: dict[str, bytes] = {}  # sha256 -> content
        self.commits: list[dict] = []
        self.secrets: dict[str, dict[str, str]] = {}
        self.hardware: dict[str, str] = {}
        self.variables: dict[str, dict[str, str]] = {}
        self.volumes: dict[str, list[dict]] = {}
        self.buckets: dict[str, dict] = {}  # "OWNER/NAME" -> what create_bucket asked
        self.builds: dict[str, list[str]] = {}  # "OWNER/NAME" -> "build" or "restart (why)"
        self.down = False  # an outage: every write is answered 503, as the Hub's proxy does
        hub = self
        handler = self._server.RequestHandlerClass
        handler.do_POST = lambda request: hub.write(request)  # type: ignore[attr-defined]
        handler.do_PUT = lambda request: hub.write(request)  # type: ignore[attr-defined]

    def answer(self, handler: BaseHTTPRequestHandler, with_body: bool) -> None:
        """GET `/api/{type}s/{id}/revision/{rev}` (the client's `repo_info`, which it calls
        after a commit with nothing new), else the read side's routes."""
        parts = unquote(urlsplit(handler.path).path).strip("/").split("/")
        space_info = parts[:2] == ["api", "spaces"] and len(parts) == 4
        if space_info and "/".join(parts[2:4]) not in self.spaces:
            self.requests.append(f"{handler.command} {'/'.join(parts)}")
            self._send(handler, 404, b'{"error": "Repository not found"}',
                       {"X-Error-Code": "RepoNotFound"}, with_body)
            return
        if parts[0] == "api" and (space_info or len(parts) >= 6 and parts[4] == "revision"):
            kind, repo = parts[1].rstrip("s"), "/".join(parts[2:4])
            stored = self.files(kind, repo)
            if stored is not None:
                self.requests.append(f"{handler.command} {'/'.join(parts)}")
                done = [c["oid"] for c in self.commits if c["repo"] == f"{kind}/{repo}"]
                info = {"id": repo, "sha": done[-1] if done else "0" * 40, "private": False,
                        "siblings": [{"rfilename": name} for name in sorted(stored)]}
                self._send(handler, 200, json.dumps(info).encode(),
                           {"Content-Type": "application/json"}, with_body)
                return
        if parts[:2] == ["api", "spaces"] and parts[4:] in (["runtime"], ["variables"]) and (
                "/".join(parts[2:4]) in self.spaces):
            self.requests.append(f"{handler.command} {'/'.join(parts)}")
            repo = "/".join(parts[2:4])
            variables = self.variables.get(repo, {})
            answer = (self._runtime(repo) if parts[4] == "runtime" else
                      {key: {"value": value} for key, value in variables.items()})
            self._send(handler, 200, json.dumps(answer).encode(),
                       {"Content-Type": "application/json"}, with_body)
            return
        if parts[:2] == ["api", "spaces"] and len(parts) == 4:  # `repo_exists`, `space_info`
            self.requests.append(f"{handler.command} {'/'.join(parts)}")
            repo = "/".join(parts[2:4])
            if repo in self.spaces:
                self._send(handler, 200, json.dumps({"id": repo}).encode(),
                           {"Content-Type": "application/json"}, with_body)
            else:
                self._send(handler, 404, b'{"error": "Repository not found"}',
                           {"X-Error-Code": "RepoNotFound"}, with_body)
            return
        if parts[:2] == ["api", "spaces"] and len(parts) >= 6 and parts[4] == "tree":
            self.requests.append(f"{handler.command} {'/'.join(parts)}")
            self._tree(handler, self.spaces.get("/".join(parts[2:4])), parts[5],
                       "/".join(parts[6:]))
            return
        super().answer(handler, with_body)

    def files(self, kind: str, repo: str) -> dict[str, bytes] | None:
        return (self.spaces if kind == "space" else self.datasets).get(repo)

    def write(self, handler: BaseHTTPRequestHandler) -> None:
        path = unquote(urlsplit(handler.path).path)
        self.requests.append(f"{handler.command} {path}")
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        parts = path.strip("/").split("/")
        if self.down:
            self._send(handler, 503, b'{"error": "Service Unavailable"}',
                       {"Content-Type": "application/json"})
            return
        try:
            status, answer = self._route(handler.command, parts, body)
        except (KeyError, ValueError) as error:
            status, answer = 400, {"error": f"bad request: {error}"}
        self._send(handler, status, json.dumps(answer).encode(),
                   {"Content-Type": "application/json",
                    **({"X-Error-Message": answer["error"]} if "error" in answer else {})})

    def _route(self, method: str, parts: list[str], body: bytes) -> tuple[int, dict]:
        if method == "PUT" and parts[0] == "lfs":
            return self._lfs_put(parts[1], body)
        if parts[:3] == ["api", "repos", "create"]:
            return self._create(json.loads(body))
        if parts[:2] == ["api", "buckets"] and method == "POST" and len(parts) == 4:
            return self._create_bucket("/".join(parts[2:4]), json.loads(body or b"{}"))
        if parts[:2] == ["api", "validate-yaml"]:
            return self._validate(json.loads(body))
        if parts[-4:-1] == ["info", "lfs", "objects"] and parts[-1] == "batch":
            return self._lfs_batch(json.loads(body))
        if parts[0] == "api" and len(parts) >= 5:
            kind, repo, action = parts[1].rstrip("s"), "/".join(parts[2:4]), parts[4]
            if self.files(kind, repo) is None:
                return 404, {"error": "Repository not found"}
            if action == "preupload":
                return self._preupload(kind, repo, json.loads(body))
            if action == "commit":
                return self._commit(kind, repo, body)
            if kind == "space" and action in ("secrets", "variables", "volumes", "hardware") \
                    and self.builds.get(repo):
                self.builds[repo].append(f"restart ({action})")
            if action == "secrets" and kind == "space":
                secret = json.loads(body)
                self.secrets.setdefault(repo, {})[secret["key"]] = secret["value"]
                return 200, {}
            if action == "variables" and kind == "space":
                variable = json.loads(body)
                self.variables.setdefault(repo, {})[variable["key"]] = variable["value"]
                return 200, {}
            if action == "volumes" and kind == "space" and method == "PUT":
                self.volumes[repo] = json.loads(body)["volumes"]
                return 200, {}
            if action == "hardware" and kind == "space":
                self.hardware[repo] = json.loads(body)["flavor"]
                return 200, {"stage": "BUILDING", "hardware": {
                    "current": None, "requested": self.hardware[repo]}}
        return 404, {"error": "not found"}

    def _create(self, asked: dict) -> tuple[int, dict]:
        kind = asked.get("type") or "model"
        repo = f"{asked['organization']}/{asked['name']}"
        if not self.may_create:
            return 403, {"error": "You don't have the rights to create a repo under the "
                                  f"namespace \"{asked['organization']}\""}
        store = self.spaces if kind == "space" else self.datasets
        url = f"{self.url}/{'spaces/' if kind == 'space' else 'datasets/'}{repo}"
        if repo in store:  # the Hub names the existing repo, and the client reads it
            return 409, {"error": "You already created this repo", "url": url}
        store[repo] = {}
        self.repos[f"{kind}/{repo}"] = asked
        if kind == "space":
            self.builds[repo] = []
            self.secrets[repo] = {s["key"]: s["value"] for s in asked.get("secrets", [])}
            self.variables[repo] = {v["key"]: v["value"] for v in asked.get("variables", [])}
            if "volumes" in asked:
                self.volumes[repo] = asked["volumes"]
            if "hardware" in asked:
                self.hardware[repo] = asked["hardware"]
        if kind == "dataset" and (asked.get("private") or asked.get("visibility") == "private"):
            self.private.add(repo)  # read back only with the owner's token, as on the hub
        return 200, {"url": url}

    def _runtime(self, repo: str) -> dict:
        hardware = self.hardware.get(repo)
        return {"stage": "RUNNING" if self.builds.get(repo) else "NO_APP_FILE",
                "hardware": {"current": hardware, "requested": hardware},
                "volumes": self.volumes.get(repo)}

    def _create_bucket(self, bucket: str, asked: dict) -> tuple[int, dict]:
        url = f"{self.url}/buckets/{bucket}"
        if bucket in self.buckets:
            return 409, {"error": "You already created this bucket", "url": url}
        self.buckets[bucket] = asked
        return 200, {"url": url}

    @staticmethod
    def _validate(asked: dict) -> tuple[int, dict]:
        header = yaml.safe_load(asked["content"].split("---\n", 2)[1]) or {}
        version = str(header.get("python_version", "3.10"))
        parts = version.split(".")
        if asked.get("repoType") == "space" and not (
                parts[0] == "3" and len(parts) in (2, 3) and all(p.isdigit() for p in parts)):
            return 400, {"error": f"python_version {version!r} is not 3.x or 3.x.x"}
        return 200, {"errors": [], "warnings": []}

    def _preupload(self, kind: str, repo: str, asked: dict) -> tuple[int, dict]:
        stored = self.files(kind, repo) or {}
        answer = []
        for file in asked["files"]:
            sample = base64.b64decode(file["sample"])
            lfs = is_binary(sample) or file["size"] > LFS_THRESHOLD
            old = stored.get(file["path"])
            answer.append({"path": file["path"], "uploadMode": "lfs" if lfs else "regular",
                           "shouldIgnore": False, "oid": None if old is None else _oid(old)})
        return 200, {"files": answer}

    def _lfs_batch(self, asked: dict) -> tuple[int, dict]:
        objects = []
        for item in asked["objects"]:
            entry = {"oid": item["oid"], "size": item["size"]}
            if item["oid"] not in self.lfs:
                entry["actions"] = {"upload": {"href": f"{self.url}/lfs/{item['oid']}"}}
            objects.append(entry)
        return 200, {"transfer": "basic", "objects": objects}

    def _lfs_put(self, oid: str, body: bytes) -> tuple[int, dict]:
        if hashlib.sha256(body).hexdigest() != oid:
            return 400, {"error": "the uploaded content does not match its oid"}
        self.lfs[oid] = body
        return 200, {}

    def _commit(self, kind: str, repo: str, body: bytes) -> tuple[int, dict]:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        header = next(line["value"] for line in lines if line["key"] == "header")
        changes, lfs_paths, deleted = {}, [], []
        stored = self.files(kind, repo)
        for line in lines:
            value = line["value"]
            if line["key"] in ("deletedFile", "deletedFolder"):
                gone = [name for name in stored if name == value["path"]
                        or name.startswith(value["path"].rstrip("/") + "/")]
                if not gone:
                    return 404, {"error": f"{value['path']} does not exist in {repo}"}
                deleted += gone
            elif line["key"] == "file":
                content = base64.b64decode(value["content"])
                if is_binary(content):
                    return 400, {"error": BINARY_REFUSAL}
                changes[value["path"]] = content
            elif line["key"] == "lfsFile":
                if value["oid"] not in self.lfs:
                    return 400, {"error": f"LFS object {value['oid']} was never uploaded"}
                changes[value["path"]] = self.lfs[value["oid"]]
                lfs_paths.append(value["path"])
        if kind == "space":
            self.builds.setdefault(repo, []).append("build")
        for name in deleted:
            del stored[name]  # type: ignore[union-attr]
        stored.update(changes)  # type: ignore[union-attr]
        oid = hashlib.sha1(json.dumps(sorted(changes)).encode()
                           + str(len(self.commits)).encode()).hexdigest()
        self.commits.append({"repo": f"{kind}/{repo}", "oid": oid, "message": header["summary"],
                             "paths": sorted(changes), "lfs": sorted(lfs_paths),
                             "deleted": sorted(deleted)})
        prefix = "spaces/" if kind == "space" else "datasets/"
        return 200, {"commitUrl": f"{self.url}/{prefix}{repo}/commit/{oid}", "commitOid": oid,
                     "pullRequestUrl": None}


def _oid(data: bytes) -> str:
    """A stored file's oid as the Hub reports it: sha256 for LFS, git's blob sha1 otherwise."""
    if is_binary(data) or len(data) > LFS_THRESHOLD:
        return hashlib.sha256(data).hexdigest()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
