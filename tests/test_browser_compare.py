"""The Compare tab in Debian's Chromium (page/compare_tab/tab.py): the "model-like static against
white noise" lesson, one click on the default example at 6 steps, shows two strips, both runs'
curves on each score's chart (A solid, B dashed, one colour), an A/B verdict table, a lesson
sentence written from the verdicts and the "Why is it fooled?" panel, whose bars add up to each
side's change of BRISQUE since step 1 (pyiqa's, of the same frames) and whose sentences read that
change as the metric does; its share link, opened cold in a new browser context, shows
both runs, scrolled to them, and its step slider follows the arrow keys. A screenshot of the
lesson lands in $BANANA_SCREENSHOTS (docs/screenshots)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
import torch
from PIL import Image
from test_browser import (  # noqa: F401 - fixtures
    SCREENSHOTS,
    Visitors,
    app_url,
    visitors,
    wait_in_view,
)

from banana_space.compare.lessons import STEPS
from banana_space.scores.catalog import build_metric, to_tensor
from banana_space.scores.scoring import as_scored

pytestmark = [pytest.mark.browser, pytest.mark.app]

# Both runs of a comparison on the default example at 2048 x 1280 with four metrics: a failure
# bound, not a guess (minutes on a loaded 2-core machine).
PAIR_TIMEOUT_S = 1800
SIDES_JS = """() => {
  const strip = side => [...document.querySelectorAll(`#compare-strip-${side} .strip a`)]
      .map(a => a.getAttribute('href'));
  const graph = document.querySelector('#compare-plot .js-plotly-plot');
  const traces = ((graph && graph.data) || []).map(t => ({
      name: t.name, axis: t.yaxis || 'y', colour: t.line.color, dash: t.line.dash,
      points: Array.from(t.y || []).filter(v => v !== null).length}));
  const bars = document.querySelector('#why-bars .js-plotly-plot');
  const headers = [...document.querySelectorAll('#compare-verdict thead th')]
      .map(th => th.innerText.trim());
  const rows = [...document.querySelectorAll('#compare-verdict [role=row].virtual-row')].map(
      row => [...row.querySelectorAll('[role=gridcell]')].map(cell => cell.innerText.trim()));
  return {a: strip('a'), b: strip('b'), traces: traces, headers: headers, rows: rows,
          bars: ((bars && bars.data) || []).map(t => ({side: t.name, metric: t.meta,
                                                       x: Array.from(t.x)})),
          share: document.querySelector('#compare-share a')?.getAttribute('href') ?? '',
          lesson: document.querySelector('#compare-lesson')?.innerText ?? '',
          why: document.querySelector('#why-text')?.innerText ?? '',
          status: document.querySelector('#compare-status')?.innerText ?? ''};
}"""
BOTH_SHOWN = ("document.querySelectorAll('#compare-strip-a .strip img').length === {n} && "
              "document.querySelectorAll('#compare-strip-b .strip img').length === {n} && "
              "document.querySelectorAll('#compare-verdict .virtual-row').length > 0 && "
              "document.querySelector('#why-bars .js-plotly-plot') !== null")


def brisque_of(frame: Path) -> float:
    """BRISQUE of a frame file, as the runs scored it: with one torch thread (its float32 sums
    move with the thread count, 2e-4 of the score on a many-core machine)."""
    with Image.open(frame) as image, torch.inference_mode(), as_scored():
        return float(build_metric("brisque", "cpu")(to_tensor(image.convert("RGB"))))


def served_path(href: str) -> Path:
    return Path(unquote(href.removeprefix("gradio_api/file=")))


def test_the_static_against_noise_lesson_side_by_side(visitors: Visitors) -> None:  # noqa: F811
    page = visitors.open()
    page.get_by_role("tab", name="Compare two settings").click()
    page.click("#lesson-static-vs-noise")
    page.wait_for_function(
        "(document.querySelector('#compare-status')?.innerText ?? '')"
        ".split('Completed').length === 3", timeout=PAIR_TIMEOUT_S * 1000)
    page.wait_for_function(BOTH_SHOWN.format(n=STEPS + 1), timeout=120_000)
    seen = page.evaluate(SIDES_JS)

    # two strips, every frame of each: 0 (the same input) .. 6
    assert len(seen["a"]) == len(seen["b"]) == STEPS + 1
    assert served_path(seen["a"][0]).name == served_path(seen["b"][0]).name
    assert served_path(seen["a"][1]).parent != served_path(seen["b"][1]).parent
    # both runs' curves on each score's chart: A solid, B dashed, in one colour
    charts: dict[str, dict[str, dict]] = {}
    for trace in seen["traces"]:
        side, score = trace["name"].split(" · ")
        charts.setdefault(score, {})[side] = trace
    assert {"brisque", "niqe", "piqe", "entropy", "psnr"} <= set(charts)
    for score, sides in charts.items():
        assert set(sides) == {"A", "B"}, score
        assert sides["A"]["axis"] == sides["B"]["axis"]
        assert sides["A"]["colour"] == sides["B"]["colour"]
        assert (sides["A"]["dash"], sides["B"]["dash"]) == ("solid", "dash")
        assert sides["A"]["points"] == sides["B"]["points"] == STEPS + 1
    # the A/B verdict table
    assert {"A: verdict", "B: verdict"} <= set(seen["headers"])
    table = {row[0]: row for row in seen["rows"]}
    assert {"brisque", "niqe", "piqe", "entropy"} <= set(table)
    assert all(re.search("detects|fooled|undecided", cell) for row in table.values()
               for cell in (row[1], row[3]))
    # the lesson's sentence, written from those verdicts
    assert "model-like static" in seen["lesson"] and "white noise" in seen["lesson"]
    assert "By the paper's test at step 5 only in these two runs" in seen["lesson"]
    # Why: ours, labelled so; each side's bars add up to its change of BRISQUE and NIQE since
    # step 1, BRISQUE's is that of the frames shown, and the sentence reads it as BRISQUE does
    assert "Ours, not the paper's" in seen["why"]
    bars = {(trace["side"], trace["metric"]): trace["x"] for trace in seen["bars"]}
    assert set(bars) == {(side, metric) for side in "AB" for metric in ("brisque", "niqe")}
    for (side, metric), values in bars.items():
        assert math.fsum(values[:-1]) == pytest.approx(values[-1], rel=1e-9, abs=1e-12)
        reads = "better" if values[-1] < 0 else "worse"  # both: lower is better
        said = next(line for line in seen["why"].splitlines()
                    if line.startswith(f"{side} · {metric}:"))
        assert f"reads as {reads}." in said, said
    for side, hrefs in (("A", seen["a"]), ("B", seen["b"])):
        change = brisque_of(served_path(hrefs[STEPS])) - brisque_of(served_path(hrefs[1]))
        assert bars[side, "brisque"][-1] == pytest.approx(change, rel=1e-6)

    page.locator("#compare-tab").screenshot(path=SCREENSHOTS / "compare-lesson.png")

    # the share link, cold, in a new browser context: both runs
    assert seen["share"].startswith("?compare=")
    cold = visitors.open(query=seen["share"])
    cold.wait_for_function(BOTH_SHOWN.format(n=STEPS + 1), timeout=120_000)
    again = cold.evaluate(SIDES_JS)
    assert (again["a"], again["b"]) == (seen["a"], seen["b"])
    assert again["rows"] == seen["rows"] and again["lesson"] == seen["lesson"]
    # ... scrolled to the comparison, whose step follows the arrow keys on both sides.
    wait_in_view(cold, "#compare-status", "the compare link did not scroll to the comparison")
    cold.focus("#compare-pair-step input[type=range]")
    cold.keyboard.press("ArrowLeft")
    for side in "ab":
        cold.wait_for_function(f"decodeURIComponent(document.querySelector("
                               f"'#compare-frame-{side} img')?.src ?? '')"
                               f".endsWith('step_{STEPS - 1:03d}.png')")
