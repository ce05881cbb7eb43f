"""What a run looks like on the page: the one output contract of every event that shows a run.

`PageOutputs` *defines* the order of those outputs: app.py builds its components into one
(`PageOutputs(status=…, frame=…)`), and every handler answers with one (`shown`), so the two
can never drift apart. The engine's `banana_space.view.Screen` says what to show as plain data;
this module turns it into gradio updates.
"""

from __future__ import annotations

import html
import json
from typing import Any, NamedTuple

import gradio as gr
from gradio_client.utils import encode_file_path
from PIL import Image

from banana_space.store.run import THUMB_SIDE, Run, is_thumbnail
from banana_space.verdict.magnifier import ZOOM, box_around, largest_difference_box, side_by_side
from banana_space.view import Screen
from page.settings import SETTINGS

STOPPING = "⏹ **Stopping…** (the frames made so far are kept)"


class PageOutputs(NamedTuple):
    """One value (or component) per output, in the order gradio sends them."""

    status: Any
    frame: Any
    strip: Any
    plot: Any
    verdict: Any
    model_text: Any
    download: Any
    run_id: Any
    before_after: Any
    compare_step: Any
    summary: Any
    share: Any
    animation: Any
    magnifier: Any

    @classmethod
    def unchanged(cls) -> PageOutputs:
        """Every output left as it is (the run on screen stays)."""
        return cls(*[gr.skip()] * len(cls._fields))


def shown(screen: Screen, stopping: bool = False, magnified: bool = True) -> PageOutputs:
    """A `Screen` as the page's outputs. The figure goes to gr.Plot as the JSON that its
    postprocess would make of a plotly Figure, without building one (bench/streaming.py)."""
    run = Run(screen.run_dir) if screen.run_dir else None
    newest = len(screen.strip) - 1
    # The magnifier costs ~0.2 s a 1024 px frame, so a running chain leaves it to the compare
    # slider (whose .change follows each new frame) instead of redoing it on every update.
    zoomed = gr.skip() if screen.running or not magnified else magnify(run, newest)
    return PageOutputs(
        status=f"{STOPPING}\n\n{screen.status}" if stopping and screen.running else screen.status,
        frame=screen.frame,
        strip=strip_html(screen.strip),
        plot=plot_data(screen.figure),
        verdict=screen.verdict,
        model_text=screen.model_text,
        download=gr.update(value=downloads(screen), visible=screen.zip_path is not None),
        run_id=run.id if run else None,
        before_after=compared((screen.first_frame, screen.frame) if screen.first_frame else None,
                              newest),
        # Never below the slider's minimum (0), even before frame 0 exists.
        compare_step=gr.update(maximum=max(1, newest, screen.offered), value=max(0, newest)),
        summary=finding(screen),
        share=share_link(run, newest),
        animation=animation_url(screen),
        magnifier=zoomed)


def finding(screen: Screen) -> str:
    """The finding as the page shows it: its headline, read in the first seconds, and the whole
    of it (each family's count, the noise floors, this chain beside the paper) folded below."""
    if screen.headline == screen.summary:
        return screen.summary
    return (f"{screen.headline}\n\n<details><summary>The whole finding: each kind of metric, "
            f"the noise floors, the paper</summary>\n\n{screen.summary}\n\n</details>")


def downloads(screen: Screen) -> list[str] | None:
    """The run's zip (lossless: frames, scores, verdict) and beside it its animation to
    share, once the run has ended and they are made."""
    if screen.zip_path is None:
        return None
    return [screen.zip_path, *([screen.animation_path] if screen.animation_path else [])]


def animation_url(screen: Screen) -> str:
    """The chain as an animation, served from the runs folder as it lies; "" while it has
    none."""
    return file_url(screen.animation_path) if screen.animation_path else ""


def plot_data(figure: dict[str, Any]) -> Any:
    return gr.components.plot.PlotData(type="plotly", plot=json.dumps(figure))


def strip_html(strip: list[Any]) -> str:
    """The frame strip: a thumbnail per step, each a link to its full frame, both served from
    the runs folder as they lie. Plain HTML, so an update costs a string where a gr.Gallery
    hashed every frame's file on every update (bench/streaming.py); it only ever grows at the
    end, so gradio streams just the new link."""
    shown_steps = [(step, *pair) for step, pair in enumerate(strip) if pair]  # not a sampled gap
    # One tab stop for the whole strip (the newest frame's); arrow keys move inside (style.py).
    newest = shown_steps[-1][0] if shown_steps else -1
    return "".join(f'<a href="{file_url(frame)}" target="_blank" rel="noopener" title="step '
                   f'{step}: open the full frame" tabindex="{0 if step == newest else -1}">'
                   f'<img src="{file_url(thumb)}" alt="step {step}"><span>{step}</span></a>'
                   for step, thumb, frame in shown_steps)


def file_url(path: str) -> str:
    """gradio's URL for a file on the server, relative to the page (works under any root)."""
    return "gradio_api/file=" + html.escape(encode_file_path(path))


def compared(pair: tuple[str, str] | None, step: int) -> Any:
    """The compare slider's pictures, its label naming its sides; a frame a recording kept
    only as a thumbnail is named one, never passed off as the frame."""
    side = f"◀ input · step {step} ▶" if pair else "Input vs frame i"
    small = pair is not None and is_thumbnail(pair[1])
    note = f" · only its {THUMB_SIDE} px thumbnail was kept" if small else ""
    return gr.update(value=pair, label=f"{side} (drag the handle){note}")


def hub_page() -> str:
    """On a Space, its page on the Hub, whose query string reaches the app (hub-docs
    `spaces-handle-url-parameters.md`): the address a visitor can share, where the app's own
    (*.hf.space) is a frame inside it. Elsewhere "", the app's own address."""
    return f"https://huggingface.co/spaces/{SETTINGS.space_id}" if SETTINGS.space_id else ""


def page_link(request: Any, query: str) -> str:
    """The page with `query` ("run=<id>"): on a Space its Hub page, else the host asked."""
    if hub_page():
        return f"{hub_page()}?{query}"
    headers = request.headers
    scheme = headers.get("x-forwarded-proto", "http")
    return f"{scheme}://{headers.get('x-forwarded-host') or headers.get('host')}/?{query}"


def share_link(run: Run | None, step: int) -> str:
    """The link that reopens this view: the run and the frame being compared."""
    return f"{hub_page()}?run={run.id}&frame={max(step, 0)}" if run else ""


def magnify(run: Run | None, step: int, point: tuple[float, float] | None = None) -> Any:
    """Input and frame `step` of a (confined) run cropped alike and enlarged, where they
    differ most (or around `point`, in the input's pixels), with a label saying which side is
    which."""
    chosen_file = run.shown_frame(step) if run is not None and step >= 1 else None
    if chosen_file is None or not chosen_file.is_file():
        return gr.update(value=None, label="Magnifier (from step 1 on)")
    with Image.open(run.shown_frame(0)) as first, Image.open(chosen_file) as chosen:
        box = box_around(point, first.size) if point else largest_difference_box(first, chosen)
        image = side_by_side(first, chosen, box)
    where = "where you clicked" if point else "where they differ most"
    return gr.update(value=image, label=f"Magnifier {ZOOM}×: input | step {step}, {where}")
