"""Casting a vote, for the voting view and the API's `vote` alike: the run must be one the
voter can open (its link is enough), the two steps frames the run has, the choice "earlier" or
"later"; each refusal one clear line. The voter is recorded only as a keyed hash of their
strongest credential and the run (`identity.owner_key`), so their votes on two runs cannot be
joined, and nothing about them is shown to anyone.
"""

from __future__ import annotations

from typing import Any

from banana_space.chain.persist import push_run
from banana_space.store.run import Run
from banana_space.votes import PairTally, Vote
from banana_space.votes.ledger import DamagedVotes
from banana_space.votes.tally import CHOICES
from page.door.access import REFUSALS, Refusal, brought_back, refusal, whole_number
from page.door.guard import Refused
from page.door.identity import Visitor, owner_key
from page.vote_tab.caps import CAPS

NO_VOTER = ("A vote needs a browser that keeps cookies, signing in, or (for an agent) a token of "
            "16+ characters: otherwise it could not be counted once.")


def voter_key(visitor: Visitor, run: Run) -> str | None:
    """The key a vote on `run` records for `visitor`: their strongest credential's, keyed with
    the run's id; None for a caller with none."""
    credentials = visitor.credentials()
    return owner_key(f"vote:{run.id}:{credentials[0]}") if credentials else None


def openable(run_id: Any) -> tuple[Run, int]:
    """The run a vote names (brought back where a restart wiped it) and its last complete
    step, or a `Refusal`."""
    run = brought_back(run_id)
    try:
        return run, run.load().last_step
    except FileNotFoundError:
        raise Refusal("There is no such run here (its link may have expired).") from None
    except REFUSALS as error:
        raise refusal(error) from None


def cast(visitor: Visitor, run_id: Any, earlier: Any, later: Any, choice: Any
         ) -> tuple[Run, PairTally]:
    """Record `visitor`'s vote between steps `earlier` and `later` of a run; answer the run and
    that pair's tally after it. A second vote on a pair replaces the first."""
    run, last = openable(run_id)
    first, second = whole_number(earlier, "earlier"), whole_number(later, "later")
    for step in (first, second):
        if not (0 <= step <= last and run.has_frame(step)):
            raise Refusal(f"Run {run.id} has no frame at step {step} (it has steps 0 to "
                          f"{last}).")
    if first >= second:
        raise Refusal(f"earlier must be a step before later, not {first} and {second}.")
    if choice not in CHOICES:
        raise Refusal('choice must be "earlier" or "later".')
    voter = voter_key(visitor, run)
    if voter is None:
        raise Refusal(NO_VOTER)
    try:
        CAPS.admit(voter, visitor.address)
    except Refused as error:
        raise refusal(error) from None
    try:
        pairs = run.ledger().cast(Vote(voter, first, second, choice), run.verdict_file, last)
    except DamagedVotes as error:  # never appended to: its votes stay as they are
        raise refusal(error) from None
    if run.live_status("ended") != "running":  # a run being made is kept when it ends
        push_run(run.path)  # kept on the hub with the run, where the operator keeps runs
    return run, next(pair for pair in pairs if (pair.a, pair.b) == (first, second))
