"""Many visitors' chains on one server (issues 18 and 22): each visitor's chains are capped as
they join the queue and admitted by their cost, and cheap events still answer; four chains
run at once, never a fifth; a chain whose caller disconnects stops and says why; MCP callers
neither block nor stop each other; one visitor's flood of runs evicts only its own; one chain
per page session, stopped before its first frame. Through the channel each attack used (raw
HTTP on gradio's queue, gradio_client, the `mcp` client) on the app as a Space runs it
(`visitors.public_app`). Each test failed before its fix."""

from __future__ import annotations

import asyncio
import json
import secrets
import time

import httpx
import pytest
from app_server import RUN_DIR, STATUS, run_inputs
from gradio_client import Client
from raw_api import call, dependencies
from test_mcp import answer, data_url, session_call
from visitors import (
    TOKEN,
    busy_runs,
    chain_args,
    client,
    file_data,
    join,
    noise,
    public_app,
    run_args,
    run_ids,
    stop,
    stop_all,
    upload,
    wait_for,
    waiting,
)

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    with public_app(tmp_path_factory.mktemp("concurrency") / "runs") as app:
        yield app


def test_mcp_callers_neither_block_nor_stop_each_other(app, photo) -> None:
    url = f"{app['url']}gradio_api/mcp/"
    long_run = {"image": data_url(photo.resize((384, 288))), "steps": 100,
                "generator": "simulate", "metrics": "entropy", "seed": 0, "profile": "",
                "token": TOKEN}
    short_run = {**long_run, "image": data_url(photo.resize((64, 48))), "steps": 2, "token": ""}

    async def scenario() -> tuple:
        before = run_ids(app["runs"])
        first = asyncio.create_task(session_call(url, [("run_chain", long_run)]))
        deadline = time.monotonic() + 300
        while not busy_runs(app["runs"], run_ids(app["runs"]) - before):  # A's chain runs
            assert not first.done() and time.monotonic() < deadline, "A's chain never ran"
            await asyncio.sleep(0.2)
        _, (b_run, b_stop) = await session_call(url, [
            ("run_chain", short_run), ("stop_run", {"token": "another-callers-secret-1"})])
        assert not first.done(), "B's stop_run stopped A's chain"
        _, (a_stop,) = await session_call(url, [("stop_run", {"token": TOKEN})])
        _, (a_run,) = await asyncio.wait_for(first, 120)
        return b_run, b_stop, a_stop, a_run

    b_run, b_stop, a_stop, a_run = asyncio.run(scenario())
    assert answer(b_run)["status"] == "completed"  # never "already running for you"
    assert "Stopping" not in str(b_stop.content)
    assert "Stopping" in str(a_stop.content)
    stopped = answer(a_run)
    assert stopped["status"] == "stopped" and stopped["last_step"] < 100


def test_a_flood_of_chains_is_capped_per_visitor_and_cheap_events_still_answer(
        app, tmp_path) -> None:
    image = upload(app, noise(tmp_path / "flood.png", 128, 96), "10.0.3.1").json()[0]
    data = [file_data(image), 100, "simulate", "entropy", 0, "", TOKEN]
    joined = [join(app, "run_chain", data, "10.0.3.1") for _ in range(10)]
    accepted = [j for j in joined if j.status_code == 200]
    assert len(accepted) == 2, [j.text[:120] for j in joined]
    assert all("at most 2 per visitor" in j.text for j in joined if j.status_code != 200)
    # Other visitors (each with a token of its own: one token is one visitor) fill the places
    # left, then the chains' waiting room (3 here) is full...
    tokens = tuple(f"{TOKEN}-{n}" for n in range(2, 9))
    others = [join(app, "run_chain", [*data[:-1], token], f"10.0.3.{n}")
              for n, token in zip(range(2, 9), tokens, strict=True)]
    assert any("waiting already" in j.text for j in others)
    # ...and the page still loads, lists, opens and stops: never "Queue is full".
    wait_for(lambda: run_ids(app["runs"]), 300, "a run to open")  # a chain's, here or earlier
    some_run = sorted(run_ids(app["runs"]))[0]
    for name, args, query in [("on_load", [], f"?run={some_run}"), ("list_options", [], ""),
                              ("open_run", [some_run], ""), ("stop", [""], "")]:
        result = call(app["url"], app["index"][name], args, query=query, timeout=30)
        assert result.success, (name, result.error)
    stop_all(app, (TOKEN, *tokens))


def test_a_visitors_chains_are_admitted_by_their_cost(app, tmp_path) -> None:
    """Pixels x steps in flight per visitor (20 megapixel-steps here): one chain alone is
    always admitted, a second is not while the first one's cost is held."""
    who, before = "10.0.3.20", run_ids(app["runs"])
    first = client(app, who).submit(*chain_args(noise(tmp_path / "a.png", 640, 480), 100, TOKEN),
                                    api_name="/run_chain")
    # Its run is made once its cost is held (api._chain): an event, however slow the machine.
    wait_for(lambda: run_ids(app["runs"]) - before, 300, "the first chain's run")
    with pytest.raises(Exception, match="megapixel-steps"):
        client(app, who).predict(*chain_args(noise(tmp_path / "b.png", 64, 48), 2),
                                 api_name="/run_chain")
    stop(app, who)
    assert json.loads(first.result(timeout=120))["status"] == "stopped"
    small = client(app, who).predict(*chain_args(tmp_path / "b.png", 2), api_name="/run_chain")
    assert json.loads(small)["status"] == "completed"


@pytest.mark.parametrize("name", ["run_chain", "run"])
def test_a_chain_whose_caller_disconnects_stops_and_says_why(app, tmp_path, name) -> None:
    who = f"10.0.3.{30 if name == 'run' else 31}"
    image = upload(app, noise(tmp_path / "d.png", 512, 384), who).json()[0]
    data = ([file_data(image), 100, "simulate", "entropy", 0, "", ""] if name == "run_chain" else
            run_inputs(file_data(image), 100, metrics=["entropy"]))
    before, session = run_ids(app["runs"]), secrets.token_hex(6)
    assert join(app, name, data, who, session).status_code == 200
    with httpx.Client(timeout=60) as http, http.stream(
            "GET", f"{app['url']}gradio_api/queue/data", params={"session_hash": session}) as sse:
        for _line in sse.iter_lines():  # read until the run exists, then hang up
            if run_ids(app["runs"]) - before:
                break
    run = app["runs"] / (run_ids(app["runs"]) - before).pop()

    def ended() -> bool:
        return json.loads((run / "run.json").read_text())["status"] != "running"

    wait_for(ended, 300, "the disconnected chain's end")  # a failure bound
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "stopped" and meta["last_step"] < 100
    assert meta["reason"] == "interrupted: the visitor disconnected"


def test_one_visitors_flood_of_runs_evicts_only_its_own(app, tmp_path) -> None:
    image = noise(tmp_path / "tiny.png", 8, 8)
    victims = json.loads(client(app, "10.0.4.1").predict(*chain_args(image, 1),
                                                         api_name="/run_chain"))["run"]
    attacker = client(app, "10.0.4.2")
    made = [json.loads(attacker.predict(*chain_args(image, 1), api_name="/run_chain"))["run"]
            for _ in range(9)]  # more than BANANA_KEEP_RUNS (8)
    assert victims in run_ids(app["runs"])
    assert run_ids(app["runs"]) & set(made) == set(made[-2:])  # the attacker's share: 2


def test_four_chains_run_at_once_before_anyone_presses_run(app, tmp_path) -> None:
    image = noise(tmp_path / "c.png", 256, 192)
    stop_all(app)  # no chain of an earlier test runs or waits: the four places are free
    earlier = run_ids(app["runs"])
    jobs = [client(app, f"10.0.8.{n}").submit(*chain_args(image, 100, TOKEN),
                                              api_name="/run_chain") for n in range(6)]
    seen = {"most": 0}

    def all_six_counted() -> bool:
        """Each chain writes its run or waits in the queue (an event, however slow the
        machine): then the places that are taken are as many as gradio gives."""
        mine = run_ids(app["runs"]) - earlier
        busy = busy_runs(app["runs"], mine)
        seen["most"] = max(seen["most"], busy)
        seen["running"], seen["waiting"] = len(mine), waiting(app)
        return busy == len(mine) and len(mine) + seen["waiting"] == len(jobs)

    wait_for(all_six_counted, 600, "six chains running or waiting")
    stop_all(app)
    for job in jobs:
        job.result(timeout=120)
    assert (seen["running"], seen["waiting"]) == (4, 2), seen
    assert seen["most"] == 4, seen


def test_one_chain_per_visitor_and_stop_before_frame_0(app, photo_path) -> None:
    client = Client(app["url"], verbose=False)
    job = client.submit(*run_args(photo_path, 60), api_name="/run")
    while job.status().code.name not in ("PROCESSING", "ITERATING"):
        assert not job.done()
        time.sleep(0.05)
    # Stop at once: before the first frame has been shown (the metrics may still be loading).
    assert "Stopping" in client.predict(api_name="/stop")
    with pytest.raises(Exception, match="already running"):
        client.predict(*run_args(photo_path, 2), api_name="/run")
    final = job.result(timeout=120)
    assert "Stopped" in final[STATUS]
    made = len(list((app["runs"] / final[RUN_DIR] / "frames").glob("*.png")))
    assert made < 10
    # Stop with nothing running leaves the finished run's status alone.
    index = dependencies(app["url"])["stop"]
    answer = call(app["url"], index, [""], session=client.session_hash)
    assert answer.success and not isinstance(answer.data[0], str)
