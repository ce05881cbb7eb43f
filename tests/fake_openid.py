"""A local OpenID Connect provider that speaks what Hugging Face's does for "Sign in with Hugging
Face" (hub-docs `oauth.md`: authorization-code flow, `openid profile` scopes), for tests of
gradio's real OAuth routes (authlib's client), pointed here by OPENID_PROVIDER_URL.

- `GET /.well-known/openid-configuration`: the provider's metadata (issuer, endpoints, RS256);
- `GET /oauth/authorize?response_type=code&client_id&redirect_uri&scope&state&nonce`: signs in
  `user` at once (a test sets it: the person at the browser) and redirects to `redirect_uri`
  with a one-time `code` and the `state`; an unknown client answers 400;
- `POST /oauth/token` (client_secret_basic or _post, `grant_type=authorization_code`): the
  access token and an RS256 `id_token` whose claims are the user's (`sub`, `name`,
  `preferred_username`, `profile`, `picture`) with the request's `nonce`, `aud` the client;
- `GET /oauth/jwks`: the public key; `GET /oauth/userinfo`: the user's claims (Bearer token).

Every request path is recorded (`requests`).

    with FakeOpenID(client_id="cid", client_secret="secret") as provider:
        provider.user = "ada"
        env["OPENID_PROVIDER_URL"] = provider.url
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import RSAKey


class FakeOpenID:
    def __init__(self, client_id: str, client_secret: str) -> None:
        self.client_id, self.client_secret = client_id, client_secret
        self.user = "ada"
        self.requests: list[str] = []
        self._key = RSAKey.generate_key(2048, parameters={"kid": "fake-openid-1"})
        self._codes: dict[str, tuple[str, str]] = {}  # code -> (user, nonce)
        self._tokens: dict[str, str] = {}  # access token -> user
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet: tests print what matters
                pass

            def do_GET(self) -> None:
                provider.answer(self, "GET")

            def do_POST(self) -> None:
                provider.answer(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeOpenID:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def claims(self, user: str) -> dict[str, Any]:
        return {"sub": f"id-of-{user}", "name": user.title(), "preferred_username": user,
                "profile": f"https://huggingface.co/{user}",
                "picture": f"https://huggingface.co/avatars/{user}.png"}

    def answer(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        self.requests.append(parts.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        routes = {("GET", "/.well-known/openid-configuration"): self._metadata,
                  ("GET", "/oauth/authorize"): self._authorize,
                  ("POST", "/oauth/token"): self._token,
                  ("GET", "/oauth/jwks"): self._jwks,
                  ("GET", "/oauth/userinfo"): self._userinfo}
        route = routes.get((method, parts.path))
        if route is None:
            _send(handler, 404, {"error": "not_found"})
            return
        route(handler, query)

    def _metadata(self, handler: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
        _send(handler, 200, {
            "issuer": self.url, "authorization_endpoint": f"{self.url}/oauth/authorize",
            "token_endpoint": f"{self.url}/oauth/token", "jwks_uri": f"{self.url}/oauth/jwks",
            "userinfo_endpoint": f"{self.url}/oauth/userinfo",
            "response_types_supported": ["code"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic",
                                                      "client_secret_post"]})

    def _authorize(self, handler: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
        if query.get("client_id") != self.client_id or query.get("response_type") != "code":
            _send(handler, 400, {"error": "invalid_request"})
            return
        code = secrets.token_urlsafe(16)
        self._codes[code] = (self.user, query.get("nonce", ""))
        target = query["redirect_uri"]
        joiner = "&" if "?" in target else "?"
        handler.send_response(302)
        handler.send_header("Location", target + joiner + urlencode(
            {"code": code, "state": query.get("state", "")}))
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def _token(self, handler: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(handler.rfile.read(length).decode()).items()}
        client = (form.get("client_id"), form.get("client_secret"))
        basic = handler.headers.get("Authorization", "")
        if basic.startswith("Basic "):
            client = tuple(base64.b64decode(basic[6:]).decode().split(":", 1))
        if client != (self.client_id, self.client_secret):
            _send(handler, 401, {"error": "invalid_client"})
            return
        found = self._codes.pop(form.get("code", ""), None)
        if form.get("grant_type") != "authorization_code" or found is None:
            _send(handler, 400, {"error": "invalid_grant"})
            return
        user, nonce = found
        now = int(time.time())
        id_token = jwt.encode({"alg": "RS256", "kid": "fake-openid-1"},
                              {**self.claims(user), "iss": self.url, "aud": self.client_id,
                               "iat": now, "exp": now + 3600, "nonce": nonce}, self._key)
        access = "hf_oauth_" + secrets.token_hex(12)
        self._tokens[access] = user
        _send(handler, 200, {"access_token": access, "token_type": "Bearer",
                             "expires_in": 3600, "scope": "openid profile",
                             "id_token": id_token})

    def _jwks(self, handler: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
        _send(handler, 200, {"keys": [self._key.as_dict(private=False)]})

    def _userinfo(self, handler: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
        token = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        user = self._tokens.get(token)
        if user is None:
            _send(handler, 401, {"error": "invalid_token"})
            return
        _send(handler, 200, self.claims(user))


def _send(handler: BaseHTTPRequestHandler, status: int, answer: dict[str, Any]) -> None:
    body = json.dumps(answer).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
