"""Visitors are people, not addresses (issue 42; issue 41, item 3): a run belongs to the
browser (its secret, an HttpOnly cookie) or the account that made it, across a restart; many
browsers behind one address each get their own chain; an MCP caller is who its own connection
says, never who the headers it forwards say.

Each through the channel a visitor uses: gradio_client (which keeps the cookie the app gives
it, as a browser does), raw HTTP on gradio's queue, the `mcp` client; the app as a Space runs
it (BANANA_TRUST_PROXY=1: the proxy's X-Forwarded-For is the address) except where the MCP hop
is tested, which is the local default (no proxy trusted). Each test failed before its fix."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from app_server import STATUS, running_app
from gradio_client import Client, handle_file
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from raw_api import call, dependencies
from visitors import browser_cookie, file_data, noise, run_args, wait_for

from banana_space.store.run import Run, RunBusy
from page.door.identity import COOKIE

pytestmark = pytest.mark.app

OWNER_KEY = "the-operators-key-" + secrets.token_hex(16)  # a Space secret
HALL = "10.42.0.1"  # one lecture hall's address, as the Space's proxy reports it
SPACE = {"BANANA_TRUST_PROXY": "1", "BANANA_OWNER_KEY": OWNER_KEY, "BANANA_REAL_CHAINS": "off",
         "GRADIO_HEARTBEAT_INTERVAL": "1"}
TOKEN = "an-mcp-callers-token-" + secrets.token_hex(8)
VICTIM = "127.0.0.5"  # a visitor on this machine's loopback, not 127.0.0.1


def browser(url: str, cookies: dict[str, str] | None = None) -> Client:
    """A browser in the hall: a fresh one gets its secret from the app, an old one brings it."""
    # A failure bound on each request, not a guess of the speed: 30 of them share 2 cores.
    kwargs: dict = {"timeout": 300, **({"cookies": dict(cookies)} if cookies else {})}
    return Client(url, verbose=False, headers={"X-Forwarded-For": HALL}, httpx_kwargs=kwargs)


def past_runs(url: str, who: Client) -> str:
    """What `who`'s Past runs lists, as its page asks for it."""
    answer = call(url, dependencies(url)["past_runs"], [],
                  headers={**browser_cookie(who), "X-Forwarded-For": HALL})
    assert answer.success, answer.error
    return json.dumps(answer.data)


def data_url(path: Path) -> str:
    """A file as MCP clients send one."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


def run_id_of(job) -> str:
    """The run id a streaming /run job shows, once it shows one."""
    wait_for(lambda: any(update[7] for update in job.outputs()) or job.done(),
             what="the run's first screen")
    return next(update[7] for update in job.outputs() if update[7])


def writing(run: Path) -> bool:
    try:
        os.close(Run(run).lock())
    except RunBusy:
        return True
    return False


def test_two_browsers_behind_one_address_own_their_own_runs_across_a_restart(tmp_path) -> None:
    runs = tmp_path / "runs"
    photo = noise(tmp_path / "in.png", 96, 64)
    with running_app(runs, **SPACE) as url:
        a, b = browser(url), browser(url)
        assert a.cookies[COOKIE] != b.cookies[COOKIE]  # two browsers, one address
        job = a.submit(*run_args(photo, 60), api_name="/run")
        run_id = run_id_of(job)
        wait_for(lambda: (runs / run_id / "frames" / "step_002.png").is_file(),
                 what="a few frames")
        assert run_id in past_runs(url, a)
        assert run_id not in past_runs(url, b)
        # B's Stop, from its page or with a token of its own, stops only B's chains.
        b.predict("", api_name="/stop")
        b.predict("b-guesses-a-token-" + secrets.token_hex(4), api_name="/stop")
        assert writing(runs / run_id) and json.loads(
            b.predict(run_id, api_name="/open_run"))["status"] == "running"
        a.predict("", api_name="/stop")
        assert "Stopped" in job.result(timeout=300)[STATUS]
        for resume in (lambda: b.predict(run_id, "", "", api_name="/resume_chain"),
                       lambda: b.predict(run_id, "", False, api_name="/resume")):
            with pytest.raises(Exception, match="Only the visitor who started this run"):
                resume()
        kept = {"a": dict(a.cookies), "b": dict(b.cookies)}
    with running_app(runs, **SPACE) as url:  # the server restarts, with the same operator key
        a, b = browser(url, kept["a"]), browser(url, kept["b"])
        assert run_id in past_runs(url, a)
        assert run_id not in past_runs(url, b)
        with pytest.raises(Exception, match="Only the visitor who started this run"):
            b.predict(run_id, "", "", api_name="/resume_chain")
        resumed = a.predict(run_id, "", False, api_name="/resume")
        assert "Completed" in resumed[STATUS], resumed[STATUS]


def test_a_forged_browser_secret_owns_nothing(tmp_path) -> None:
    runs = tmp_path / "runs"
    photo = noise(tmp_path / "in.png", 64, 48)
    with running_app(runs, **SPACE) as url:
        owner = browser(url)
        made = json.loads(owner.predict(handle_file(str(photo)), 1, "simulate", "entropy", 0, "",
                                        "", api_name="/run_chain"))
        guessed = browser(url, {COOKIE: secrets.token_hex(16)})
        assert made["run"] not in past_runs(url, guessed)
        assert made["run"] in past_runs(url, owner)
        assert COOKIE not in (runs / made["run"] / "run.json").read_text()
        assert owner.cookies[COOKIE] not in "".join(
            p.read_text(errors="replace") for p in (runs / made["run"]).rglob("*")
            if p.is_file() and p.suffix in {".json", ".csv", ""})


def raw_run(url: str, photo: Path, headers: dict[str, str]) -> str:
    """A one-step chain through the documented /run_chain, sent with `headers`; its run id."""
    with photo.open("rb") as handle:
        uploaded = httpx.post(f"{url}gradio_api/upload", files={"files": handle},
                              headers=headers, timeout=60).json()[0]
    answer = call(url, dependencies(url)["run_chain"],
                  [file_data(uploaded), 1, "simulate", "entropy", 0, "", ""], headers=headers)
    assert answer.success, answer.error
    return json.loads(answer.data[0])["run"]


def owned_by(url: str, headers: dict[str, str]) -> str:
    """What Past runs lists for a request sent with `headers`."""
    answer = call(url, dependencies(url)["past_runs"], [], headers=headers)
    assert answer.success, answer.error
    return json.dumps(answer.data)


def test_a_browser_secret_this_server_did_not_mint_or_sent_twice_owns_nothing(tmp_path) -> None:
    """Cookie fixation: a secret someone chose and planted in a browser (any well-formed value)
    owns nothing, and the page replaces it with a minted one; a request carrying the cookie
    twice is no one's."""
    runs = tmp_path / "runs"
    photo = noise(tmp_path / "in.png", 64, 48)
    with running_app(runs, **SPACE) as url:
        for planted in (secrets.token_hex(16), f"{secrets.token_hex(16)}.{secrets.token_hex(16)}"):
            with_planted = {"Cookie": f"{COOKIE}={planted}", "X-Forwarded-For": HALL}
            replaced = httpx.get(url, headers=with_planted, timeout=60).cookies.get(COOKIE)
            assert replaced and replaced != planted
            made = raw_run(url, photo, with_planted)
            assert made not in owned_by(url, with_planted)
        a, b = browser(url), browser(url)
        both = {"Cookie": f"{COOKIE}={a.cookies[COOKIE]}; {COOKIE}={b.cookies[COOKIE]}",
                "X-Forwarded-For": HALL}
        made = raw_run(url, photo, both)
        assert made not in owned_by(url, both)
        assert made not in past_runs(url, a) and made not in past_runs(url, b)
        mine = raw_run(url, photo, {**browser_cookie(a), "X-Forwarded-For": HALL})
        assert mine in past_runs(url, a)  # the control: a minted secret sent once owns its run


# --- the classroom: 30 browsers behind one address ---------------------------------------------

def test_thirty_browsers_behind_one_address_each_get_their_run(tmp_path) -> None:
    runs = tmp_path / "runs"
    photo = noise(tmp_path / "in.png", 32, 32)
    with running_app(runs, **SPACE) as url:  # the default caps
        hall = [browser(url) for _ in range(30)]
        assert len({visitor.cookies[COOKIE] for visitor in hall}) == 30
        jobs = [visitor.submit(*run_args(photo, 1), api_name="/run") for visitor in hall]
        endings = [job.result(timeout=900)[STATUS] for job in jobs]
        assert all("Completed" in status for status in endings), endings
        assert len({p.parent.name for p in runs.glob("*/run.json")}) == 30


# --- the MCP hop (issue 41, item 3) -----------------------------------------------------------

VICTIM_SECRET = secrets.token_hex(16)  # the victim's browser secret


def as_victim(url: str, event: str, data: list) -> object:
    """Call `event` as the visitor at VICTIM: its own connection, its own browser secret."""
    return call(url, dependencies(url)[event], data,
                headers={"Cookie": f"{COOKIE}={VICTIM_SECRET}"},
                transport=httpx.HTTPTransport(local_address=VICTIM))


def victims_chain(url: str, photo: Path, steps: int, token: str) -> object:
    """A chain of the visitor at VICTIM through the documented /run_chain."""
    with httpx.Client(transport=httpx.HTTPTransport(local_address=VICTIM), timeout=60,
                      headers={"Cookie": f"{COOKIE}={VICTIM_SECRET}"}) as http, \
            photo.open("rb") as handle:
        uploaded = http.post(f"{url}gradio_api/upload", files={"files": handle}).json()[0]
    return as_victim(url, "run_chain",
                     [file_data(uploaded), steps, "simulate", "entropy", 0, "", token])


async def _mcp(url: str, calls: list[tuple[str, dict]], forged: str) -> list:
    """Tool calls from an MCP client on 127.0.0.1 that names `forged` as its address."""
    return (await _mcp_session(url, calls, {"X-Forwarded-For": forged}))[0]


async def _mcp_session(url: str, calls: list[tuple[str, dict]], headers: dict[str, str]
                       ) -> tuple[list, dict[str, str]]:
    """Tool calls in one new MCP session (the SDK's client, keeping the cookies it is given),
    and the cookies it was given."""
    async with httpx.AsyncClient(headers=headers, timeout=300) as http:
        async with streamable_http_client(f"{url}gradio_api/mcp/", http_client=http) as (
                read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            answers = [await session.call_tool(name, arguments) for name, arguments in calls]
        return answers, dict(http.cookies)


def test_an_mcp_caller_naming_another_visitors_address_cannot_act_as_them(tmp_path) -> None:
    runs = tmp_path / "runs"
    photo = noise(tmp_path / "in.png", 512, 384)
    local = {"BANANA_OWNER_KEY": OWNER_KEY, "BANANA_REAL_CHAINS": "off",
             "BANANA_CHAINS_PER_VISITOR": "1", "BANANA_CHAINS_PER_ADDRESS": "1",
             "GRADIO_HEARTBEAT_INTERVAL": "1"}
    with running_app(runs, **local) as url:
        victim_token = "the-victims-own-token-" + secrets.token_hex(4)
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(victims_chain, url, photo, 100, victim_token)
            wait_for(lambda: any(runs.glob("*/frames/step_001.png")), what="the victim's chain")
            assert as_victim(url, "stop", [victim_token]).success
            answer = first.result(timeout=300)
        assert answer.success, answer.error
        stopped = json.loads(answer.data[0])
        assert stopped["status"] == "stopped", stopped
        # The MCP caller names the victim's address: it cannot resume the victim's run ...
        (resumed,) = asyncio.run(_mcp(url, [("resume_chain", {
            "run_id": stopped["run"], "api_key": "", "token": TOKEN})], forged=VICTIM))
        assert resumed.isError and "Only the visitor who started" in resumed.content[0].text
        # ... nor hold the victim's address's place: with its chain in flight (one per address),
        # the victim's own next chain is still admitted.
        with ThreadPoolExecutor(1) as pool:
            long_chain = pool.submit(asyncio.run, _mcp(url, [("run_chain", {
                "image": data_url(photo), "steps": 100, "generator": "simulate",
                "metrics": "entropy", "seed": 0, "profile": "", "token": TOKEN})],
                forged=VICTIM))
            wait_for(lambda: sum(map(writing, runs.iterdir())) == 1 or long_chain.done(),
                     what="the MCP caller's chain")
            assert not long_chain.done(), long_chain.result()
            second = victims_chain(url, photo, 1, "")
            asyncio.run(_mcp(url, [("stop_run", {"token": TOKEN})], forged=VICTIM))
            long_chain.result(timeout=300)
        assert second.success, second.error
        assert json.loads(second.data[0])["status"] == "completed"



def test_a_visitors_runs_are_theirs_after_a_restart_with_no_key_configured(tmp_path) -> None:
    """No BANANA_OWNER_KEY: the key drawn at the first start is kept beside the runs (never
    served by the file routes) and read back at the next."""
    runs = tmp_path / "runs"
    photo = noise(tmp_path / "in.png", 64, 48)
    unset = {**SPACE, "BANANA_OWNER_KEY": ""}
    with running_app(runs, **unset) as url:
        owner = browser(url)
        made = json.loads(owner.predict(handle_file(str(photo)), 1, "simulate", "entropy", 0, "",
                                        "", api_name="/run_chain"))
        kept = dict(owner.cookies)
        key_file = runs / ".operator_key"
        served = [httpx.get(f"{url}{route}{key_file}") for route in
                  ("gradio_api/file=", "file=", "gradio_api/file/")]
    assert [answer.status_code for answer in served] == [404] * 3
    assert not any(key_file.read_text().strip() in answer.text for answer in served)
    assert key_file.stat().st_mode & 0o077 == 0
    with running_app(runs, **unset) as url:
        assert made["run"] in past_runs(url, browser(url, kept))
        assert made["run"] not in past_runs(url, browser(url))


def test_an_agent_resumes_its_own_run_with_its_token_from_a_new_mcp_session(tmp_path) -> None:
    """The run an agent starts with its token is the token's: from a new MCP session (no
    cookie: the MCP routes mint none) the same token resumes it, another token cannot."""
    runs = tmp_path / "runs"
    photo = noise(tmp_path / "in.png", 256, 192)
    local = {"BANANA_OWNER_KEY": OWNER_KEY, "BANANA_REAL_CHAINS": "off",
             "GRADIO_HEARTBEAT_INTERVAL": "1"}
    other = "another-agents-token-" + secrets.token_hex(8)
    with running_app(runs, **local) as url:
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(asyncio.run, _mcp_session(url, [("run_chain", {
                "image": data_url(photo), "steps": 100, "generator": "simulate",
                "metrics": "entropy", "seed": 0, "profile": "", "token": TOKEN})], {}))
            wait_for(lambda: any(runs.glob("*/frames/step_002.png")) or first.done(),
                     what="the agent's chain")
            asyncio.run(_mcp_session(url, [("stop_run", {"token": TOKEN})], {}))
            (started,), cookies = first.result(timeout=300)
        assert cookies == {}, cookies
        assert not started.isError, started.content[0].text
        stopped = json.loads(started.content[0].text)
        assert stopped["status"] == "stopped", stopped
        resume = {"run_id": stopped["run"], "api_key": ""}
        (refused,), _ = asyncio.run(_mcp_session(url, [("resume_chain", {
            **resume, "token": other})], {}))
        assert refused.isError and "Only the visitor who started" in refused.content[0].text
        (resumed,), _ = asyncio.run(_mcp_session(url, [("resume_chain", {
            **resume, "token": TOKEN})], {}))
        assert not resumed.isError, resumed.content[0].text
        assert json.loads(resumed.content[0].text)["status"] == "completed"
