"""The decay on the first screen, before any click: the first bundled recording (the damage a
generator leaves comes first, the controls after: `offered.examples`), its input beside a late
copy with the magnifier's crops of where they differ most (`magnifier.poster`), its curves, and
its headline (`finding.headline`). It opens from the recordings above it, where it is first: no
control of its own, so the keyboard's path to the result stays as short.

Made once when the page is built, from the recording as it lies (its kept full frames: the
latest is the late copy), so it costs a visitor nothing and never changes under a run.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

import gradio as gr
import plotly.graph_objects as go
from PIL import Image

from banana_space.chain.offered import examples
from banana_space.store.run import Run
from banana_space.verdict.magnifier import ZOOM, largest_difference_box, poster
from banana_space.verdict.plots import Figure
from banana_space.view import RunView
from page.settings import RECORDED, SETTINGS

PICTURE_HEIGHT = 360  # px of the poster file; the page draws it smaller on a projector
FIGURE_HEIGHT = 300  # px: the curves beside it, on the first screen at 1280 x 720


@dataclass(frozen=True)
class FirstLook:
    name: str  # the recording's folder (what `handlers.open_recorded` opens)
    label: str  # what it is: "Dunes · simulated (nano-banana-pro profile) · 30 steps"
    headline: str
    caption: str  # which steps the picture shows, and how
    picture: Image.Image
    figure: Figure


def first_look() -> FirstLook | None:
    """The first recording as the first screen shows it; None where none is bundled."""
    recording = next((e for e in examples(SETTINGS.runs_root, RECORDED) if not e.real), None)
    if recording is None:
        return None
    saved = Run(recording.path).load()
    screen = RunView.from_saved(saved).screen()
    late = max(s for s in range(1, saved.last_step + 1) if saved.run.frame_path(s).is_file())
    with Image.open(saved.run.frame_path(0)) as start, \
            Image.open(saved.run.frame_path(late)) as copied:
        box = largest_difference_box(start, copied)
        picture = poster(start, copied, box, PICTURE_HEIGHT)
    caption = (f"{recording.label} (first in the list above): the input | step {late} | both "
               f"enlarged {ZOOM}× where they differ most (the amber box)")
    return FirstLook(recording.path.name, recording.label, screen.headline, caption, picture,
                     compact(screen.figure))


def compact(figure: Figure) -> Figure:
    """The curves short enough to sit beside the picture: no title (the headline says it), the
    legend in small type at the side, each curve named with its verdict alone."""
    small = copy.deepcopy(figure)
    small["layout"].update(title={}, height=FIGURE_HEIGHT,
                           margin={"l": 56, "r": 6, "t": 16, "b": 36},
                           legend={"font": {"size": 11}, "x": 1.02, "y": 1,
                                   "orientation": "v"})
    small["layout"]["annotations"] = []  # "compared: step 30": no slider here
    for trace in small["data"]:  # "brisque · fooled": which way each reads is in the result's
        trace["name"] = re.sub(r" \([^)]*\)", "", trace["name"])
    return small


def lay_out() -> None:
    """The first look's components, under the first screen's actions (nothing where no
    recording is bundled)."""
    look = first_look()
    if look is None:
        return
    with gr.Row(elem_id="first-look", equal_height=False):
        with gr.Column(scale=3, min_width=300):
            gr.Markdown(look.headline, elem_id="first-look-headline")
            gr.Image(look.picture, label=look.caption, interactive=False, buttons=[],
                     elem_id="first-look-picture", format="png",
                     alt_text=f"{look.caption}. {look.headline.replace('**', '')}")
        with gr.Column(scale=2, min_width=300, elem_id="first-look-curves"):
            gr.Plot(go.Figure(look.figure), show_label=False, elem_id="first-look-plot")
