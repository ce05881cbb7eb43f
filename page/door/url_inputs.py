"""An image given as an `https` URL (API and MCP callers), fetched without reaching inside.

Gradio's MCP guide has agents pass file inputs as URLs, and gradio fetches a FileData whose
path is a URL itself (`processing_utils.async_ssrf_protected_download`): through safehttpx,
which checks the host's address but reads the whole body into memory, with no size limit,
and asks Google's DNS when the local answer is private. So the queue refuses every URL gradio
would fetch (`join.install`), and this module fetches the https ones first, into the upload
folder, where they become files the caller sent:

- `https` only, at every hop; at most `MAX_REDIRECTS` redirects, each checked again;
- the host's every DNS answer must be a global unicast address, and so must any IPv4 address
  it wraps (`public`): one answer that is not (private, carrier-grade NAT, loopback,
  link-local, multicast, reserved, 6to4 of 127.0.0.1, ...) refuses the URL, so a name that
  resolves to both cannot be used to reach inside. An address written in the URL is checked
  the same way. The connection then goes to the checked address itself (safehttpx's
  `AsyncSecureTransport`: the TLS name and Host header stay the URL's), so a second DNS
  answer cannot swap it;
- the body as sent, never decoded: the request asks for `identity` and an answer with any
  other `Content-Encoding` is refused, since httpx inflates each chunk without an output
  limit (about 1.6 KB of brotli inflates to 1 GB, on the event loop);
- at most `max_bytes` (the page's upload limit), read as it streams, each piece handed to
  `arrived` as it comes (the caller counts it against the visitor's share), and `timeout_s`
  for the whole fetch, redirects included.

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
Arrived = Callable[[int], None]


class UrlRefused(ValueError):
    """The URL may not be fetched, or its answer not kept; the message says why, in a line."""


# Special-purpose blocks that are not globally reachable (IANA's registries) but that
# Python 3.11's `is_global` passes (its tables were brought up to date in 3.12.4): IETF
# protocol assignments, the deprecated 6to4 relay anycast, IPv6 site-local.
NOT_GLOBAL = tuple(ipaddress.ip_network(block) for block in ("192.0.0.0/24", "192.88.99.0/24",
                                                               "fec0::/10"))
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # an IPv4 address in its last 32 bits
COMPATIBLE = ipaddress.ip_network("::/96")  # IPv4-compatible IPv6 (deprecated): the same


def public(address: str) -> bool:
    """Whether `address` is a global unicast address, and so is any IPv4 address it wraps
    (IPv4-mapped, IPv4-compatible, 6to4, NAT64): `2002:7f00:1::` reaches 127.0.0.1."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        ip = ip.ipv4_mapped or ip.sixtofour or (
            ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in NAT64 or ip in COMPATIBLE
            else ip)
    return ip.is_global and not ip.is_multicast and not any(ip in block for block in NOT_GLOBAL)


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
                arrived: Arrived = lambda size: None, resolve: Resolver = system_resolver,
                transport: Transport = AsyncSecureTransport) -> Path:
    """Download `url` into a new file under `folder`; returns its path, or `UrlRefused`.
    `arrived(size)` is told each piece's size as it arrives; what it raises ends the fetch."""
    try:
        async with asyncio.timeout(timeout_s):
            return await _follow(url, folder, max_bytes, arrived, resolve, transport)
    except TimeoutError:
        raise UrlRefused(f"That URL did not answer within {timeout_s:g} s.") from None
    except httpx.HTTPError as error:
        raise UrlRefused(f"That URL could not be fetched ({type(error).__name__}).") \
            from None


async def _follow(url: str, folder: Path, max_bytes: int, arrived: Arrived,
                  resolve: Resolver, transport: Transport) -> Path:
    for _ in range(MAX_REDIRECTS + 1):
        target = httpx.URL(url)
        if target.scheme != "https" or not target.host:
            raise UrlRefused("Give a file as an upload or an https URL (not "
                             f"{target.scheme or 'a relative'} URL).")
        address = await checked_address(target.host, resolve)
        async with httpx.AsyncClient(transport=transport(address)) as client, \
                client.stream("GET", target, follow_redirects=False,
                              headers={"Accept-Encoding": "identity"}) as answer:
            if answer.is_redirect:
                url = urljoin(str(target), answer.headers.get("location", ""))
                continue
            if answer.status_code != 200:
                raise UrlRefused(f"That URL answered {answer.status_code}.")
            encoding = answer.headers.get("content-encoding", "identity").strip().lower()
            if encoding != "identity":
                raise UrlRefused(f"That URL answered compressed ({encoding[:40]}); this server "
                                 "takes an image as it is stored (no Content-Encoding).")
            return await _keep(answer, folder, max_bytes, arrived, Path(target.path).name)
    raise UrlRefused(f"That URL redirects more than {MAX_REDIRECTS} times.")


async def _keep(answer: httpx.Response, folder: Path, max_bytes: int, arrived: Arrived,
                name: str) -> Path:
    """The body as sent (never decoded) in a new file (ending in the URL's file name, made
    safe), refused (and deleted) past `max_bytes` or where `arrived` refuses a piece."""
    declared = answer.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise UrlRefused(_too_large(max_bytes))
    folder.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w.-]", "_", name)[-60:] or "image"
    with tempfile.NamedTemporaryFile(dir=folder, prefix="url-", suffix=f"-{name}",
                                     delete=False) as sink:
        path, received = Path(sink.name), 0
        try:
            async for chunk in answer.aiter_raw():
                received += len(chunk)
                if received > max_bytes:
                    raise UrlRefused(_too_large(max_bytes))
                arrived(len(chunk))
                sink.write(chunk)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
    return path


def _too_large(max_bytes: int) -> str:
    return f"The file at that URL is larger than {max_bytes / 1_000_000:g} MB, the upload limit."
