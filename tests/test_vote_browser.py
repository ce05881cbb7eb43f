"""The class vote in Debian's Chromium (page/vote_tab/tab.py): the teacher starts the lesson
"Vote first, then look at the metrics" from the Compare tab, which shows the class link with a
QR code and a count; two phone-sized browsers open the class link (`?vote=<run>`), see two
pictures and two buttons alone, with no step named until they vote; the teacher's page counts
both votes as they arrive, with a people row in the verdict table and a people line on the
curves. Screenshots of both sides land in $BANANA_SCREENSHOTS (docs/screenshots)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page
from test_browser import (  # noqa: F401 - fixtures
    PAGE_TIMEOUT_S,
    PHONE,
    SCREENSHOTS,
    TOASTS_JS,
    Visitors,
    app_url,
    serious_axe_violations,
    visitors,
)

pytestmark = [pytest.mark.browser, pytest.mark.app]

LESSON_RUN = "moss-simulated-30"
# The count redraws every 3 s; a recording's dropped frames are re-made before a pair shows.
ARRIVES_MS = 120_000
PHONE_VIEW_JS = """() => {
  const panel = document.querySelector('#vote-panel').getBoundingClientRect();
  const pictures = [...document.querySelectorAll('#vote-left img, #vote-right img')];
  return {alone: document.body.classList.contains('vote-only'),
          covers: panel.width >= window.innerWidth - 1 && panel.top <= 0,
          pictures: pictures.filter(i => i.complete && i.naturalWidth > 0).length,
          names: pictures.map(i => i.getAttribute('src')).join(' '),
          said: document.querySelector('#vote-reveal').innerText};
}"""


def open_phone(visitors: Visitors, query: str) -> Page:  # noqa: F811
    """A phone opening the class link, as `Visitors.open` opens a page (its console errors and
    error toasts collected), but waiting for the voting view: the rest of the page is hidden
    under it."""
    context = visitors.browser.new_context(viewport=PHONE)
    context.set_default_timeout(PAGE_TIMEOUT_S * 1000)
    context.add_init_script(TOASTS_JS)
    page = context.new_page()
    visitors.pages.append(page)
    page.on("console", visitors._on_console)
    page.on("pageerror", lambda error: visitors.errors.append(f"uncaught: {error}"))
    page.goto(visitors.app_url + query)
    page.wait_for_selector("#vote-panel")
    return page


def test_two_phones_vote_and_the_teachers_page_counts_them(visitors: Visitors) -> None:  # noqa: F811
    teacher = visitors.open()
    teacher.get_by_role("tab", name="Compare two settings").click()
    teacher.click("#lesson-vote-first")
    teacher.locator("#class-qr svg").wait_for()
    assert f"?vote={LESSON_RUN}" in teacher.locator("#class-qr a").get_attribute("href")
    teacher.wait_for_function("document.querySelector('#class-count').innerText"
                              ".includes('No votes yet')")

    phones = [open_phone(visitors, f"?vote={LESSON_RUN}") for _ in range(2)]
    for index, phone in enumerate(phones):
        phone.wait_for_function("document.querySelectorAll('#vote-left img, #vote-right img')"
                                ".length === 2", timeout=ARRIVES_MS)
        seen = phone.evaluate(PHONE_VIEW_JS)
        assert seen["alone"] and seen["covers"], seen
        assert not re.search(r"step\D{0,2}\d", seen["names"] + seen["said"])  # hidden
        if index == 0:
            phone.locator("#vote-magnifier img").wait_for()  # the shared magnifier
            label = phone.locator("#vote-magnifier").inner_text()
            assert "left | right" in label and not re.search(r"step\D{0,2}\d", label)
            violations = serious_axe_violations(phone)
            assert violations == [], "\n".join(violations)
        phone.click("#vote-left-button" if index == 0 else "#vote-right-button")
        phone.wait_for_function("document.querySelector('#vote-reveal').innerText"
                                ".includes('You chose')")
        assert "left was step" in phone.locator("#vote-reveal").inner_text()
        if index == 0:
            phone.screenshot(path=SCREENSHOTS / "class-vote-phone.png")

    teacher.wait_for_function("document.querySelector('#class-count').innerText"
                              ".includes('2 votes')", timeout=ARRIVES_MS)
    teacher.locator("#class-vote").screenshot(path=SCREENSHOTS / "class-vote-teacher.png")
    teacher.click("#vote-reveal-metrics")  # the metrics, beside the room's votes
    teacher.wait_for_function(
        "[...document.querySelectorAll('#verdict [role=row].virtual-row')].some(row => "
        "row.innerText.includes('people') && "
        "row.innerText.includes('not enough votes yet (2 at step 5, 0 at step 10'))",
        timeout=ARRIVES_MS)
    teacher.wait_for_function(
        "(document.querySelector('#plot .js-plotly-plot')?.data ?? [])"
        ".some(trace => trace.name.startsWith('people (2 votes'))", timeout=ARRIVES_MS)
    phones[0].click("#vote-next")  # the next pair, and a vote the teacher's curves follow
    phones[0].wait_for_function("document.querySelector('#vote-reveal').innerText"
                                ".includes('Which copy')", timeout=ARRIVES_MS)
    phones[0].click("#vote-left-button")
    teacher.wait_for_function("document.querySelector('#class-count').innerText"
                              ".includes('3 votes')", timeout=ARRIVES_MS)
