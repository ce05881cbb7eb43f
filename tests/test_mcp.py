"""The app as an MCP server (issue 13, item 4), through the `mcp` client library over the app's
streamable-HTTP endpoint: the tools are listed with their descriptions, scoring a small GIF
and a zip of images answers per-metric verdicts and the run's link, and a bad call is a clear
error, not a crash."""

from __future__ import annotations

import asyncio
import base64
import inspect
import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from app_server import running_app
from chains import WORSE_AT_STEP_1_THEN_BETTER, WORSE_WITH_EVERY_COPY, planted_noise_chain
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from PIL import Image

from banana_space.backends.simulate import SimulateBackend

pytestmark = pytest.mark.app

TOOLS = {"run_chain", "score_chain", "resume_chain", "open_run", "list_options", "stop_run",
         "vote"}


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory) -> tuple[str, Path]:
    runs = tmp_path_factory.mktemp("mcp") / "runs"
    with running_app(runs) as url:
        yield f"{url}gradio_api/mcp/", runs


def chain_frames(photo: Image.Image, count: int) -> list[Image.Image]:
    """A real replication chain from the offline simulation: frame 0 and its copies."""
    backend, frames = SimulateBackend(strength=2.0), [photo.resize((64, 48))]
    for step in range(1, count):
        frames.append(backend.edit(frames[-1], "replica", seed=0, step=step).image)
    return frames


def data_url(image: Image.Image | list[Image.Image], kind: str = "png") -> str:
    """A file as MCP clients send one: a data URL (an animated GIF or a zip for a list)."""
    buffer = io.BytesIO()
    if kind == "gif":
        image[0].save(buffer, format="GIF", save_all=True, append_images=image[1:])
    elif kind == "zip":
        with zipfile.ZipFile(buffer, "w") as archive:
            for index, frame in enumerate(image):
                png = io.BytesIO()
                frame.save(png, format="PNG")
                archive.writestr(f"{index}.png", png.getvalue())
    else:
        image.save(buffer, format=kind.upper())
    media = "application/zip" if kind == "zip" else f"image/{kind}"
    return f"data:{media};base64," + base64.b64encode(buffer.getvalue()).decode()


async def session_call(url: str, calls: list[tuple[str, dict]]) -> tuple[list, list]:
    async with streamable_http_client(url) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


async def session_prompts(url: str) -> dict[str, tuple[str, str]]:
    """Every prompt the server lists: its name -> (description, the message it gives)."""
    async with streamable_http_client(url) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        found = {}
        for prompt in (await session.list_prompts()).prompts:
            got = await session.get_prompt(prompt.name, {})
            found[prompt.name] = (prompt.description, got.messages[0].content.text)
    return found


def answer(result) -> dict:
    assert not result.isError, result.content
    return json.loads(result.content[0].text)


def test_tools_are_listed_and_scoring_a_gif_answers_verdicts(mcp_url, photo) -> None:
    url, runs = mcp_url
    frames = chain_frames(photo, 7)
    metrics = "entropy, piqe"
    tools, (options, scored, listed, bad) = asyncio.run(session_call(url, [
        ("list_options", {}),
        ("score_chain", {"frames": data_url(frames, "gif"), "metrics": metrics}),
        ("score_chain", {"frames": data_url(frames[:4], "zip"), "metrics": "entropy"}),
        ("open_run", {"run_id": "../etc"}),
    ]))
    by_name = {tool.name: tool for tool in tools}
    assert TOOLS <= set(by_name)
    assert all(by_name[name].description for name in TOOLS)
    assert not any(name.startswith("lambda") for name in by_name)

    generators = {g["name"]: g for g in answer(options)["generators"]}
    assert generators["simulate"]["runs_here"] is True

    verdict = answer(scored)
    assert verdict["status"] == "completed" and verdict["last_step"] == 6
    assert {"entropy", "piqe", "psnr", "ssim"} <= set(verdict["verdict"])
    assert verdict["verdict"]["psnr"]["detects"] == "yes"  # fidelity sees the damage
    for row in verdict["verdict"].values():
        assert row["detects"] in ("yes", "no", "undecided")
        assert row["detects_robust"] in ("yes", "no", "undecided")
        assert row["delta_5"] is not None
    assert verdict["verdict"]["psnr"]["detects_robust"] == "undecided"  # fidelity: no floor
    assert verdict["link"].endswith(f"/?run={verdict['run']}")
    assert (runs / verdict["run"] / "frames" / "step_006.png").is_file()

    as_list = answer(listed)
    assert as_list["last_step"] == 3 and "entropy" in as_list["verdict"]

    assert bad.isError and "not a run id" in bad.content[0].text

    token = "an-agents-voting-token-0123"
    _, (voted, again) = asyncio.run(session_call(url, [
        ("vote", {"run_id": verdict["run"], "earlier": 1, "later": 5, "choice": "later",
                  "token": token}),
        ("vote", {"run_id": verdict["run"], "earlier": 1, "later": 5, "choice": "earlier",
                  "token": token})]))
    assert (answer(voted)["pair"]["n"], answer(voted)["pair"]["prefer_a"]) == (1, 0)
    assert (answer(again)["pair"]["n"], answer(again)["pair"]["prefer_a"]) == (1, 1)  # replaced


def test_the_answer_reads_the_papers_test_from_step_1(mcp_url, photo) -> None:
    """Known answers (tests/chains.py): planted noise worse at step 1 and better after is
    "fooled", though worse than the input at every checkpoint; noise that grows with every copy
    "detects"."""
    url, _ = mcp_url
    _, (fading, growing) = asyncio.run(session_call(url, [
        ("score_chain", {"frames": data_url(planted_noise_chain(photo, sigmas), "zip"),
                         "metrics": "noise_level"})
        for sigmas in (WORSE_AT_STEP_1_THEN_BETTER, WORSE_WITH_EVERY_COPY)]))
    rule = answer(fading)["delta"]
    fading, growing = (answer(result)["verdict"]["noise_level"] for result in (fading, growing))
    assert "delta_i = score_i - score_1 (from step 1, the first copy)" in rule
    assert (fading["detects"], fading["worse_than_input"]) == ("no", "yes")
    assert fading["delta_5"] > 0 > fading["delta_since_input"]
    assert fading["since_input_note"].startswith("step 1 scored worse than the input")
    assert (growing["detects"], growing["worse_than_input"]) == ("yes", "yes")
    assert growing["delta_5"] < 0 and "since_input_note" not in growing


def test_run_chain_answers_a_verdict_and_a_link(mcp_url, photo) -> None:
    url, runs = mcp_url
    _, (ran, refused) = asyncio.run(session_call(url, [
        ("run_chain", {"image": data_url(photo.resize((64, 48))), "steps": 3,
                       "generator": "simulate", "metrics": "entropy", "seed": 1,
                       "profile": ""}),
        ("run_chain", {"image": data_url(photo.resize((64, 48))), "steps": 500,
                       "generator": "simulate", "metrics": "", "seed": 0, "profile": ""}),
    ]))
    verdict = answer(ran)
    assert verdict["status"] == "completed" and verdict["last_step"] == 3
    assert set(verdict["verdict"]) == {"entropy", "psnr", "ssim"}
    assert (runs / verdict["run"] / "run.json").is_file()
    assert refused.isError and "between 1 and 100" in refused.content[0].text


def documented(function) -> tuple[str, dict[str, str], list[str]]:
    """A tool's docstring as a reader takes it: the text before Args (joined), each argument's
    whole description (its lines indented deeper joined to it), and the Returns lines."""
    body, args, returns, section, indent = [], {}, [], None, None
    for line in inspect.getdoc(function).splitlines():
        text = line.strip()
        if text in ("Args:", "Returns:"):
            section, indent = text, None
        elif section is None:
            body += [text] if text else []
        elif section == "Returns:":
            returns += [text] if text else []
        elif text and indent in (None, len(line) - len(line.lstrip())):
            indent = len(line) - len(line.lstrip())
            name, description = text.split(":", 1)
            args[name] = description.strip()
        elif text:
            args[name] += " " + text
    return " ".join(body), args, returns


def test_every_argument_and_answer_reads_whole_to_an_mcp_client(mcp_url) -> None:
    """gradio keeps the first line of an argument's description and joins the Returns lines
    with ", ": what an MCP client lists is each tool's whole docstring, and each Returns line is
    an item whole in itself (no bracket left open, no mark before the joining comma)."""
    from page import api
    from page.run_tab import handlers

    url, _ = mcp_url
    tools, _ = asyncio.run(session_call(url, []))
    assert TOOLS <= {tool.name for tool in tools}
    for tool in tools:
        function = getattr(api, tool.name, None) or getattr(handlers, tool.name)
        body, args, returns = documented(function)
        listed = {name: field.get("description")
                  for name, field in tool.inputSchema["properties"].items()}
        assert listed == args, tool.name
        assert tool.description.startswith(body), tool.name
        assert returns and tool.description.endswith(" Returns: " + ", ".join(returns))
        for item in returns:
            assert all(item.count(o) == item.count(c) for o, c in ("()", "[]", "{}")), item
            assert not item.endswith((",", ";", ":")), item


def test_each_lesson_is_a_prompt_whose_call_sets_up_its_pair(mcp_url, photo) -> None:
    """An agent lists the lessons as prompts; each message's compare_chains sides are the
    lesson's own, as the API reads them, and one lesson's call, made as the message says,
    answers with every field the message tells the agent to read."""
    from banana_space.compare.lessons import LESSONS
    from page.compare_tab.sides import side_from_json

    url, _ = mcp_url
    prompts = asyncio.run(session_prompts(url))
    assert set(prompts) == {"lesson_" + key.replace("-", "_") for key in LESSONS}
    for key, lesson in LESSONS.items():
        description, message = prompts["lesson_" + key.replace("-", "_")]
        assert lesson.title in description and lesson.about in message
        a, b = (re.search(rf" {side} (\{{.*?\}}) \(", message).group(1) for side in "ab")
        assert side_from_json(a, "A").with_defaults() == lesson.a.with_defaults(), key
        assert side_from_json(b, "B").with_defaults() == lesson.b.with_defaults(), key
    message = prompts["lesson_static_vs_noise"][1]
    steps = int(re.search(r"steps (\d+)", message).group(1))
    a, b = (re.search(rf" {side} (\{{.*?\}}) \(", message).group(1) for side in "ab")
    _, (compared,) = asyncio.run(session_call(url, [("compare_chains", {
        "image": data_url(photo.resize((160, 120))), "steps": steps, "a": a, "b": b,
        "metrics": "classics"})]))
    runs = answer(compared)["runs"]
    assert "/?compare=" in answer(compared)["link"]
    for side in ("A", "B"):
        assert runs[side]["last_step"] == steps
        assert {"brisque", "niqe", "piqe", "entropy"} <= set(runs[side]["verdict"])
        for row in runs[side]["verdict"].values():
            assert row["detects"] in ("yes", "no", "undecided") and "checkpoints_used" in row
            assert row["delta_5"] is not None
