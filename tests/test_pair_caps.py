"""A comparison is two chains wherever it is counted (page/door/join.py where it joins the
queue, page/door/guard.py where its chains start): against a visitor's cap and an address's
ceiling, at once, and never its own side A against side B. Two browsers at one address
(gradio_client, and raw HTTP on the queue to read a refusal), on the app as a public Space
runs it (`visitors.public_app`: 2 chains and 20 megapixel-steps per visitor) with a ceiling
of 2 chains per address."""

from __future__ import annotations

import json

import pytest
from gradio_client import Client, handle_file
from visitors import (
    TOKEN,
    busy_runs,
    file_data,
    join,
    noise,
    public_app,
    run_ids,
    upload,
    wait_for,
)

pytestmark = pytest.mark.app

ADDRESS = "10.0.21.1"
SIDES = (json.dumps({"seed": 0}), json.dumps({"seed": 1}))


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    with public_app(tmp_path_factory.mktemp("pairs") / "runs",
                    BANANA_CHAINS_PER_ADDRESS="2") as app:
        yield app


def browser(app: dict) -> Client:
    """A new browser (its own secret) at `ADDRESS`."""
    return Client(app["url"], verbose=False, headers={"X-Forwarded-For": ADDRESS})


def test_a_comparison_is_two_chains_at_once_everywhere(app, tmp_path) -> None:
    # 1024 x 768 x 100 steps is 79 megapixel-steps a side, past the visitor's 20: a visitor
    # with nothing running is admitted anyway, both sides at once.
    picture = handle_file(str(noise(tmp_path / "wide.png", 1024, 768)))
    first, second = browser(app), browser(app)
    pair = first.submit(picture, 100, *SIDES, "entropy", TOKEN, api_name="/compare_chains")
    wait_for(lambda: busy_runs(app["runs"]) == 2, what="both sides running")
    before = run_ids(app["runs"])
    small = file_data(upload(app, noise(tmp_path / "small.png", 32, 24), ADDRESS).json()[0])
    refused = join(app, "run_chain", [small, 1, "simulate", "entropy", 0, "", ""], ADDRESS,
                   browser=first)
    assert refused.status_code == 400 and "You have 2 chains queued or running" in refused.text
    refused = join(app, "compare_chains", [small, 1, *SIDES, "entropy", ""], ADDRESS,
                   browser=second)
    assert refused.status_code == 400 and \
        "2 chains are queued or running from your network" in refused.text
    assert run_ids(app["runs"]) == before  # neither started a chain
    first.predict(TOKEN, api_name="/stop")
    runs = json.loads(pair.result(timeout=300))["runs"]
    assert runs["A"]["status"] in ("stopped", "completed") and runs["B"] is not None
