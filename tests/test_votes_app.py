"""The room votes through the real app: twelve browsers behind one lecture hall's address vote
on a run's pair (1, 5) through the `vote` endpoint, ten for step 1 and one of them twice;
`banana-space votes --json` then counts 12 votes, 10 for step 1, with the Wilson interval of
10/12, and so it still does after the server restarts (the same operator key: the repeated
voter is still one voter). Bad votes get one line each; nothing about a voter is written."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys

import pytest
from app_server import running_app
from gradio_client import Client

from banana_space.chain.runs import RunSpec, start_run
from banana_space.store.run import Run
from banana_space.votes import wilson
from page.door.identity import COOKIE

pytestmark = pytest.mark.app

OWNER_KEY = "the-operators-key-" + secrets.token_hex(16)
HALL = "10.42.0.7"
SPACE = {"BANANA_TRUST_PROXY": "1", "BANANA_OWNER_KEY": OWNER_KEY, "BANANA_REAL_CHAINS": "off"}


def browser(url: str, cookies: dict[str, str] | None = None) -> Client:
    kwargs: dict = {"timeout": 300, **({"cookies": dict(cookies)} if cookies else {})}
    return Client(url, verbose=False, headers={"X-Forwarded-For": HALL}, httpx_kwargs=kwargs)


def votes_json(run: Run) -> dict:
    return json.loads(subprocess.run(
        [sys.executable, "-m", "banana_space", "votes", str(run.path), "--json"], check=True,
        capture_output=True, text=True).stdout)


def test_twelve_browsers_vote_once_each_and_a_restart_keeps_the_count(photo, tmp_path) -> None:
    runs = tmp_path / "runs"
    list(start_run(RunSpec(photo.resize((96, 64)), 6, metrics=["entropy"]), runs,
                   run_id="lecture"))
    run = Run(runs / "lecture")
    low, high = wilson(10, 12)
    expected = {"pairs": [{"a": 1, "b": 5, "n": 12, "prefer_a": 10, "low": round(low, 4),
                           "high": round(high, 4)}]}
    with running_app(runs, **SPACE) as url:
        hall = [browser(url) for _ in range(12)]
        assert len({b.cookies[COOKIE] for b in hall}) == 12  # twelve browsers, one address
        for index, voter in enumerate(hall):
            answer = json.loads(voter.predict("lecture", 1, 5, "earlier" if index < 10
                                              else "later", api_name="/vote"))
            assert answer["pair"]["n"] == index + 1
        again = json.loads(hall[3].predict("lecture", 1, 5, "earlier", api_name="/vote"))
        assert again["pair"] == expected["pairs"][0]  # a second vote replaces the first
        for args, words in [(("nowhere", 1, 5, "earlier"), "No run called"),
                            (("lecture", 1, 9, "earlier"), "no frame at step 9"),
                            (("lecture", 5, 5, "earlier"), "earlier must be a step before"),
                            (("lecture", 5, 1, "later"), "earlier must be a step before"),
                            (("lecture", 1, 5, "left"), 'choice must be "earlier" or "later"')]:
            with pytest.raises(Exception, match=words) as refused:
                hall[0].predict(*args, api_name="/vote")
            assert "\n" not in str(refused.value).strip()
        opened = json.loads(hall[0].predict("lecture", api_name="/open_run"))
        assert opened["verdict"]["people"]["detects"] == "yes"
        kept = dict(hall[3].cookies)
    assert votes_json(run) == expected
    written = run.votes_file.read_text() + run.verdict_file.read_text()
    assert HALL not in written and not any(b.cookies[COOKIE] in written for b in hall)
    with running_app(runs, **SPACE) as url:  # the server restarts, with the same operator key
        assert votes_json(run) == expected
        same = browser(url, kept)
        after = json.loads(same.predict("lecture", 1, 5, "earlier", api_name="/vote"))
        assert after["pair"] == expected["pairs"][0]  # still one voter
    assert votes_json(run) == expected
