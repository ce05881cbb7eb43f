"""An image given as an `https` URL (API and MCP callers), fetched without reaching inside.

Gradio's MCP guide has agents pass file inputs as URLs, and gradio fetches a FileData whose
path is a URL itself (`processing_utils.async_ssrf_protected_download`): through safehttpx,
which checks the host's address but reads the whole body into memory, with no size limit,
and asks Google's DNS when the local answer is private. So the queue refuses every URL gradio
would fetch (`join.install`), and this module fetches the https ones first, into the upload
folder, where they become files the caller sent:

- `https` only, at every hop; at most `MAX_REDIRECTS` redirects, each checked again;
- the host's every DNS answer must be a public address (`public`): one private, loopback,
  link-local, multicast, reserved or unspecified answer refuses the URL, so a name that
  resolves to both cannot be used to reach inside. An address written in the URL is checked
  the same way. The connection then goes to the checked address itself (safehttpx's
  `AsyncSecureTransport`: the TLS name and Host header stay the URL's), so a second DNS
  answer cannot swap it;
- at most `max_bytes` (the page's upload limit), read as it streams, and `timeout_s` for the
  whole fetch, redirects included.

The resolver and the transport are arguments, so a test can hand in a name that resolves to
a public address and a route to a local server (tests/test_url_inputs.py).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urljoin

import httpx
from safehttpx import AsyncSecureTransport

MAX_REDIRECTS = 5
TIMEOUT_S = 30.0

Resolver = Callable[[str], Awaitable[list[str]]]
Transport = Callable[[str], httpx.AsyncBaseTransport]


class UrlRefused(ValueError):
    """The URL may not be fetched, or its answer not kept; the message says why, in a line."""


def public(address: str) -> bool:
    """Whether `address` is a public unicast address (an IPv4-mapped IPv6 is its IPv4)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
                or ip.is_reserved or ip.is_unspecified)


async def system_resolver(host: str) -> list[str]:
    """Every address the system's resolver gives for `host` (an address: itself)."""
    answers = await asyncio.get_running_loop().getaddrinfo(host, None,
                                                           type=socket.SOCK_STREAM)
    return [answer[4][0] for answer in answers]


async def checked_address(host: str, resolve: Resolver) -> str:
    """The public address to connect to for `host`, or `UrlRefused`."""
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        try:
            addresses = await resolve(host)
        except OSError:
            raise UrlRefused(f"The host {host} of that URL does not resolve.") from None
    inside = [address for address in addresses if not public(address)]
    if not addresses or inside:
        raise UrlRefused(f"The URL's host {host} points to a private, loopback or "
                         "link-local address: this server fetches public https URLs only.")
    return addresses[0]


async def fetch(url: str, folder: Path, max_bytes: int, *, timeout_s: float = TIMEOUT_S,
                resolve: Resolver = system_resolver,
                transport: Transport = AsyncSecureTransport) -> Path:
    """Download `url` into a new file under `folder`; returns its path, or `UrlRefused`."""
    try:
        async with asyncio.timeout(timeout_s):
            return await _follow(url, folder, max_bytes, resolve, transport)
    except TimeoutError:
        raise UrlRefused(f"That URL did not answer within {timeout_s:g} s.") from None
    except httpx.HTTPError as error:
        raise UrlRefused(f"That URL could not be fetched ({type(error).__name__}).") \
            from None


async def _follow(url: str, folder: Path, max_bytes: int, resolve: Resolver,
                  transport: Transport) -> Path:
    for _ in range(MAX_REDIRECTS + 1):
        target = httpx.URL(url)
        if target.scheme != "https" or not target.host:
            raise UrlRefused("Give a file as an upload or an https URL (not "
                             f"{target.scheme or 'a relative'} URL).")
        address = await checked_address(target.host, resolve)
        async with httpx.AsyncClient(transport=transport(address)) as client, \
                client.stream("GET", target, follow_redirects=False) as answer:
            if answer.is_redirect:
                url = urljoin(str(target), answer.headers.get("location", ""))
                continue
            if answer.status_code != 200:
                raise UrlRefused(f"That URL answered {answer.status_code}.")
            return await _keep(answer, folder, max_bytes, Path(target.path).name)
    raise UrlRefused(f"That URL redirects more than {MAX_REDIRECTS} times.")


async def _keep(answer: httpx.Response, folder: Path, max_bytes: int, name: str) -> Path:
    """The body in a new file (ending in the URL's file name, made safe), refused (and
    deleted) past `max_bytes`."""
    declared = answer.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise UrlRefused(_too_large(max_bytes))
    folder.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w.-]", "_", name)[-60:] or "image"
    with tempfile.NamedTemporaryFile(dir=folder, prefix="url-", suffix=f"-{name}",
                                     delete=False) as sink:
        path, received = Path(sink.name), 0
        try:
            async for chunk in answer.aiter_bytes():
                received += len(chunk)
                if received > max_bytes:
                    raise UrlRefused(_too_large(max_bytes))
                sink.write(chunk)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
    return path


def _too_large(max_bytes: int) -> str:
    return f"The file at that URL is larger than {max_bytes / 1_000_000:g} MB, the upload limit."
