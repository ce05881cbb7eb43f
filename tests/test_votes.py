"""The room's votes in the engine: the Wilson interval against published values, the tally
(one voter, one vote per pair: the last), the people row by the paper's test, and the ledger on
disk (append-only, verdict.csv's people row, the zip, a run's files kept on the hub)."""

from __future__ import annotations

import csv
import math
import zipfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from banana_space.chain.runs import RunSpec, start_run
from banana_space.store.run import KEPT_FILE, Run
from banana_space.store.rundir import write_zip
from banana_space.verdict.analysis import Verdict
from banana_space.votes import MIN_VOTES, Ledger, PairTally, Vote, people_row, tally, wilson


@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    # Newcombe, "Two-sided confidence intervals for the single proportion", Stat. Med.
    # 17:857 (1998), table I, method 3 (the Wilson score interval without correction).
    (81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718)])
def test_the_wilson_interval_is_newcombes(successes: int, n: int, low: float,
                                          high: float) -> None:
    assert wilson(successes, n) == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_no_votes_have_no_interval() -> None:
    assert all(math.isnan(bound) for bound in wilson(0, 0))


def votes_for(pair: tuple[int, int], earlier: int, later: int, start: int = 0) -> list[Vote]:
    """`earlier` voters for the pair's earlier step, then `later` for its later one."""
    return [Vote(f"v{start + i}", *pair, "earlier" if i < earlier else "later")
            for i in range(earlier + later)]


def test_a_second_vote_replaces_the_first() -> None:
    # v9 voted for the later step, then again so, then changed their mind.
    votes = [*votes_for((1, 5), 9, 3), Vote("v9", 1, 5, "later"), Vote("v9", 1, 5, "earlier")]
    assert tally(votes) == [PairTally(1, 5, 12, 10)]
    changed = [*votes_for((1, 5), 10, 2), Vote("v0", 1, 5, "later")]
    assert tally(changed) == [PairTally(1, 5, 12, 9)]


def test_each_pair_is_counted_apart() -> None:
    votes = [*votes_for((1, 5), 2, 1), *votes_for((1, 10), 0, 4), *votes_for((5, 10), 1, 0)]
    assert tally(votes) == [PairTally(1, 5, 3, 2), PairTally(1, 10, 4, 0), PairTally(5, 10, 1, 1)]


@pytest.mark.parametrize(("pair", "choice", "words"), [
    ((5, 5), "earlier", "earlier step with a later"),
    ((5, 1), "later", "earlier step with a later"),
    ((1, 5), "left", '"earlier" or "later"')])
def test_bad_votes_say_why(pair: tuple[int, int], choice: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        Vote("v", *pair, choice)  # type: ignore[arg-type]


def test_the_people_row_detects_where_most_preferred_step_1_at_every_checkpoint() -> None:
    pairs = tally([*votes_for((1, 5), 10, 2), *votes_for((1, 10), 9, 3)])
    row = people_row(pairs, last_step=10)
    assert row.metric == "people" and row.checkpoints_used == (5, 10)
    assert row.delta_at(5) == pytest.approx(-8 / 12) and row.delta_at(10) == pytest.approx(-6 / 12)
    assert math.isnan(row.delta_at(20))
    assert row.detects is True
    # 10/12's interval lies above one half (0.552), 9/12's does not (0.468): not robust.
    assert wilson(9, 12)[0] < 0.5 < wilson(10, 12)[0]
    assert row.detects_robust is False


def test_the_people_row_is_fooled_where_most_preferred_the_later_copy() -> None:
    row = people_row(tally(votes_for((1, 5), 3, 9)), last_step=5)
    assert row.detects is False and row.delta_at(5) == pytest.approx(0.5)


def test_too_few_votes_say_how_many() -> None:
    row = people_row(tally(votes_for((1, 5), MIN_VOTES - 2, 1)), last_step=6)
    assert row.detects is None
    assert row.undecided_because == f"not enough votes yet ({MIN_VOTES - 1} at step 5)"
    assert people_row(tally(votes_for((5, 6), 4, 4)), last_step=6) is None  # no (1, k) pair


def test_the_people_row_in_the_files_says_its_verdict() -> None:
    from banana_space.verdict.columns import VERDICT_FIELDS, file_cells

    cells = dict(zip(VERDICT_FIELDS, file_cells(people_row(tally(votes_for((1, 5), 12, 0)), 5)),
                     strict=True))
    assert cells["metric"] == "people" and cells["detects"] == Verdict(True).words.plain
    assert cells["detects_robust"] == "yes" and cells["delta_5"] == -1.0


@pytest.fixture()
def run(photo, tmp_path) -> Run:
    """A finished 6-step simulated run (checkpoint 5 decides)."""
    list(start_run(RunSpec(photo.resize((96, 64)), 6, metrics=["entropy"]), tmp_path,
                   run_id="voted"))
    return Run(tmp_path / "voted")


def verdict_rows(run: Run) -> dict[str, dict[str, str]]:
    with run.verdict_file.open(newline="") as handle:
        return {row["metric"]: row for row in csv.DictReader(handle)}


def test_votes_are_appended_and_verdict_csv_gets_the_people_row(run: Run) -> None:
    ledger = Ledger(run.votes_file, run.votes_lock)
    before = verdict_rows(run)
    for vote in [*votes_for((1, 5), 10, 2), Vote("v3", 1, 5, "earlier")]:
        lines = run.votes_file.read_bytes() if run.votes_file.exists() else b""
        ledger.cast(vote, run.verdict_file, last_step=6)
        assert run.votes_file.read_bytes().startswith(lines)  # only ever appended to
    assert len(ledger.votes()) == 13 and ledger.pairs() == [PairTally(1, 5, 12, 10)]
    after = verdict_rows(run)
    assert {k: v for k, v in after.items() if k != "people"} == before  # the rest as it was
    assert after["people"]["detects"] == "yes" and after["people"]["checkpoints_used"] == "5"
    assert "voter" not in after["people"] and "v3" not in run.verdict_file.read_text()


def test_votes_at_once_all_land(run: Run) -> None:
    ledger = Ledger(run.votes_file, run.votes_lock)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda vote: ledger.cast(vote, run.verdict_file, 6),
                      votes_for((1, 5), 20, 20)))
    assert ledger.pairs() == [PairTally(1, 5, 40, 20)]


def test_the_zip_and_the_hub_keep_the_votes(run: Run) -> None:
    Ledger(run.votes_file, run.votes_lock).cast(Vote("v", 1, 5, "earlier"), run.verdict_file, 6)
    assert KEPT_FILE.fullmatch(run.votes_file.name)
    with zipfile.ZipFile(write_zip(run.path)) as archive:
        names = archive.namelist()
        assert f"voted/{run.votes_file.name}" in names
        assert not any(".votes" in name for name in names)  # the lock stays behind
        assert "votes.csv" in archive.read("voted/README.txt").decode()
        assert "people (1 vote;" in archive.read("voted/plot.html").decode()  # the line


def test_a_resumed_or_rescored_run_keeps_the_people_row(run: Run) -> None:
    from banana_space.store.rundir import rewrite_verdict

    ledger = Ledger(run.votes_file, run.votes_lock)
    for vote in votes_for((1, 5), 11, 1):
        ledger.cast(vote, run.verdict_file, 6)
    rewrite_verdict(run.path)
    assert verdict_rows(run)["people"]["detects"] == "yes"


def test_the_command_prints_each_pair_with_its_interval(run: Run) -> None:
    import json
    import subprocess
    import sys

    ledger = Ledger(run.votes_file, run.votes_lock)
    for vote in [*votes_for((1, 5), 10, 2), Vote("v11", 1, 5, "later")]:
        ledger.cast(vote, run.verdict_file, 6)
    command = [sys.executable, "-m", "banana_space", "votes", str(run.path)]
    answer = json.loads(subprocess.run([*command, "--json"], check=True, capture_output=True,
                                       text=True).stdout)
    low, high = wilson(10, 12)
    assert answer == {"pairs": [{"a": 1, "b": 5, "n": 12, "prefer_a": 10,
                                 "low": round(low, 4), "high": round(high, 4)}]}
    text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    assert text.startswith("step 1 vs 5: 10 of 12 preferred step 1 (83%, 95% CI 55%–95%)")
    missing = subprocess.run([*command[:-1], str(run.path.parent / "nothing")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1


def test_the_page_shows_the_people_line_row_and_headline(run: Run) -> None:
    from banana_space.verdict.columns import VERDICT_HEADERS
    from banana_space.view import RunView

    ledger = Ledger(run.votes_file, run.votes_lock)
    screen = RunView.from_saved(run.load()).screen()
    assert not any(row[0].startswith("people") for row in screen.verdict)  # nobody voted yet
    assert not any(t["name"].startswith("people") for t in screen.figure["data"])
    for vote in votes_for((1, 5), 10, 2):
        ledger.cast(vote, run.verdict_file, 6)
    screen = RunView.from_saved(run.load()).screen()
    people = next(row for row in screen.verdict if row[0].startswith("people"))
    assert people[VERDICT_HEADERS.index("verdict")].startswith("✅ detects")
    line = next(t for t in screen.figure["data"] if t["name"].startswith("people"))
    assert line["x"] == [1, 5] and line["y"] == [0.0, pytest.approx(0.5 - 10 / 12)]  # down
    low, high = wilson(10, 12)
    assert line["error_y"]["array"][1] == pytest.approx(10 / 12 - low)
    assert line["error_y"]["arrayminus"][1] == pytest.approx(high - 10 / 12)
    assert "the people in the room detect" in screen.summary


def test_a_lecture_hall_never_meets_the_caps_but_a_cookie_minting_script_does() -> None:
    from page.door.guard import Refused
    from page.vote_tab.caps import VOTERS_PER_ADDRESS, VOTES_PER_VOTER, VoteCaps

    caps = VoteCaps()
    for person in range(200):  # a hall of 200 behind one address, four pairs each
        for _ in range(4):
            caps.admit(f"person-{person}", "hall", now=0.0)
    script = VoteCaps()
    with pytest.raises(Refused, match="your network"):
        for cookie in range(VOTERS_PER_ADDRESS + 1):
            script.admit(f"minted-{cookie}", "script", now=float(cookie))
    with pytest.raises(Refused, match="voted"):
        for vote in range(VOTES_PER_VOTER + 1):
            script.admit("one-browser", "elsewhere", now=float(vote))
    script.admit("one-browser", "elsewhere", now=4000.0)  # an hour later the window has moved


def test_a_voter_sees_step_1_against_each_checkpoint_first_on_a_random_side() -> None:
    import random

    from page.vote_tab.pairs import PairOnScreen, nth_pair

    made = list(range(21))
    rng = random.Random(0)
    firsts = [nth_pair(made, index, rng) for index in range(3)]
    assert [(s.earlier, s.later) for s in firsts] == [(1, 5), (1, 10), (1, 20)]
    sides = {nth_pair(made, 0, rng).earlier_left for _ in range(40)}
    assert sides == {True, False}
    later = nth_pair(made, 3, rng)
    assert later.earlier < later.later and later.index == 3
    assert PairOnScreen.read(later.text) == later and PairOnScreen.read("1,5,X,0") is None
    assert (nth_pair([0, 1, 2, 3], 0, rng).earlier, nth_pair([0, 1, 2, 3], 0, rng).later) == (1, 3)
    assert nth_pair([0], 0, rng) is None
    shown = PairOnScreen(1, 5, earlier_left=False, index=0)
    assert shown.steps() == (5, 1) and shown.choice(left=True) == "later"


def test_the_table_reads_a_run_directorys_votes_into_its_people_row(run: Run, tmp_path) -> None:
    from banana_space.cli import main as cli

    ledger = Ledger(run.votes_file, run.votes_lock)
    for vote in votes_for((1, 5), 11, 1):
        ledger.cast(vote, run.verdict_file, 6)
    out = tmp_path / "table"
    assert cli(["table", str(run.path.parent), "--metrics", "entropy", "--out", str(out),
                "--workers", "1"]) == 0
    with (out / "verdicts.csv").open(newline="") as handle:
        rows = {row["metric"]: row for row in csv.DictReader(handle)}
    assert rows["people"]["chain"].endswith("voted")
    assert {k: v for k, v in rows["people"].items() if k != "chain"} == verdict_rows(run)["people"]


def test_a_damaged_ledger_is_never_appended_to_and_never_stops_a_run(run: Run) -> None:
    from banana_space.store.rundir import rewrite_verdict
    from banana_space.votes.ledger import DamagedVotes

    run.votes_file.write_text("at,voter,earlier,later,choice\nyesterday,v,one,5,earlier\n")
    damaged = run.votes_file.read_bytes()
    with pytest.raises(DamagedVotes, match="votes.csv is damaged"):
        Ledger(run.votes_file, run.votes_lock).cast(Vote("v", 1, 5, "later"), run.verdict_file, 6)
    assert run.votes_file.read_bytes() == damaged
    rewrite_verdict(run.path)  # the run's own verdict is written, without a people row
    assert "people" not in verdict_rows(run)


def test_a_pair_is_shown_at_one_size(run: Run) -> None:
    from PIL import Image

    from page.vote_tab.pairs import PairOnScreen
    from page.vote_tab.tab import _pictures

    with Image.open(run.frame_path(5)) as frame:
        frame.resize((48, 32)).save(run.frame_path(5))  # as a thumbnail kept alone would be
    left, right = _pictures(run, PairOnScreen(1, 5, earlier_left=True, index=0))
    assert left.size == right.size == (48, 32)
