"""The dataset table's report.html in a real browser: Debian's headless Chromium, driven by
Playwright, opens the page from disk with the network blocked (the page is self-contained:
plotly.js is inlined) and any console error or uncaught exception fails the test.

The report is built by the real code (`TableStore`, `write_report`) from chain results of the
shape `score_chain_ref` returns, with a known answer: psnr falls in every chain; "steady" never
moves (fooled in every chain); "mixed" falls in one chain and rises in the other.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import pytest
from playwright.sync_api import Browser

from banana_space.events import ScoreInfo
from banana_space.table import write_report
from banana_space.table.store import TableStore
from banana_space.table.work import ChainResult

pytestmark = pytest.mark.browser

STEPS = 21




def _result(name: str, mixed_sign: float) -> ChainResult:
    infos = [ScoreInfo("psnr", "fidelity", False), ScoreInfo("steady", "metric", False),
             ScoreInfo("mixed", "metric", True)]
    scores = {"psnr": [60.0 - 2 * s for s in range(STEPS)], "steady": [5.0] * STEPS,
              "mixed": [1.0 + mixed_sign * s for s in range(STEPS)]}
    scores["steady"][7] = math.nan  # a missing cell stays missing on the page
    return ChainResult(name, ["steady", "mixed"], frames=STEPS,
                       columns=[asdict(i) for i in infos], scores=scores)


def test_report_opens_without_console_errors(browser: Browser, tmp_path) -> None:
    store = TableStore(tmp_path, ["steady", "mixed"])
    for result in (_result("lab/<b>cat</b>", 1.0), _result("lab/dog", -1.0),
                   ChainResult("lab/broken", ["steady", "mixed"], error="frame 3: truncated")):
        store.add(result)
    write_report(store, {"lab/broken": "frame 3: truncated"})
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    page.route("http*://**", lambda route: (errors.append(f"network: {route.request.url}"),
                                            route.abort()))
    page.goto((tmp_path / "report.html").as_uri())
    page.wait_for_selector("#figure-1 .main-svg")
    rows = page.eval_on_selector_all("table tbody tr", "rows => rows.map(r => r.innerText)")
    assert [row.split("\t") for row in rows] == [
        # chains, detects, fooled, undecided; beyond the floor (none measured for these
        # made-up names: never), worse than the input at every checkpoint (fidelity: not
        # asked; "mixed" in the chain where it rises)
        ["psnr", "2", "2", "0", "0", "0", "0"], ["steady", "2", "0", "2", "0", "0", "0"],
        ["mixed", "2", "1", "1", "0", "0", "1"]]
    heat = page.evaluate("document.getElementById('figure-0').data[0]")
    assert heat["y"] == ["lab/<b>cat</b>", "lab/dog"] and heat["x"] == ["psnr", "steady",
                                                                         "mixed"]
    assert heat["z"] == [[1, -1, 1], [1, -1, -1]]  # "mixed" is lower-better: rising is worse
    assert page.locator("b", has_text="cat").count() == 0  # a chain's name is text, not markup
    assert "skipped broken chain lab/broken" in page.inner_text("ul")
    assert errors == []
    page.close()
