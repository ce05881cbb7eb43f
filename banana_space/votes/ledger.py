"""A run's votes on disk: votes.csv, one line per vote, only ever appended to.

Each vote is written by reading the file, adding one line and writing the whole file to a
temporary name that is renamed into place (`files.write_atomic`), under a lock on the run's
votes lock file, so a server killed at any instant leaves the ledger as it was before or after
that vote, never a torn line, and two votes at once both land. A voter is recorded only as the
key the page gives it (a keyed hash under the operator's owner key, never an address or a
cookie); the tally (`tally.tally`) counts each voter's last vote on a pair.

After each vote, verdict.csv's people row is written again under the same lock; `RunDir` takes
that lock too while it writes verdict.csv with the people row, so neither overwrites the other's
newer row.
"""

from __future__ import annotations

import csv
import fcntl
import io
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..files import csv_bytes, write_atomic
from ..verdict.columns import VERDICT_FIELDS, file_cells
from ..verdict.history import VerdictRow
from .tally import PEOPLE, PairTally, Vote, people_row, tally

FIELDS = ["at", "voter", "earlier", "later", "choice"]


class DamagedVotes(ValueError):
    """A run's votes.csv cannot be read: one line saying where."""


class Ledger:
    """The votes of one run: its votes.csv and the lock file that orders writers."""

    def __init__(self, file: Path, lock_file: Path) -> None:
        self.file, self.lock_file = Path(file), Path(lock_file)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the votes' lock (blocking: a vote takes a millisecond or two)."""
        descriptor = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def votes(self) -> list[Vote]:
        """Every vote, in the order cast; none where nobody voted.

        Raises:
            DamagedVotes: a line that is not a vote.
        """
        if not self.file.is_file():
            return []
        with self.file.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        try:
            return [Vote(row["voter"], int(row["earlier"]), int(row["later"]), row["choice"],
                         row["at"]) for row in rows]
        except (KeyError, TypeError, ValueError) as error:
            raise DamagedVotes(f"{self.file.name} is damaged: {error}") from None

    def pairs(self) -> list[PairTally]:
        """The tally of every pair voted on (`tally.tally`)."""
        return tally(self.votes())

    def cast(self, vote: Vote, verdict_file: Path, last_step: int) -> list[PairTally]:
        """Append `vote` and write verdict.csv's people row again (for a run of `last_step`
        steps); answer the tally after it.

        Raises:
            DamagedVotes: votes.csv cannot be read; nothing is appended to it.
        """
        if not vote.at:
            vote = Vote(vote.voter, vote.earlier, vote.later, vote.choice,
                        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        header, line = csv_bytes(FIELDS, [[vote.at, vote.voter, vote.earlier, vote.later,
                                           vote.choice]]).split(b"\n", 1)
        with self.locked():
            cast = [*self.votes(), vote]  # a damaged ledger is refused before it is written
            kept = self.file.read_bytes() if self.file.is_file() else header + b"\n"
            write_atomic(self.file, kept + line)
            pairs = tally(cast)
            _rewrite_people(verdict_file, people_row(pairs, last_step))
        return pairs

    def with_people(self, rows: Sequence[VerdictRow], last_step: int) -> list[VerdictRow]:
        """`rows` (the metrics' verdict) and the people row, where anyone voted on a pair
        (1, k); the caller holds `locked` when it writes them. Damaged votes leave the row out:
        a run's own scores never wait on them."""
        try:
            people = people_row(self.pairs(), last_step)
        except DamagedVotes:
            return list(rows)
        return [*rows, *([people] if people is not None else [])]


def _rewrite_people(verdict_file: Path, people: VerdictRow | None) -> None:
    """verdict.csv with its people row replaced by `people`, every other line as it was; a
    run with no verdict.csv yet gets none (its writer adds the row with the first scores)."""
    if not verdict_file.is_file():
        return
    with verdict_file.open(newline="") as handle:
        rows = [row for row in csv.reader(handle) if row and row[0] != PEOPLE]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    added = csv_bytes(list(VERDICT_FIELDS), [file_cells(people)]).split(b"\n", 1)[1] if (
        people is not None) else b""
    write_atomic(verdict_file, buffer.getvalue().encode() + added)
