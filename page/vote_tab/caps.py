"""How often one voter, and one address, may vote: ceilings that a lecture hall of 200 people
behind one address never meets, and a script minting a new cookie for every vote does.

A voter is a browser or an account (`identity.Visitor`); the address only bounds how many
voters one machine may be at once, as it bounds chains (`guard.py`). Counted in memory over a
sliding hour: a restart forgets the counts, never a vote.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque

from page.door.guard import Refused

WINDOW_S = 3600.0
# One person comparing every checkpoint pair of every recording in a lesson casts a few dozen
# votes an hour; 300 leaves room for a keen one and stops a loop.
VOTES_PER_VOTER = 300
# A hall of 200 behind one address, each voter a browser, stays under 400 voters; each casting
# a few dozen votes stays under 10,000 votes.
VOTERS_PER_ADDRESS = 400
VOTES_PER_ADDRESS = 10_000


class VoteCaps:
    """Sliding-hour counts of votes per voter and per address, and the voters per address."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_voter: dict[str, deque[float]] = defaultdict(deque)
        self._by_address: dict[str, deque[tuple[float, str]]] = defaultdict(deque)

    def admit(self, voter: str, address: str, now: float | None = None) -> None:
        """Count one vote by `voter` from `address`, or `Refused` (one line) past a cap."""
        now = time.monotonic() if now is None else now
        with self._lock:
            mine, theirs = self._by_voter[voter], self._by_address[address]
            while mine and mine[0] < now - WINDOW_S:
                mine.popleft()
            while theirs and theirs[0][0] < now - WINDOW_S:
                theirs.popleft()
            if len(mine) >= VOTES_PER_VOTER:
                raise Refused(f"You have voted {VOTES_PER_VOTER} times in the last hour: "
                              "that is the most one voter may.")
            voters = {who for _, who in theirs}
            if len(theirs) >= VOTES_PER_ADDRESS or (
                    voter not in voters and len(voters) >= VOTERS_PER_ADDRESS):
                raise Refused("Too many votes from your network in the last hour; try later.")
            mine.append(now)
            theirs.append((now, voter))


CAPS = VoteCaps()
