"""Visitors are people (issue 42) in real browsers: Chromium contexts on one machine share one
address, as a lecture hall behind NAT does, and each is its own visitor. Three of them start a
one-step run on a small picture while 27 gradio_clients from the same address do the same;
every run completes. Each browser's Past runs lists its own run and no other, and a browser
given another's link cannot resume that run."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from app_server import STATUS, running_app
from gradio_client import Client
from playwright.sync_api import Browser, Page
from test_browser import PAGE_TIMEOUT_S, STREAM_JS, finish_event, start_run, wait_for_status
from visitors import noise, run_args

from page.door.identity import COOKIE

pytestmark = [pytest.mark.browser, pytest.mark.app]

RUN_TIMEOUT_S = 900  # a failure bound: 30 runs share 2 cores and 4 places
HALL = {"BANANA_OWNER_KEY": "the-operators-key-for-the-hall", "BANANA_REAL_CHAINS": "off"}


def open_page(browser: Browser, url: str, query: str = "") -> Page:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(PAGE_TIMEOUT_S * 1000)  # a failure bound, as test_browser's
    context.add_init_script(STREAM_JS)  # `finish_event` reads the queue's stream
    page = context.new_page()
    page.goto(url + query)
    page.wait_for_selector("#run-button")
    return page


def run_id_of(page: Page) -> str:
    """The run the page shows: its share link names it."""
    link = page.locator("#share a:not([download])").get_attribute("href") or ""
    return link.split("run=")[1].split("&")[0]


def past_runs(page: Page) -> list[str]:
    """What the page's Past runs picker offers, as a visitor sees it after ↻."""
    accordion = page.get_by_text("Past runs", exact=True)
    if not page.get_by_role("button", name="↻").is_visible():
        accordion.click()
    finish_event(page, page.get_by_role("button", name="↻").click)
    picker = page.get_by_label("Run", exact=True)
    picker.click()
    options = page.locator("ul[role=listbox] li").all_inner_texts()
    page.keyboard.press("Escape")
    # Each option names the run's date, generator, steps and status, then its id; the chosen
    # one has a ✓.
    return [option.split("\n")[-1].strip().rsplit(" · ", 1)[-1] for option in options]


def test_thirty_visitors_behind_one_address_three_in_chromium(browser: Browser, tmp_path) -> None:
    photo = noise(tmp_path / "hall-picture.png", 32, 32)
    with running_app(tmp_path / "runs", **HALL) as url:
        pages = [open_page(browser, url) for _ in range(3)]
        secrets = {c["value"] for page in pages for c in page.context.cookies()
                   if c["name"] == COOKIE}
        assert len(secrets) == 3  # three browsers, one address
        others = [Client(url, verbose=False, httpx_kwargs={"timeout": 300}) for _ in range(27)]
        for page in pages:
            start_run(page, photo, 1)
        with ThreadPoolExecutor(27) as pool:
            endings = list(pool.map(lambda c: c.submit(*run_args(photo, 1), api_name="/run")
                                    .result(timeout=RUN_TIMEOUT_S)[STATUS], others))
        for page in pages:
            wait_for_status(page, "Completed", timeout_s=RUN_TIMEOUT_S)
        assert all("Completed" in status for status in endings), endings
        assert len(list((tmp_path / "runs").glob("*/run.json"))) == 30
        made = [run_id_of(page) for page in pages]
        assert len(set(made)) == 3
        for page, mine in zip(pages, made, strict=True):
            assert past_runs(page) == [mine]


def test_a_browser_given_anothers_link_cannot_resume_or_stop_that_run(browser: Browser,
                                                                      tmp_path) -> None:
    photo = noise(tmp_path / "owners-picture.png", 512, 384)
    with running_app(tmp_path / "runs", **HALL) as url:
        owner, stranger = open_page(browser, url), open_page(browser, url)
        start_run(owner, photo, 100)
        owner.wait_for_function("document.querySelectorAll('#strip a').length >= 3",
                                timeout=RUN_TIMEOUT_S * 1000)
        made = run_id_of(owner)
        stranger.click("#stop-button")  # the stranger's Stop stops only the stranger's chain
        stranger.goto(f"{url}?run={made}")
        stranger.wait_for_selector("#run-button")
        assert "Running" in owner.locator("#status").inner_text()
        owner.click("#stop-button")
        wait_for_status(owner, "Stopped")
        stranger.goto(f"{url}?run={made}")
        stranger.wait_for_selector("#run-button")
        wait_for_status(stranger, "Stopped")  # the link has opened the run: Resume names it
        stranger.click("#resume-button")
        stranger.get_by_text("Only the visitor who started this run").wait_for()
        assert made not in past_runs(stranger) and past_runs(owner) == [made]
