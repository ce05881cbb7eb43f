"""Browser tests: what a visitor sees, in Debian's headless Chromium driven by Playwright.

The real app runs on a local port (`app_server.running_app`) with the offline "Simulated"
backend, which replays the Banana100 (arXiv 2604.03400) replication chain without a key or GPU.
A visitor uploads a photo, runs a short chain and watches it stream in: the frame strip grows one
frame at a time, the curves gain points, the one-line summary and the verdict table fill, and the
zip downloads. The share control copies a link that a stranger opens cold on a phone: the same run,
the same compared frame, scrolled to the result. Stop keeps the frames made so far; a recorded
chain opens at once, with a magnifier and a compare slider that follows the arrow keys. The page
is drawn at 390 (a phone), 1280x720 (a projector) and 1400 wide; at 1280x720 the frames and the
curves fit on one screen. The default flow of a lecture (open a recorded chain, step through its
frames, press Run, press Stop) is walked on a projector and on a phone: the claim and the
actions on the first screen, the result in view after each click, a full-size frame at every
recorded step, Stop ends the run, a short keyboard path, and the current axe-core (4.14.1 from
npm, run through axe-playwright-python, whose own copy is older) finding no serious or critical
violation. Any error in the browser console, and any error
toast, fails the test. Screenshots are always
taken (a page that cannot be drawn fails); they land in $BANANA_SCREENSHOTS when set
(`BANANA_SCREENSHOTS=docs/screenshots` refreshes the README's and docs/using.md's), else in a
temporary folder, so a plain test run leaves the working tree clean.

Chromium comes from apt (`apt-get install chromium`; scripts/test.sh does it), never from
Playwright's own download: without /usr/bin/chromium these tests fail in CI and skip locally.
axe-core comes from npm (`npm install --no-save axe-core@4.14.1`; scripts/test.sh does it) into
node_modules/: without it the tests that run it fail in CI and skip locally.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from app_server import running_app
from axe_playwright_python.sync_playwright import Axe
from conftest import REPO
from PIL import Image
from playwright.sync_api import Browser, ConsoleMessage, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from banana_space.chain.spec import MAX_STEPS
from banana_space.verdict.columns import VERDICT_COLUMN
from page.style import THEME

pytestmark = [pytest.mark.browser, pytest.mark.app]

EXAMPLES = Path(__file__).parents[1] / "assets" / "examples"
SCREENSHOTS = Path(os.environ.get("BANANA_SCREENSHOTS") or tempfile.mkdtemp(prefix="shots-"))
DESKTOP = {"width": 1280, "height": 900}
PROJECTOR = {"width": 1280, "height": 720}
WIDE = {"width": 1400, "height": 1000}
PHONE = {"width": 390, "height": 844}
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# A failure bound, not a guess of the speed: a 5-step simulated run takes ~20 s on 2 idle cores,
# minutes on a loaded machine.
RUN_TIMEOUT_S = 600
# A failure bound for anything else a page waits for (Playwright's own default is 30 s): a
# shared machine has stalled a page's redraw for tens of seconds.
PAGE_TIMEOUT_S = 120
MAX_TAB_STOPS = 15
RECORDED_LABELS = {"dunes-simulated-30": "Dunes · simulated (nano-banana-pro profile) · 30 steps",
                   "moss-simulated-30": "Moss · simulated (nano-banana-pro profile) · 30 steps"}
# Every error toast a page shows, kept from the moment the page starts (a toast fades away).
TOASTS_JS = """window.__errorToasts = [];
new MutationObserver(() => document.querySelectorAll('.toast-body.error').forEach(toast => {
  if (!toast.dataset.seen) { toast.dataset.seen = '1'; window.__errorToasts.push(toast.innerText); }
})).observe(document, {subtree: true, childList: true});"""
# gradio's own stream, recorded as the page receives it: the client reads every event of a run
# from one `fetch` of /queue/data (server-sent events), so a copy of that response, read beside
# it, holds each message in the order it came, whatever the page had time to draw. Each message
# that carries the strip's newest thumbnails (`alt="step k"`) is kept with those steps, and the
# first message that says the run completed is kept too (the run's end), and each message's
# curves are counted (their points, where it carries curves). The ids of the events
# the page queued, and of those gradio said were completed, are kept as well.
STREAM_JS = r"""window.__stream = [];
window.__completed = [];  // the event ids gradio said were completed (`finish_event`)
window.__joined = [];  // the event ids the page queued (`SETTLED_JS`)
// The points a message's curves hold (non-null y values, as SNAPSHOT_JS counts them on the
// page), or null where it carries no curves: gradio sends the plot's figure as a JSON string,
// whole or as the new value of a changed part of it.
const plotPoints = (value) => {
  if (typeof value === 'string' && value.startsWith('{') && value.includes('"data"')) {
    let figure = null;
    try { figure = JSON.parse(value); } catch (error) { return null; }
    if (!Array.isArray(figure?.data)) return null;
    return figure.data.reduce(
      (sum, trace) => sum + Array.from(trace.y || []).filter(v => v !== null).length, 0);
  }
  if (value === null || typeof value !== 'object') return null;
  for (const part of Object.values(value)) {
    const found = plotPoints(part);
    if (found !== null) return found;
  }
  return null;
};
const pageFetch = window.fetch;
window.fetch = async (...args) => {
  const response = await pageFetch(...args);
  const url = args[0] instanceof Request ? args[0].url : String(args[0]);
  if (url.includes('/queue/join'))
    response.clone().json().then(j => j.event_id && window.__joined.push(j.event_id),
                                 () => {});
  if (url.includes('/queue/data') && response.body) {
    const reader = response.clone().body.getReader(), decoder = new TextDecoder();
    let pending = '';
    (async () => {
      for (;;) {
        const {done, value} = await reader.read();
        if (done) return;
        pending += decoder.decode(value, {stream: true});
        const lines = pending.split('\n');
        pending = lines.pop();
        for (const line of lines.filter(l => l.startsWith('data:'))) {
          let message = null;
          try { message = JSON.parse(line.slice(5)); } catch (error) {}
          if (message?.msg === 'process_completed') window.__completed.push(message.event_id);
          const steps = [...line.matchAll(/alt=\\"step (\d+)\\"/g)].map(m => +m[1]);
          const completed = line.includes('Completed');
          const points = plotPoints(message?.output?.data);
          if (steps.length || completed || points !== null)
            window.__stream.push({steps, completed, points});
        }
      }
    })().catch(() => {});  // gradio aborts the stream it has done with: so ends its copy
  }
  return response;
};"""
# Every state the page drew while a run went on: a MutationObserver takes a look (SNAPSHOT_JS)
# after each batch of changes to the page, and keeps it when it differs from the last one kept.
DRAWN_JS = """() => {
  window.__drawn = [];
  const keep = () => {
    const now = (%s)(), last = window.__drawn[window.__drawn.length - 1];
    if (JSON.stringify(now) !== JSON.stringify(last)) window.__drawn.push(now);
  };
  new MutationObserver(keep).observe(document.body,
                                     {subtree: true, childList: true, characterData: true});
}"""
METRICS = {"brisque", "niqe", "piqe", "entropy"}
# The current axe-core release (npm, 2026): it finds what axe-playwright-python 0.1.8's bundled
# 4.12.1 does not (label-content-name-mismatch on gradio's gallery thumbnails, WCAG 2.5.3).
AXE_VERSION = "4.14.1"
AXE_JS = REPO / "node_modules" / "axe-core" / "axe.min.js"

# One look at the page, read in a single evaluate so the numbers belong to the same moment:
# thumbnails in the strip, points drawn in the plotly graph, the status text, verdict rows.
SNAPSHOT_JS = """() => {
  const graph = document.querySelector('#plot .js-plotly-plot');
  const traces = (graph && graph.data) || [];
  const points = traces.reduce(
    (sum, trace) => sum + Array.from(trace.y || []).filter(v => v !== null).length, 0);
  const rows = [...document.querySelectorAll('#verdict [role=row].virtual-row')].map(
    row => [...row.querySelectorAll('[role=gridcell]')].map(cell => cell.innerText.trim()));
  return {
    frames: document.querySelectorAll('#strip .strip img').length,
    points: points,
    status: (document.querySelector('#status')?.innerText ?? ''),
    // the whole finding, its folded part too
    summary: (document.querySelector('#summary')?.textContent.trim() ?? ''),
    verdict: rows,
  };
}"""
DRAWN_JS = DRAWN_JS % SNAPSHOT_JS
# The compare slider: its value, the two images it shows, their alt text and its label.
COMPARE_JS = """() => ({
  step: document.querySelector('#compare-step input[type=range]').value,
  images: [...document.querySelectorAll('#compare img')].map(i => i.src.split('/').pop()),
  alts: [...document.querySelectorAll('#compare img')].map(i => i.alt),
  label: document.querySelector('#compare [data-testid=block-label]').innerText,
})"""


@dataclass
class Snapshot:
    frames: int
    points: int
    status: str
    summary: str
    verdict: list[list[str]]


def look(page: Page) -> Snapshot:
    return Snapshot(**page.evaluate(SNAPSHOT_JS))




@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_app(tmp_path_factory.mktemp("browser") / "runs") as url:
        yield url


def is_external_noise(message: ConsoleMessage) -> bool:
    """A failed request to a host other than this machine (a CDN font, analytics).

    The app must work offline, so such noise is tolerated, never an error from the app's own
    code or its own requests. In the runs so far, nothing has been ignored: Gradio serves its
    fonts itself and analytics are off (GRADIO_ANALYTICS_ENABLED=False).
    """
    host = urlparse(message.location.get("url", "")).hostname
    return host is not None and host not in LOCAL_HOSTS


class Visitors:
    """Opens pages, each in its own browser context (its own Gradio session), and collects
    every console error and uncaught exception they raise."""

    def __init__(self, browser: Browser, app_url: str) -> None:
        self.browser, self.app_url = browser, app_url
        self.errors: list[str] = []
        self.ignored: list[str] = []
        self.pages: list[Page] = []

    def open(self, viewport: dict[str, int] = DESKTOP, query: str = "",
             url: str | None = None) -> Page:
        context = self.browser.new_context(viewport=viewport, accept_downloads=True)
        context.set_default_timeout(PAGE_TIMEOUT_S * 1000)
        context.grant_permissions(["clipboard-read", "clipboard-write"])
        context.add_init_script(TOASTS_JS)
        context.add_init_script(STREAM_JS)
        page = context.new_page()
        self.pages.append(page)
        page.on("console", self._on_console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        page.goto(url or self.app_url + query)
        page.wait_for_selector("#run-button")
        return page

    def error_toasts(self) -> list[str]:
        return [text for page in self.pages if not page.is_closed()
                for text in page.evaluate("window.__errorToasts")]

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            where = message.location.get("url", "")
            noise = is_external_noise(message)
            (self.ignored if noise else self.errors).append(f"{message.text} @ {where}")


@pytest.fixture()
def visitors(browser: Browser, app_url: str) -> Iterator[Visitors]:
    """Fails the test on any console error or error toast from any page it opened."""
    opened = Visitors(browser, app_url)
    yield opened
    if opened.ignored:
        print("ignored external console errors:", *opened.ignored, sep="\n  ")
    toasts = opened.error_toasts()
    for context in browser.contexts:
        context.close()
    assert not opened.errors, "errors in the browser console:\n" + "\n".join(opened.errors)
    assert not toasts, "error toasts:\n" + "\n".join(toasts)


@pytest.fixture()
def page(visitors: Visitors) -> Page:
    return visitors.open()


def start_run(page: Page, photo: Path, steps: int) -> None:
    """Upload the photo (in place of the first example), set the steps, keep the offline
    backend and press Run."""
    page.locator("#upload button[aria-label=Clear]").click()
    page.set_input_files("#upload input[type=file]", photo)
    page.locator("#upload").get_by_text(photo.stem).wait_for()  # the upload has finished
    number = page.locator("#steps input[type=number]")
    number.fill(str(steps))
    number.press("Enter")
    page.wait_for_function(
        f"document.querySelector('#steps input[type=range]').value === '{steps}'")
    assert page.locator("#backend input").input_value() == "Simulated (offline)"
    page.click("#run-button")


def wait_for_status(page: Page, word: str, timeout_s: float = RUN_TIMEOUT_S) -> None:
    status = "(document.querySelector('#status')?.innerText ?? '')"
    page.wait_for_function(f"{status}.includes('{word}')", timeout=timeout_s * 1000)


def finish_event(page: Page, act: Callable[[], object]) -> None:
    """Do `act` (a click) and wait until the gradio event it queued has completed: its
    process_completed message on the page's queue stream, as STREAM_JS records it (the page
    must have been opened with STREAM_JS as an init script)."""
    with page.expect_response(lambda r: "/queue/join" in r.url and r.request.method == "POST"
                              ) as joined:
        act()
    event_id = joined.value.json()["event_id"]
    page.wait_for_function(f"window.__completed.includes({json.dumps(event_id)})")


def screenshot(page: Page, name: str) -> None:
    """Save SCREENSHOTS/<name>.png once what is on the page has drawn.

    Scroll through the page as a visitor would, so lazily loaded images (the strip's thumbnails)
    load, then wait for every image and the plot. An image that failed to load fails the test.
    """
    page.evaluate("""async () => {
      for (let y = 0; y < document.body.scrollHeight; y += window.innerHeight / 2) {
        window.scrollTo(0, y);
        await new Promise(resolve => setTimeout(resolve, 50));
      }
      window.scrollTo(0, 0);
    }""")
    page.wait_for_function("[...document.images].every(image => image.complete)")
    page.locator("#plot .main-svg").first.wait_for()
    broken = page.evaluate(
        "[...document.images].filter(i => i.complete && i.naturalWidth === 0).map(i => i.src)")
    assert not broken, f"images that did not load: {broken}"
    page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


def verdict_by_metric(snapshot: Snapshot) -> dict[str, str]:
    """metric -> the verdict column ("✅ detects", "❌ fooled so far", "… undecided")."""
    return {row[0]: row[VERDICT_COLUMN] for row in snapshot.verdict}


def decided(verdict: str, provisional: bool, fewer: str = "") -> bool:
    """A verdict word, with " so far" exactly while the run goes on towards a checkpoint, and
    a final one read at fewer checkpoints than the paper's saying which (`fewer`: "at step 5
    only")."""
    ending = " so far" if provisional else f" ({fewer})" if fewer else ""
    return verdict.endswith(ending) and verdict.removesuffix(ending).endswith(
        ("detects", "fooled"))


def compare_view(page: Page) -> dict:
    return page.evaluate(COMPARE_JS)


def open_recorded(page: Page, name: str = "dunes-simulated-30") -> Snapshot:
    """Click a recorded chain and wait until its frames, table and summary are drawn."""
    page.locator("#recorded label").filter(has_text=RECORDED_LABELS[name]).click()
    page.wait_for_function("document.querySelectorAll('#strip .strip img').length > 0 && "
                           "document.querySelectorAll('#verdict .virtual-row').length > 0 && "
                           "document.querySelector('#summary').innerText.includes('After')")
    return look(page)


def _in_view_js(selector: str) -> str:
    """Inside the window to within a pixel: layout in fractional pixels leaves an element that
    was scrolled to its top a fraction of a pixel above it (measured: top = -0.14)."""
    return f"""() => {{
      const box = document.querySelector('{selector}')?.getBoundingClientRect();
      return !!box && box.top > -1 && box.bottom < window.innerHeight + 1 && box.height > 0;
    }}"""


def in_view(page: Page, selector: str) -> bool:
    """Whether the element lies entirely inside the window as it is scrolled now."""
    return page.evaluate(_in_view_js(selector))


def wait_in_view(page: Page, selector: str, failure: str, timeout_s: float = 60) -> None:
    """Wait until the element lies entirely inside the window; `failure` if it never does."""
    try:
        page.wait_for_function(_in_view_js(selector), timeout=timeout_s * 1000)
    except PlaywrightTimeout:
        raise AssertionError(failure) from None


def test_a_run_streams_in_frame_by_frame_and_downloads(page: Page, visitors: Visitors,
                                                        photo_path: Path, tmp_path: Path) -> None:
    steps = 5
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate(DRAWN_JS)
    page.evaluate("window.__stream = []")  # from here on: this run's messages
    start_run(page, photo_path, steps)
    page.wait_for_function(f"({SNAPSHOT_JS})().frames >= 3", timeout=RUN_TIMEOUT_S * 1000)
    screenshot(page, "mid-run")  # of whatever the run has reached by then
    wait_for_status(page, "Completed")

    # Every frame arrived, in order, one message after another, each before the run ended:
    # read from gradio's own stream (STREAM_JS), not from looks at a moving page.
    stream = page.evaluate("window.__stream")
    end = next(i for i, message in enumerate(stream) if message["completed"])
    arrival = {}  # step -> the first message that carried it
    for i, message in enumerate(stream):
        for step in message["steps"]:
            arrival.setdefault(step, i)
    print(f"frames by message: {[m['steps'] for m in stream]}; the end at message {end}")
    assert sorted(arrival) == list(range(steps + 1)), f"frames that arrived: {sorted(arrival)}"
    order = [arrival[step] for step in range(steps + 1)]
    assert order == sorted(set(order)), f"frames did not stream in one by one: {order}"
    assert order[-1] < end, f"frames arrived with the run's end: {order}, end {end}"

    # What the page drew (DRAWN_JS): every state, recorded as it was drawn.
    seen = [Snapshot(**drawn) for drawn in page.evaluate("window.__drawn")]
    final = look(page)
    counts = [s.frames for s in seen]
    assert "Completed" in final.status, f"the run did not complete: {final.status!r}"

    # The strip grows one frame at a time, never shrinks, and ends at N + 1 frames.
    assert counts == sorted(counts), f"the strip shrank: {counts}"
    assert final.frames == steps + 1 and counts[-1] == steps + 1
    # The strip was drawn between the first frame and the last, while the run went on.
    assert {c for c in counts if 0 < c < steps + 1}, f"no frame was drawn mid-run: {counts}"

    # The curves gained points while the run went, never lost any, and end with one point per
    # metric per frame: read from the stream's own messages, each holding the curves as sent
    # (a loaded machine's page may draw only some of them).
    points = [message["points"] for message in stream[:end + 1]
              if message["points"] is not None]
    assert points == sorted(points), f"the curves lost points: {points}"
    assert any(0 < n < final.points for n in points), f"the curves did not grow: {points}"
    assert points[-1] == final.points, f"the page drew {final.points} points, sent {points}"
    # The summary states the finding as it grows: provisional mid-run, final at the end.
    assert any(s.summary.startswith("So far (step") for s in seen), [s.summary for s in seen]
    assert final.summary.startswith(f"After {steps} steps, PSNR to the input fell"), final.summary
    # A finished 5-step run: read at step 5 alone, and it says so; never "so far".
    assert "by the paper's test at step 5 only (Δ from step 1 < 0 there;" in final.summary
    assert "of 4 standard metrics (pyiqa's, the kind the paper tests) detect" in final.summary
    assert "this simulation" in final.summary and "so far" not in final.summary
    assert final.points % (steps + 1) == 0 and final.points // (steps + 1) >= len(METRICS) + 1

    verdicts = verdict_by_metric(final)
    assert METRICS | {"psnr (reference)"} <= set(verdicts), verdicts
    # 5 steps, finished: every verdict is final and says it was read at step 5 only.
    assert all(decided(verdicts[m], provisional=False, fewer="at step 5 only")
               for m in METRICS), verdicts
    screenshot(page, "finished")

    # A thumbnail in the strip opens its full frame in a new tab: the newest one, frame N.
    with page.context.expect_page() as opened:
        page.click("#strip .strip a:last-child")
    full = opened.value
    full.wait_for_load_state()
    size = full.evaluate("[document.images[0].naturalWidth, document.images[0].naturalHeight]")
    with Image.open(photo_path) as uploaded:
        assert full.url.endswith(f"step_{steps:03d}.png") and size == list(uploaded.size)
    full.close()

    with page.expect_download() as download_info:
        page.click("#download a[download]")
    archive = tmp_path / "run.zip"
    download_info.value.save_as(archive)
    with zipfile.ZipFile(archive) as zipped:
        # Entries sit under the run's own folder: <run id>/frames/step_000.png.
        run_id = zipped.namelist()[0].split("/", 1)[0]
        files = {name.split("/", 1)[1]: name for name in zipped.namelist()}
        frames = {f"frames/step_{i:03d}.png" for i in range(steps + 1)}
        assert frames | {"scores.csv", "verdict.csv"} <= set(files), sorted(files)
        assert all(zipped.read(files[f]).startswith(b"\x89PNG") for f in frames)
        scores = list(csv.DictReader(io.TextIOWrapper(zipped.open(files["scores.csv"]))))
        assert {int(row["step"]) for row in scores} == set(range(steps + 1))
        assert METRICS <= {row["metric"] for row in scores}

    # The chain as an animation, beside the share link: drawn, and the same file as the one
    # offered for download beside the zip.
    page.wait_for_function("document.querySelector('#animation img')?.naturalWidth > 0")
    shown_animation = page.get_attribute("#animation a[download]", "href") or ""
    assert shown_animation.endswith(".webp"), shown_animation
    assert f"/{run_id}/" in unquote(shown_animation), shown_animation

    # Share the view comparing frame 3: arrow keys move the compared frame, the share control
    # copies the link, and a stranger opens it cold on a phone.
    page.focus("#compare-step input[type=range]")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("document.querySelector('#share a')?.getAttribute('href')"
                           ".endsWith('frame=3')")
    page.click("#share button")
    page.locator("#share").get_by_text("Copied").wait_for()
    link = page.evaluate("navigator.clipboard.readText()")
    assert link == f"{visitors.app_url}?run={run_id}&frame=3", link

    phone = visitors.open(PHONE, url=link)
    wait_for_status(phone, "Completed", timeout_s=PAGE_TIMEOUT_S)
    phone.wait_for_function(f"({COMPARE_JS})().label.startsWith('◀ input · step 3 ▶')")
    phone.wait_for_function(f"({SNAPSHOT_JS})().points === {final.points}")  # plot drawn
    shared = look(phone)
    assert shared.frames == steps + 1 and shared.points == final.points
    assert shared.summary == final.summary
    assert verdict_by_metric(shared) == verdicts
    assert compare_view(phone)["images"] == ["step_000.png", "step_003.png"]
    # The scroll to the result follows the load: waited for, however slow the machine.
    wait_in_view(phone, "#summary", "the shared link did not scroll to the result")
    screenshot(phone, "phone")

    # Found again under Past runs: its thumbnail says when, what, how far and how it ended,
    # and a click on it brings it back over a recording opened since.
    open_recorded(page)
    page.get_by_text("Past runs", exact=True).click()
    finish_event(page, page.get_by_role("button", name="↻").click)
    past = page.locator("#past-runs .thumbnail-item").first
    caption = past.inner_text()
    assert re.fullmatch(rf"\d+ \w+ \d{{4}} \d\d:\d\d UTC · Simulated \(offline\).* · {steps} "
                        r"steps · ✅ completed", caption.strip()), caption
    past.click()
    page.wait_for_function(f"document.querySelectorAll('#strip .strip img').length === "
                           f"{steps + 1}")
    page.wait_for_function("document.querySelector('#share a')?.getAttribute('href')"
                           f".includes('run={run_id}&')")


def test_stop_keeps_the_frames_made(page: Page, photo_path: Path) -> None:
    start_run(page, photo_path, 40)
    # Frame 1 is *scored* (its points are on a curve), not only shown: Stop drops a frame whose
    # scoring is still going on, and on a loaded machine the strip shows frame 1 long before.
    page.wait_for_function("""() => {
      const graph = document.querySelector('#plot .js-plotly-plot');
      return ((graph && graph.data) || []).some(
        trace => Array.from(trace.y || []).filter(v => v !== null).length >= 2);
    }""", timeout=RUN_TIMEOUT_S * 1000)
    page.click("#stop-button")
    wait_for_status(page, "Stopped", timeout_s=60)
    stopped = look(page)
    assert 2 <= stopped.frames < 41
    # "Stopped after step k by the user": the strip shows frames 0..k; the reason said once.
    assert f"Stopped after step {stopped.frames - 1} by the user." in stopped.status, \
        stopped.status
    assert stopped.status.lower().count("stopped") == 1, stopped.status
    # The run's last screen offers its zip (page.run_tab.handlers.stream): after it, nothing of this
    # run can reach the page, so what it shows then is what Stop kept.
    page.wait_for_selector("#download a[download]", timeout=RUN_TIMEOUT_S * 1000)
    later = look(page)
    assert later.frames == stopped.frames
    assert "Stopped" in later.status


def test_a_chain_opened_while_the_run_streams_leaves_the_runs_view(page: Page,
                                                                  photo_path: Path) -> None:
    """One view, one stream: a recording asked for while the visitor's own run streams does
    not write into the run's view, and the page says why; once the run ends, it opens."""
    start_run(page, photo_path, MAX_STEPS)  # long enough to be streaming when asked
    page.wait_for_function("document.querySelectorAll('#strip .strip img').length >= 2",
                           timeout=RUN_TIMEOUT_S * 1000)
    page.locator("#recorded label").filter(has_text=RECORDED_LABELS["moss-simulated-30"]
                                           ).click()
    page.locator(".toast-body").get_by_text("Your run is streaming into this view").wait_for()
    seen = look(page)
    assert f" of {MAX_STEPS}" in seen.status, seen.status
    assert not seen.summary.startswith("After 30 steps"), seen.summary
    page.click("#stop-button")
    wait_for_status(page, "Stopped after step")
    page.wait_for_selector("#download a[download]", timeout=RUN_TIMEOUT_S * 1000)  # its end
    page.locator("#recorded label").filter(has_text=RECORDED_LABELS["dunes-simulated-30"]
                                           ).click()
    page.wait_for_function("document.querySelectorAll('#strip .strip img').length === 31")
    wait_for_status(page, "Completed · step 30 of 30", timeout_s=PAGE_TIMEOUT_S)


def test_a_recorded_chain_opens_at_once(page: Page) -> None:
    assert look(page).frames == 0
    first = open_recorded(page)
    # All 31 frames and the verdict arrive in one update, not streamed in.
    assert first.frames == 31
    # 31 thumbnails overflow the strip sideways; it shows the newest, frame 30, in full.
    page.wait_for_function("""() => {
      const strip = document.querySelector('#strip .strip');
      const newest = strip.lastElementChild.getBoundingClientRect();
      const box = strip.getBoundingClientRect();
      return strip.scrollWidth > strip.clientWidth && newest.right <= box.right + 1
             && newest.left >= box.left - 1;
    }""")
    verdicts = verdict_by_metric(first)
    assert METRICS | {"psnr (reference)"} <= set(verdicts), verdicts
    assert all(decided(verdicts[m], provisional=False) for m in METRICS), verdicts
    assert "After 30 steps, PSNR to the input fell" in first.summary, first.summary
    wait_for_status(page, "Completed", timeout_s=PAGE_TIMEOUT_S)
    # Resume on a complete run says so, and leaves the run on screen as it was.
    page.click("#resume-button")
    page.get_by_text("This run is complete: all 30 steps are made.").wait_for()
    after = look(page)
    assert "Completed · step 30 of 30" in after.status and after.frames == 31, after.status


def magnifier_label(page: Page) -> str:
    return page.locator("#magnifier [data-testid=block-label]").first.inner_text()


def test_the_compare_slider_follows_the_arrow_keys_and_the_magnifier_follows_it(
        page: Page) -> None:
    open_recorded(page)
    page.wait_for_function(f"({COMPARE_JS})().label.startsWith('◀ input · step 30 ▶')")
    shown = compare_view(page)
    assert shown["images"] == ["step_000.png", "step_030.png"]
    assert shown["alts"][0].startswith("the input") and "frame 30" in shown["alts"][1]
    # The magnifier: the same crop of both, 3x, side by side, where they differ most.
    page.wait_for_function("document.querySelector('#magnifier img')?.naturalWidth > 0")
    assert page.evaluate("document.querySelector('#magnifier img').naturalWidth") == 2 * 3 * 96 + 6
    assert "step 30, where they differ most" in magnifier_label(page)
    assert all(page.evaluate("[...document.querySelectorAll('#frame img, #magnifier img')]"
                             ".map(i => i.alt.length > 0)"))

    page.focus("#compare-step input[type=range]")
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"({COMPARE_JS})().label.startsWith('◀ input · step 27 ▶') && "
                           f"({COMPARE_JS})().images.some(n => n.endsWith('step_027.png'))")
    assert "frame 27" in compare_view(page)["alts"][1]
    page.wait_for_function("document.querySelector('#magnifier [data-testid=block-label]')"
                           ".innerText.includes('step 27')")
    # A click on the newest frame (its middle) moves the magnifier to that spot.
    page.locator("#frame img").click()
    page.wait_for_function("document.querySelector('#magnifier [data-testid=block-label]')"
                           ".innerText.includes('where you clicked')")
    assert "step 27" in magnifier_label(page)


def contrast(colour: str, background: str) -> float:
    """WCAG 2 contrast ratio of two computed "rgb(r, g, b)" colours."""
    def luminance(css: str) -> float:
        channels = [float(c) / 255 for c in re.findall(r"[\d.]+", css)[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    light, dark = sorted((luminance(colour), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


# Text and its own background (white where it has none), for the help and label text.
COLOURS_JS = """selector => [...document.querySelectorAll(selector)].map(e => {
  const style = getComputedStyle(e);
  const clear = style.backgroundColor === 'rgba(0, 0, 0, 0)';
  const background = clear ? 'rgb(255, 255, 255)' : style.backgroundColor;
  return [e.innerText.slice(0, 30), style.color, background];
})"""


@pytest.mark.parametrize("viewport", [PHONE, PROJECTOR, WIDE], ids=["390", "1280x720", "1400"])
def test_the_result_reads_at_every_size(visitors: Visitors, viewport: dict[str, int]) -> None:
    """A recorded chain at each width: no console error (the fixture), help text readable,
    and at 1280x720 the finding, the frames and the curves on one screen."""
    page = visitors.open(viewport)
    # The example pictures are pictures (not file names), all in view without scrolling
    # sideways, and a click on one makes it the upload.
    page.locator("#examples img").first.wait_for()
    gallery = page.evaluate("""() => {
      const grid = document.querySelector('#examples .grid-container');
      return {shown: grid.querySelectorAll('img').length,
              overflow: grid.scrollWidth - grid.clientWidth};
    }""")
    assert gallery["shown"] >= 4 and gallery["overflow"] <= 1, gallery
    # The gallery's first picture is the app's default example (a photograph with texture).
    from page import content

    first = Path(content.EXAMPLES[0]).stem
    assert first == Path(content.DEFAULT_EXAMPLE).stem
    page.locator("#examples img").first.click()
    page.locator("#upload").get_by_text(first).wait_for()
    texts = page.evaluate(COLOURS_JS, "#backend .info-text, #backend [data-testid=block-info]")
    assert texts and all(contrast(c, b) >= 4.5 for _, c, b in texts), texts
    open_recorded(page)
    page.evaluate("document.querySelector('#summary').scrollIntoView({block: 'start'})")
    page.locator("#plot .main-svg").first.wait_for()
    if viewport == PROJECTOR:
        for part in ("#summary", "#compare", "#compare-step", "#plot"):
            assert in_view(page, part), f"{part} is not on the 1280x720 screen with the rest"
    if viewport == PHONE:  # nothing runs into anything, and a table row is a line or two
        boxes = page.evaluate(PLOT_BOXES_JS)
        ticks, legend = boxes["ticks"], boxes["legend"]
        assert all(a[2] <= b[0] for a, b in zip(ticks, ticks[1:], strict=False)), \
            f"ticks collide: {ticks}"
        assert max(t[3] for t in [*ticks, boxes["title"]]) <= legend[1], boxes
        rows = page.evaluate("[...document.querySelectorAll('#verdict [role=row].virtual-row')]"
                             ".map(row => row.getBoundingClientRect().height)")
        assert rows and sorted(rows)[len(rows) // 2] <= 60, f"verdict rows {rows} px tall"
        # The first look's picture at a height a phone reads (swiped sideways), its curves
        # left to the result's.
        tall = page.evaluate("document.querySelector('#first-look-picture img')"
                             ".getBoundingClientRect().height")
        assert tall >= 150, f"the first look's picture is {tall} px tall on a phone"
        assert not page.locator("#first-look-plot").is_visible()
    name = {PHONE["width"]: "phone-recorded", PROJECTOR["width"]: "projector",
            WIDE["width"]: "wide"}[viewport["width"]]
    if viewport == PROJECTOR:  # what a projector shows once scrolled to the result
        page.wait_for_function("[...document.images].every(image => image.complete)")
        page.screenshot(path=SCREENSHOTS / "projector-1280x720.png")
    else:
        screenshot(page, name)


# The main chart's step labels, its "step" title and its legend, each as [left, top, right,
# bottom] on the page, the labels from left to right.
PLOT_BOXES_JS = """() => {
  const box = e => {
    const r = e.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  };
  const plot = document.querySelector('#plot');
  return {ticks: [...plot.querySelectorAll('.xtick text')].map(box).sort((a, b) => a[0] - b[0]),
          title: box(plot.querySelector('.g-xtitle text')),
          legend: box(plot.querySelector('.legend'))};
}"""


def on_first_screen(page: Page, selector: str) -> bool:
    """Whether the element lies inside the window before any scrolling (above the fold)."""
    return page.evaluate(f"""() => {{
      const box = document.querySelector('{selector}').getBoundingClientRect();
      return box.height > 0 && box.top + window.scrollY >= 0
             && box.bottom + window.scrollY <= window.innerHeight;
    }}""")


def starts_in_view(page: Page, selector: str) -> bool:
    """Whether the element's top edge is on screen (a long result need not fit whole)."""
    return page.evaluate(f"""() => {{
      const box = document.querySelector('{selector}').getBoundingClientRect();
      return box.height > 0 && box.top >= -1 && box.top < window.innerHeight * 0.5;
    }}""")


def current_axe() -> Axe:
    """axe-core `AXE_VERSION` from node_modules/; missing or another version: fail in CI, skip
    elsewhere, saying how to install it."""
    if AXE_JS.is_file() and AXE_JS.read_text()[:40].startswith(f"/*! axe v{AXE_VERSION}\n"):
        return Axe.from_file(AXE_JS)
    message = (f"axe-core {AXE_VERSION} not found at {AXE_JS}: `npm install --no-save "
               f"axe-core@{AXE_VERSION}` in the repository (scripts/test.sh does it)")
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


# The page has settled: every event it queued has completed (STREAM_JS's record; an event still
# to answer would redraw what axe reads), none is pending, and no transition or animation with
# an end is running (a Svelte fade is a CSS animation; a spinner's, endless, is not waited for).
SETTLED_JS = """(window.__joined ?? []).every(id => window.__completed.includes(id))
  && !document.querySelector('.pending')
  && !document.getAnimations().some(a => a.playState === 'running'
                                        && a.effect?.getComputedTiming().endTime !== Infinity)"""


def serious_axe_violations(page: Page) -> list[str]:
    """axe-core's serious and critical findings on the page once it has settled (`SETTLED_JS`):
    gradio draws a component waiting for its event at a fifth of its opacity, as it should, and
    fades it back (its Markdown wrapper has `transition: all .15s`); read mid-fade, the status
    line's text is too faint, which is no fault of the page."""
    # The theme's stylesheet has applied the scheme's colours: on a loaded machine axe once read
    # the first screen in dark mode before it had, subdued text in its light-mode colour.
    subdued = {"light": THEME.body_text_color_subdued, "dark": THEME.body_text_color_subdued_dark}
    page.wait_for_function(
        f"(({subdued})[document.body.classList.contains('dark') ? 'dark' : 'light'])"
        ".toLowerCase() === getComputedStyle(document.body)"
        ".getPropertyValue('--body-text-color-subdued').trim().toLowerCase()")
    # The page's own script (page/style.py) names what gradio leaves unnamed; on a loaded
    # machine it may start after the components are drawn.
    page.wait_for_function("document.body.dataset.pageScript === 'ready'", timeout=60000)
    page.wait_for_function(SETTLED_JS, timeout=60000)
    found = current_axe().run(page).response["violations"]
    # Each finding with axe's own account of its first element (for contrast: the two colours
    # and the ratio it computed), so that a failure on a loaded CI machine can be read.
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:4]}; "
            f"{v['nodes'][0].get('failureSummary', '')}"
            for v in found if v["impact"] in ("serious", "critical")]


def tab_stops_to(page: Page, selector: str, limit: int = 40) -> int:
    """How many presses of Tab, from the top of the page, reach the element."""
    page.evaluate("document.activeElement?.blur()")
    page.click("#claim h1")  # where a visitor's Tab starts: the top of the page
    passed = []
    for stop in range(1, limit + 1):
        page.keyboard.press("Tab")
        if page.evaluate(f"!!document.activeElement?.closest('{selector}')"):
            return stop
        passed.append(page.evaluate("(e => (e.closest('[id]')?.id ?? '') + ' ' + e.tagName)"
                                    "(document.activeElement)"))
    print(f"{selector} not reached in {limit} tab stops: {passed}")
    return limit + 1


# The compared frame: the picture the slider shows on its right, as the browser loaded it.
COMPARED_JS = """() => {
  const image = document.querySelectorAll('#compare img')[1];
  return image && image.complete ? {src: decodeURIComponent(image.src),
                                    width: image.naturalWidth} : null;
}"""


def every_step_shows_its_full_frame(page: Page, last: int, width: int) -> None:
    """Walk the compare slider from the last step to 0 with the arrow keys; each step's picture
    is its full frame (never the thumbnail, whose file lives under .thumbs/)."""
    page.focus("#compare-step input[type=range]")
    for step in range(last, -1, -1):
        if step < last:
            page.keyboard.press("ArrowLeft")
        page.wait_for_function(
            f"(() => {{ const c = ({COMPARED_JS})(); return c && c.width > 0 && "
            f"c.src.endsWith('step_{step:03d}.png'); }})()", timeout=60000)
        shown = page.evaluate(COMPARED_JS)
        # Full size: the default profile crops now and then, as Banana100's chains do (the dunes
        # recording is 964 px wide by step 30, as tests/test_recorded.py reads it); a thumbnail
        # is 256 px.
        assert "/.thumbs/" not in shown["src"] and shown["width"] >= 0.88 * width, (step, shown)
        assert "thumbnail" not in compare_view(page)["label"], step


# The first screen's curves: points per curve, as the page drew them.
FIRST_LOOK_POINTS_JS = """() => {
  const graph = document.querySelector('#first-look-plot .js-plotly-plot');
  return ((graph && graph.data) || []).map(
    trace => Array.from(trace.y || []).filter(v => v !== null).length);
}"""


def test_the_first_screen_shows_the_decay_before_any_click(visitors: Visitors) -> None:
    """At 1280x720, with nothing clicked or scrolled: the claim, the first recording (the
    damage, not the control) as its input beside a late copy with the magnified crops, its
    curves and a headline of at most 30 words, and the actions; its button opens it."""
    page = visitors.open(PROJECTOR)
    page.wait_for_function("document.querySelector('#first-look-picture img')?.naturalWidth > 0")
    page.wait_for_function(f"({FIRST_LOOK_POINTS_JS})().length > 0")
    for part in ("#claim", "#first-look-headline", "#first-look-picture img",
                 "#first-look-plot .main-svg", "#recorded", "#run-button"):
        assert on_first_screen(page, part), f"{part} is below the fold at 1280x720"
    headline = page.inner_text("#first-look-headline").strip()
    assert headline.startswith("After 30 steps, PSNR to the input fell"), headline
    assert "standard metrics detect" in headline and len(headline.split()) <= 30, headline
    label = page.inner_text("#first-look-picture [data-testid=block-label]")
    assert label.startswith(RECORDED_LABELS["dunes-simulated-30"]), label
    assert "the input | step 30 |" in label and "control" not in label, label
    assert set(page.evaluate(FIRST_LOOK_POINTS_JS)) == {31}  # every curve, steps 0-30
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "first-screen-1280x720.png")
    # The first recording in the list above is the same chain, every frame of it.
    assert open_recorded(page).frames == 31 and look(page).summary.startswith(headline)


@pytest.mark.parametrize("viewport", [PROJECTOR, PHONE], ids=["1280x720", "390x844"])
def test_the_default_flow_in_the_lecture_hall(visitors: Visitors,
                                              viewport: dict[str, int]) -> None:
    page = visitors.open(viewport)
    # The first screen: the claim, a recorded chain and Run, with nothing scrolled.
    for part in ("#claim", "#recorded", "#run-button"):
        assert on_first_screen(page, part), f"{part} is below the fold at {viewport}"
    assert serious_axe_violations(page) == []  # once the page's own load events settle
    assert tab_stops_to(page, "#run-button", MAX_TAB_STOPS - 1) < MAX_TAB_STOPS

    # A recorded chain: the result comes into view at once, and every step is a full frame.
    page.locator("#recorded label").filter(has_text=RECORDED_LABELS["dunes-simulated-30"]).click()
    assert starts_in_view(page, "#status"), "the click did not bring the result into view"
    page.wait_for_function("document.querySelector('#summary').innerText.includes('After')",
                           timeout=60000)
    assert starts_in_view(page, "#status") or starts_in_view(page, "#summary")
    with Image.open(EXAMPLES / "clean-dunes.png") as start:
        recorded_width = 1024 if start.width >= start.height else round(
            1024 * start.width / start.height)
    if viewport == PROJECTOR:
        every_step_shows_its_full_frame(page, 30, recorded_width)
    else:  # a phone checks one dropped step: the walk is the projector's
        page.focus("#compare-step input[type=range]")
        for _ in range(3):
            page.keyboard.press("ArrowLeft")
        page.wait_for_function(f"({COMPARED_JS})()?.src.endsWith('step_027.png')",
                               timeout=60000)
        assert page.evaluate(COMPARED_JS)["width"] >= 0.95 * recorded_width
    assert serious_axe_violations(page) == []
    for part in ("#compare-step input[type=range]", "#share button"):
        assert tab_stops_to(page, part, MAX_TAB_STOPS - 1) < MAX_TAB_STOPS, part

    # Run: the default picture and settings; the result in view; Stop ends it (an event: how
    # fast is the machine's business, measured by benchmarks, never asserted here).
    page.click("#run-button")
    assert starts_in_view(page, "#status"), "Run did not bring the result into view"
    page.wait_for_function("document.querySelectorAll('#strip .strip img').length >= 2 && "
                           "document.querySelector('#status').innerText.includes('Running')",
                           timeout=RUN_TIMEOUT_S * 1000)
    page.click("#stop-button")
    wait_for_status(page, "Stopped after step")
    stopped = look(page)
    assert f"Stopped after step {stopped.frames - 1} by the user" in stopped.status, \
        stopped.status
    assert starts_in_view(page, "#status") or starts_in_view(page, "#summary")


# A chart's colours as drawn: its paper and plot area, a tick label's, the first curve's (the
# reference PSNR) and the page's background behind it (the first ancestor that paints one).
CHART_COLOURS_JS = """selector => {
  const chart = document.querySelector(selector);
  let behind = chart;
  while (behind && ['rgba(0, 0, 0, 0)', 'transparent'].includes(
      getComputedStyle(behind).backgroundColor)) behind = behind.parentElement;
  return {paper: getComputedStyle(chart.querySelector('.main-svg')).backgroundColor,
          area: getComputedStyle(chart.querySelector('.bg')).fill,
          text: getComputedStyle(chart.querySelector('.xtick text')).fill,
          psnr: getComputedStyle(chart.querySelector('.scatterlayer .trace .js-line')).stroke,
          page: behind ? getComputedStyle(behind).backgroundColor : 'rgb(255, 255, 255)'};
}"""


@pytest.mark.parametrize("viewport", [PROJECTOR, PHONE], ids=["1280x720", "390x844"])
def test_the_page_reads_in_dark_mode(visitors: Visitors, viewport: dict[str, int]) -> None:
    """gradio follows the visitor's colour scheme (`?__theme=dark`, or the system's): the
    page's own colours are the theme's variables, so axe finds no serious or critical fault
    in dark mode either, on the first screen and with a recorded chain open; the charts too."""
    page = visitors.open(viewport, query="?__theme=dark")
    assert page.evaluate("document.body.classList.contains('dark')")
    assert serious_axe_violations(page) == []
    page.locator("#recorded label").filter(has_text=RECORDED_LABELS["dunes-simulated-30"]).click()
    page.wait_for_function("document.querySelector('#summary').innerText.includes('After')",
                           timeout=60000)
    assert serious_axe_violations(page) == []
    # The charts follow the scheme: no white box; their text and the references' curves (PSNR
    # black in light mode) read on the page's own background.
    for chart in ("#plot", "#first-look-plot"):
        if viewport == PHONE and chart == "#first-look-plot":
            continue  # a phone leaves the first screen's curves out
        painted = page.evaluate(CHART_COLOURS_JS, chart)
        clear = ("transparent", "rgba(0, 0, 0, 0)")
        assert painted["paper"] in clear and painted["area"] in clear, painted
        assert contrast(painted["text"], painted["page"]) >= 4.5, painted
        assert contrast(painted["psnr"], painted["page"]) >= 3, painted  # WCAG 1.4.11
    if viewport == PROJECTOR:
        page.evaluate("document.querySelector('#summary').scrollIntoView({block: 'start'})")
        page.wait_for_function("[...document.images].every(image => image.complete)")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENSHOTS / "dark-1280x720.png")
