"""The Vote tab: "Which copy looks better?" Two frames of a run side by side, full size, left
and right drawn at random, their steps hidden until the vote is cast (`pairs`), with a shared
magnifier (the same crop of both, enlarged, where they differ most or where a picture is
clicked: `verdict.magnifier`). A class link
`?vote=<run>` opens the same view alone, phone-first (two pictures, two big buttons); the
teacher's side offers that link with a QR code for the projector, and once started it reads
the votes every few seconds and redraws the count, the Run tab's curves (the people line) and
its verdict table (the people row).

Pictures are sent as fresh images, not as the run's files, so their names never give a step
away.
"""

from __future__ import annotations

import html
from typing import Any

import gradio as gr
import segno
from PIL import Image

from banana_space.chain.remake import remake_frame
from banana_space.store.run import Run
from banana_space.store.runids import copy_in
from banana_space.verdict.magnifier import ZOOM, box_around, largest_difference_box, side_by_side
from banana_space.view import RunView
from banana_space.votes import PairTally, tally
from page.door import join
from page.door.access import REFUSALS, Refusal, confined, refusal
from page.door.identity import visitor_of
from page.run_tab.handlers import marked_plot, reopen
from page.run_tab.outputs import page_link
from page.settings import RECORDED, SETTINGS
from page.vote_tab import casting
from page.vote_tab.pairs import PairOnScreen, nth_pair

REFRESH_S = 3.0  # the teacher's count: new votes show within this
# The lesson's chain: a bundled recording of simulated Nano Banana Pro-like static, 30 steps
# (every checkpoint of the paper), whose metrics' verdicts are on record before anyone votes.
LESSON_RUN = "moss-simulated-30"
LESSON = ("**Lesson: vote first, then look at the metrics.** The class votes on a recorded "
          "chain, each on their own phone, without seeing a number: which copy looks better? "
          "Then **Reveal the metrics** opens the chain with its curves and verdict table, the "
          "room's own line and row beside every metric's.")
# A class link shows the voting view alone (`vote-only`, style.VOTE_CSS: everything else stays under
# it, hidden from Tab and screen readers too, all but the toasts that say why a vote was
# refused). Each picture is named by its side only (its step stays hidden until the vote), for
# a reader that cannot see it; gradio draws it inside an unnamed button.
VOTE_ONLY_JS = """() => {
  if (new URLSearchParams(window.location.search).has('vote'))
    document.body.classList.add('vote-only');
  const names = {left: 'the left copy', right: 'the right copy',
                 magnifier: 'the same crop of both copies, enlarged: left, then right'};
  const name = () => Object.entries(names).forEach(([part, said]) => {
    document.querySelectorAll(`#vote-${part} img`).forEach(img => {
      if (img.alt !== said) img.alt = said;
    });
    document.querySelectorAll(`#vote-${part} .image-container button`).forEach(button => {
      if (button.getAttribute('aria-label') !== said) button.setAttribute('aria-label', said);
    });
  });
  new MutationObserver(name).observe(document.querySelector('#vote-panel') ?? document.body,
    {subtree: true, childList: true, attributes: true, attributeFilter: ['src', 'alt']});
  name();
}"""
PLUMBING = join.PLUMBING
# `show_pair`'s: run id, pair, the two pictures, the prompt, three buttons, the magnifier
PAIR_OUTPUTS = 9


def qr_svg(url: str) -> str:
    """`url` as a QR code (SVG, inline) that a phone reads from the back of a lecture hall."""
    return segno.make(url, error="m").svg_inline(scale=8, border=2)


def tally_table(pairs: list[PairTally]) -> str:
    """The teacher's count, in Markdown; nothing about any voter."""
    if not pairs:
        return "**No votes yet.** Votes appear here as they arrive."
    rows = ["| pair | votes | preferred the earlier step | 95% interval |", "|---|---|---|---|"]
    for pair in pairs:
        low, high = pair.interval
        rows.append(f"| step {pair.a} vs {pair.b} | {pair.n} | {pair.prefer_a} "
                    f"({pair.share_a:.0%}) | {low:.0%}–{high:.0%} |")
    return f"**{sum(p.n for p in pairs)} votes**\n\n" + "\n".join(rows)


def _picture(run: Run, step: int) -> Image.Image:
    remake_frame(run.path, step)  # a recording's dropped frame, at full size (else its thumbnail)
    with Image.open(run.shown_frame(step)) as image:
        return image.convert("RGB")


def _pictures(run: Run, shown: PairOnScreen) -> tuple[Image.Image, Image.Image]:
    """The pair's two pictures (left, right) at one size: where they differ (a frame kept only
    as a thumbnail, a copy reshaped), the larger is brought down to the smaller, so that no
    picture gives itself away by its sharpness or its shape."""
    left, right = (_picture(run, step) for step in shown.steps())
    if left.size != right.size:
        size = min(left.size, right.size, key=lambda side: side[0] * side[1])
        left, right = (p if p.size == size else p.resize(size, Image.Resampling.LANCZOS)
                       for p in (left, right))
    return left, right


def show_pair(run_id: str, index: int) -> list[Any]:
    """The voter's `index`-th pair of a run, as the `PAIR_OUTPUTS` outputs."""
    run, last = casting.openable(run_id)
    made = [step for step in range(last + 1) if run.has_frame(step)]
    shown = nth_pair(made, index)
    if shown is None:
        raise Refusal("This run has too few frames to vote on yet.")
    left, right = _pictures(run, shown)
    return [run.id, shown.text,
            gr.Image(left, label="left", show_label=False),
            gr.Image(right, label="right", show_label=False),
            "**Which copy looks better?** Pick one: the steps are shown once you have voted.",
            gr.Button(interactive=True), gr.Button(interactive=True), gr.Button(visible=False),
            _magnified(left, right, largest_difference_box(left, right), "where they differ most")]


def _magnified(left: Image.Image, right: Image.Image, box: tuple[int, int, int, int],
               where: str) -> Any:
    """The same crop of both pictures, enlarged: the shared magnifier."""
    return gr.Image(side_by_side(left, right, box),
                    label=f"Magnifier {ZOOM}×: left | right, {where} (click a picture to move it)")


def zoom_at(run_id: str, shown_text: str, event: gr.SelectData) -> Any:
    """A click on either picture moves the shared magnifier there, on both."""
    shown = PairOnScreen.read(shown_text)
    if shown is None or not event.index:
        return gr.skip()
    run, _ = casting.openable(run_id)
    left, right = _pictures(run, shown)
    box = box_around((event.index[0], event.index[1]), left.size)
    return _magnified(left, right, box, "where you clicked")


def _vote(run_id: str, shown_text: str, left: bool, request: gr.Request) -> list[Any]:
    shown = PairOnScreen.read(shown_text)
    if shown is None:
        raise Refusal("Open a pair first.")
    _, pair = casting.cast(visitor_of(request), run_id, shown.earlier, shown.later,
                           shown.choice(left))
    left_step, right_step = shown.steps()
    chosen = left_step if left else right_step
    low, high = pair.interval
    said = (f"You chose **step {chosen}** ({'left' if left else 'right'}): left was step "
            f"{left_step}, right was step {right_step}. So far {pair.prefer_a} of {pair.n} "
            f"voters preferred step {pair.a} (95% interval {low:.0%}–{high:.0%}).")
    return [gr.Image(label=f"step {left_step}", show_label=True),
            gr.Image(label=f"step {right_step}", show_label=True), said,
            gr.Button(interactive=False), gr.Button(interactive=False),
            gr.Button(visible=True)]


def vote_left(run_id: str, shown: str, request: gr.Request) -> list[Any]:
    return _vote(run_id, shown, True, request)


def vote_right(run_id: str, shown: str, request: gr.Request) -> list[Any]:
    return _vote(run_id, shown, False, request)


def next_pair(run_id: str, shown_text: str) -> list[Any]:
    shown = PairOnScreen.read(shown_text)
    return show_pair(run_id, shown.index + 1 if shown else 0)


def open_vote_link(request: gr.Request) -> list[Any]:
    """`?vote=<id>` opens the voting view of that run (alone, `VOTE_ONLY_JS`)."""
    run_id = request.query_params.get("vote")
    if not run_id:
        return [gr.skip()] * (1 + PAIR_OUTPUTS)
    return [gr.Tabs(selected="vote"), *show_pair(run_id, 0)]


def start_class_vote(run_id: str | None, request: gr.Request) -> list[Any]:
    """The class link of the run open in the Run tab, its QR code and its count so far; the
    count then refreshes every `REFRESH_S` seconds."""
    if not run_id:
        raise Refusal("Open or run a chain in the Run tab first: the class votes on it.")
    run, _ = casting.openable(run_id)
    url = page_link(request, f"vote={run.id}")  # the class's voting view
    link = (f"Class link: <a href=\"{html.escape(url)}\" target=\"_blank\" rel=\"noopener\">"
            f"{html.escape(url)}</a>")
    return [run.id, f"<p>{link}</p>{qr_svg(url)}", tally_table(run.ledger().pairs()), "",
            gr.Timer(active=True), gr.Accordion(open=True)]


def start_lesson(request: gr.Request) -> list[Any]:
    """The lesson: the recording copied in, its first pair on this screen, its class link and
    count for the room, and the reveal offered."""
    run = copy_in(RECORDED / LESSON_RUN, SETTINGS.runs_root)
    return [gr.Tabs(selected="vote"), *show_pair(run.id, 0),
            *start_class_vote(run.id, request), gr.Button(visible=True), LESSON]


def reveal(run_id: str | None) -> Any:
    """The metrics' verdicts beside the room's: the voted run opened in the Run tab."""
    if not run_id:
        raise Refusal("Start a class vote first.")
    return reopen(run_id, False)


def refresh(run_id: str, seen: str, shown_run: str | None, step: float, raw: bool
            ) -> list[Any]:
    """The teacher's count, and where new votes came, the Run tab's curves and verdict table
    while it shows the voted run (in the lesson, not before the reveal)."""
    if not run_id:
        return [gr.skip()] * 4
    run = confined(run_id)
    try:
        votes = run.ledger().votes()
        pairs = tally(votes)
        count = str(len(votes))  # votes cast: a changed vote redraws too, though n stays
        if count == seen:
            return [gr.skip()] * 4
        if shown_run != run.id:
            return [tally_table(pairs), count, gr.skip(), gr.skip()]
        verdict = RunView.from_saved(run.load()).screen().verdict
    except REFUSALS as error:
        raise refusal(error) from None
    return [tally_table(pairs), count, marked_plot(run.id, step, raw), verdict]


def build(demo: gr.Blocks, tabs: gr.Tabs, run_tab: Any, lesson: gr.Button) -> None:
    """The Vote tab inside the page's `tabs`; `run_tab` is the Run tab's components (its run
    id, curves, verdict table, compared step and raw switch), which the teacher's count
    redraws and the lesson's reveal fills; `lesson` the Compare tab's button that starts the
    lesson "Vote first, then look at the metrics"."""
    with gr.Tab("Vote", id="vote", elem_id="vote-tab"):
        with gr.Column(elem_id="vote-panel"):
            vote_run, shown = gr.Textbox(visible=False), gr.Textbox(visible=False)
            prompt = gr.Markdown("Open a run in the Run tab, then press **Vote on it**: which "
                                 "copy looks better, to your own eyes?", elem_id="vote-reveal")
            with gr.Row(equal_height=True):
                left = gr.Image(show_label=False, interactive=False, format="png",
                                elem_id="vote-left", buttons=["fullscreen"])
                right = gr.Image(show_label=False, interactive=False, format="png",
                                 elem_id="vote-right", buttons=["fullscreen"])
            with gr.Row():
                left_button = gr.Button("⬅ Left looks better", variant="primary",
                                        elem_classes="vote-button", elem_id="vote-left-button")
                right_button = gr.Button("Right looks better ➡", variant="primary",
                                         elem_classes="vote-button", elem_id="vote-right-button")
            next_button = gr.Button("Next pair", visible=False, elem_id="vote-next")
            magnifier = gr.Image(label="Magnifier", interactive=False, format="png",
                                 elem_id="vote-magnifier", buttons=[])
        start = gr.Button("Vote on the run open in the Run tab", elem_id="vote-start")
        with gr.Accordion("Run a class vote (for the teacher)", open=False,
                          elem_id="class-vote") as class_vote:
            gr.Markdown("The class votes on the run open in the Run tab, each on their own "
                        "phone; the count, the people line on the curves and the people row "
                        "in the verdict table follow the votes as they arrive.")
            class_button = gr.Button("Show the class link and QR code", elem_id="class-start")
            class_run, seen = gr.Textbox(visible=False), gr.Textbox(visible=False)
            qr = gr.HTML(elem_id="class-qr")
            count = gr.Markdown(elem_id="class-count")
            lesson_text = gr.Markdown(elem_id="vote-lesson")
            reveal_button = gr.Button("Reveal the metrics", visible=False, variant="primary",
                                      elem_id="vote-reveal-metrics")
    timer = gr.Timer(REFRESH_S, active=False)
    pair_outputs = [vote_run, shown, left, right, prompt, left_button, right_button,
                       next_button, magnifier]
    cast_outputs = [left, right, prompt, left_button, right_button, next_button]
    start.click(lambda run_id: show_pair(run_id, 0), run_tab.run_id, pair_outputs, **PLUMBING)
    for picture in (left, right):
        picture.select(zoom_at, [vote_run, shown], magnifier, **PLUMBING)
    left_button.click(vote_left, [vote_run, shown], cast_outputs, **PLUMBING)
    right_button.click(vote_right, [vote_run, shown], cast_outputs, **PLUMBING)
    next_button.click(next_pair, [vote_run, shown], pair_outputs, **PLUMBING)
    class_outputs = [class_run, qr, count, seen, timer, class_vote]
    class_button.click(start_class_vote, run_tab.run_id, class_outputs, **PLUMBING)
    timer.tick(refresh, [class_run, seen, run_tab.run_id, run_tab.compare_step,
                         run_tab.form["raw"]],
               [count, seen, run_tab.plot, run_tab.verdict], show_progress="hidden",
               **PLUMBING)
    lesson.click(start_lesson, None, [tabs, *pair_outputs, *class_outputs, reveal_button,
                                      lesson_text], **PLUMBING)
    reveal_button.click(reveal, class_run, run_tab.outputs, **PLUMBING)
    demo.load(open_vote_link, None, [tabs, *pair_outputs], **PLUMBING)
    demo.load(None, js=VOTE_ONLY_JS)
