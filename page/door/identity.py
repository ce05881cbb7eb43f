"""Who a request comes from: a browser, an account, or an API caller's token; and the
address its connection came from, for the per-address ceilings only (`guard.py`).

A visitor is never an address: in a lecture hall 30 browsers share one.
- **A browser** holds a random secret of 128 bits in an HttpOnly cookie (`COOKIE`), minted by
  `BrowserCookie` on any answer to a client that sent none (the page, and gradio_client's
  first request for the config, which keeps the cookies it is given). It is never derived
  from an address, and never leaves the request: a run records only a keyed hash of it.
  Against fixation (someone else choosing the secret a browser will hold): only a value this
  server minted counts (it is signed under the operator's key, so it stays valid across a
  restart); a request carrying the cookie twice counts as none (a second one may be planted,
  and which one a server reads differs); on a Space, where it is Secure, it is named
  `__Host-…` (`SECURE_COOKIE`), which a browser accepts only from this very host, over https,
  for the whole site: another Space on a sibling domain cannot set it.
- **An account**: a visitor signed in with Hugging Face (gradio's OAuth session) owns their
  runs in any browser.
- **An API or MCP caller** without a browser owns its runs by the token it gives them.
- A caller with none of these (raw HTTP with no cookie, no token) owns nothing it can resume;
  its caps are counted under its address.

Keys: a run records `owner_key`, an HMAC-SHA256 of the credential under the operator's key
(`BANANA_OWNER_KEY`, a Space secret, else a key kept in a private file beside the runs:
`operator_key`), so ownership survives a restart and the key on disk tells nobody which
browser or account made the run.

The MCP hop: gradio's MCP server calls the app through its own loopback client and forwards
the MCP request's headers to it (gradio 6.31 `mcp.GradioMCPServer._prepare_tool_call_args`),
so a header an MCP caller writes (X-Forwarded-For, a cookie) would reach the app as if a
browser had sent it. `McpCaller` therefore fixes who the MCP caller is on the MCP request
itself (its real peer, its own cookie) and seals that into one header signed with this
process's secret; on the loopback request, the sealed caller is the only identity read.
uvicorn must not rewrite a loopback peer from X-Forwarded-For either (`gradio_patches`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sys
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse

from page.door import gradio_patches
from page.door.operator_key import operator_key
from page.settings import SETTINGS

__all__ = ["COOKIE", "SECURE_COOKIE", "BrowserCookie", "McpCaller", "SignInErrors", "Visitor",
           "owner_key", "visitor_of"]

COOKIE = "banana_visitor"  # where the page is served over plain http (locally)
SECURE_COOKIE = "__Host-" + COOKIE  # on a Space: Secure, and only this host may set it
MINTED = re.compile(r"[0-9a-f]{32}\.[0-9a-f]{32}")  # secrets.token_hex(16), then its signature
COOKIE_AGE_S = 400 * 24 * 3600  # the longest a browser keeps a cookie (Chrome's cap)
MCP_CALLER = "x-banana-mcp-caller"
MCP_PATH = "/gradio_api/mcp"
SIGN_IN_FAILED = ('<p>Signing in with Hugging Face did not work just now. <a href="/">Back to '
                  "the page</a>: it works as before without signing in.</p>")
_SEAL = secrets.token_bytes(32)  # the MCP seal never leaves this process
_OWNER_KEY = operator_key(SETTINGS.owner_key, SETTINGS.runs_root)
_COOKIE_KEY = hmac.new(_OWNER_KEY, b"browser cookie", hashlib.sha256).digest()  # signs minted ones
_NAME = SECURE_COOKIE if SETTINGS.space_id else COOKIE


@dataclass(frozen=True)
class Visitor:
    """Who asks: their credentials (at most one of each kind) and their connection's address.

    The secret values live only in this object, for one request; everything stored or shown
    is `owner_key` of them."""

    address: str
    account: str | None = None
    browser: str | None = None
    token: str | None = None

    def credentials(self) -> list[str]:
        """Each credential as `kind:value`, strongest first (an account, a browser, a token)."""
        return [f"{kind}:{value}" for kind, value in (("account", self.account),
                                                      ("browser", self.browser),
                                                      ("token", self.token)) if value]

    def owner_keys(self) -> list[str]:
        """What a new run records as its owners (`Run.mark_owner`): every credential's key,
        strongest first (a token given explicitly owns the run beside the browser that sent
        it, so an agent resumes with its token from anywhere). None for a caller without a
        credential (no browser, account or token): its run is anyone's to open by its link,
        and no one's to resume."""
        return [owner_key(credential) for credential in self.credentials()]

    def keys(self) -> set[str]:
        """Every owner key this visitor holds: a run recorded under any of them is theirs."""
        return {owner_key(credential) for credential in self.credentials()}

    @property
    def owner(self) -> str | None:
        """The key a new run records: the strongest credential's; None without any."""
        credentials = self.credentials()
        return owner_key(credentials[0]) if credentials else None

    @property
    def share(self) -> str:
        """Whose caps this request counts against: the owner, or the address without one."""
        return self.owner or owner_key(f"address:{self.address}")


def owner_key(credential: str) -> str:
    """The opaque key stored for `credential` (`kind:value`): keyed, so it reveals nothing."""
    return hmac.new(_OWNER_KEY, credential.encode(), hashlib.sha256).hexdigest()[:32]


def visitor_of(request: Any, token: str = "") -> Visitor:
    """The visitor behind a starlette request or a `gr.Request`, with the `token` an API or MCP
    caller gave (blank: none)."""
    sealed = _sealed(request.headers)
    address, browser = sealed if sealed is not None else (_peer(request), _browser(request))
    return Visitor(address=address, account=_account(request), browser=browser,
                   token=token or None)


def _peer(request: Any) -> str:
    headers = request.headers
    # Every line of the header, in order: a proxy may add its own line after the client's.
    lines = (headers.getlist("x-forwarded-for") if hasattr(headers, "getlist") else
             [headers.get("x-forwarded-for", "")]) if SETTINGS.trust_proxy else []
    hops = [hop.strip() for line in lines for hop in line.split(",") if hop.strip()]
    if hops:
        return hops[-1]
    client = getattr(request, "client", None)
    return getattr(client, "host", None) or "unknown"


def _browser(request: Any) -> str | None:
    """The browser secret the request carries, if this server minted it and it came once
    (anything else is none)."""
    headers = request.headers
    lines = headers.getlist("cookie") if hasattr(headers, "getlist") else [headers.get("cookie")]
    values = [value.strip().strip('"') for line in lines if line
              for name, equals, value in (pair.strip().partition("=") for pair in line.split(";"))
              if equals and name == _NAME]
    return values[0] if len(values) == 1 and _minted(values[0]) else None


def _signature(secret: str) -> str:
    return hmac.new(_COOKIE_KEY, secret.encode(), hashlib.sha256).hexdigest()[:32]


def _minted(value: str) -> bool:
    """Whether `value` is a browser secret this server minted (its signature checks)."""
    secret, _, signature = value.partition(".")
    return MINTED.fullmatch(value) is not None and hmac.compare_digest(_signature(secret),
                                                                       signature)


def _account(request: Any) -> str | None:
    """The Hugging Face account signed in through gradio's OAuth session, if any."""
    scope = getattr(getattr(request, "request", request), "scope", None)
    return gradio_patches.signed_in_user(scope) if isinstance(scope, dict) else None


def _seal(address: str, browser: str | None) -> str:
    body = f"{address}|{browser or ''}"
    return body + "|" + hmac.new(_SEAL, body.encode(), hashlib.sha256).hexdigest()


def _sealed(headers: Any) -> tuple[str, str | None] | None:
    """(address, browser) sealed by `McpCaller` on this process's MCP hop, or None."""
    value = headers.get(MCP_CALLER)
    if not value or value.count("|") != 2:
        return None
    address, browser, signature = value.split("|")
    if not hmac.compare_digest(_seal(address, browser or None), value):
        return None
    return address, browser or None


def _cookie_header() -> str:
    attributes = f"Path=/; Max-Age={COOKIE_AGE_S}; HttpOnly"
    # On a Space the page lives in an iframe on huggingface.co: a third-party context, where a
    # cookie must be Secure, SameSite=None and (for browsers that partition them) Partitioned.
    attributes += "; Secure; SameSite=None; Partitioned" if SETTINGS.space_id else "; SameSite=Lax"
    secret = secrets.token_hex(16)
    return f"{_NAME}={secret}.{_signature(secret)}; {attributes}"


class BrowserCookie:
    """ASGI middleware: an answer to a client that sent no browser secret gives it one. The
    request itself stays without one (a client that keeps no cookies is never a browser).
    Never on the MCP routes: an MCP client keeps the cookie its `initialize` is given, so it
    would be a browser, whose key outranks its token, and a new session of the same agent
    (same token, no cookie) would not own what the first one started."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if (scope["type"] != "http" or MCP_PATH in scope["path"]
                or _browser(Request(scope)) is not None):
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: dict) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("set-cookie", _cookie_header())
            await send(message)

        await self.app(scope, receive, send_with_cookie)


class McpCaller:
    """ASGI middleware on gradio's MCP routes: the caller's real address and own cookie are
    sealed into `MCP_CALLER` (any such header the caller wrote is dropped first), so the
    loopback call gradio makes for it is this caller's and no one else's."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and MCP_PATH in scope["path"]:
            request = Request(scope)
            seal = _seal(_peer(request), _browser(request))
            headers = MutableHeaders(scope=scope)
            del headers[MCP_CALLER]
            headers.append(MCP_CALLER, seal)
        await self.app(scope, receive, send)


class SignInErrors:
    """ASGI middleware on gradio's sign-in routes (`/login/…`): a provider that is down, or a
    sign-in that fails, answers one line and a way back to the page, which works as before
    without signing in (gradio would answer a 500 and print a traceback)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/login/"):
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as error:  # noqa: BLE001 (any failure of the provider or the flow)
            if started:
                raise
            print(f"sign-in failed: {type(error).__name__}", file=sys.stderr)
            await HTMLResponse(SIGN_IN_FAILED, status_code=503)(scope, receive, send)
