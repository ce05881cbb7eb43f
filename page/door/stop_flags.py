"""Every chain in flight has a stop flag, filed in one registry (`STOP_FLAGS`) under who may
stop it: a browser tab's chain under its tab (`access.claim`, one at a time), an API or MCP
chain under the token its caller gave it (`claim_token`), and only that token stops it.
"""

from __future__ import annotations

import hashlib
import threading

from page.door.guard import Refused

MIN_TOKEN = 16  # an API caller's stop token is a secret: a short one would be guessable


class StopFlags:
    """The stop flags of the chains in flight, filed under who may stop them (`tab_key`,
    `token_key`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flags: dict[str, set[threading.Event]] = {}

    def claim(self, who: str, alone: bool = False) -> threading.Event | None:
        """A new stop flag filed under `who`; None if `alone` and `who` has one already."""
        with self._lock:
            if alone and who in self._flags:
                return None
            flag = threading.Event()
            self._flags.setdefault(who, set()).add(flag)
        return flag

    def release(self, who: str, flag: threading.Event) -> None:
        with self._lock:
            flags = self._flags.get(who, set())
            flags.discard(flag)
            if not flags:
                self._flags.pop(who, None)

    def of(self, who: str) -> list[threading.Event]:
        """The stop flags of `who`'s chains in flight."""
        with self._lock:
            return list(self._flags.get(who, ()))


STOP_FLAGS = StopFlags()


def tab_key(tab: str) -> str:
    """Where a browser tab's chain files its stop flag (`access.tab_of` names the tab)."""
    return f"tab {tab}"


def token_key(token: str) -> str:
    """Where an API chain files its stop flag: its caller's token, digested."""
    return "token " + hashlib.sha256(token.encode()).hexdigest()


def claim_token(token: str) -> threading.Event:
    """The stop flag of an API chain, filed under its caller's `token` (if any) for
    `token_flags`: only whoever knows the token can stop the chain."""
    if not token:
        return threading.Event()
    if len(token) < MIN_TOKEN:
        raise Refused(f"A token is a secret of at least {MIN_TOKEN} characters.")
    return STOP_FLAGS.claim(token_key(token))


def release_token(token: str, flag: threading.Event) -> None:
    STOP_FLAGS.release(token_key(token), flag)


def token_flags(token: str) -> list[threading.Event]:
    """The stop flags of the chains in flight under `token`."""
    return STOP_FLAGS.of(token_key(token))
