"""What a visitor starts from, on the Run tab's first screen and beside its upload: the real
chains' buttons (Banana100's own, once prepared) and the bundled recordings, the example
pictures, the upload's preview and its start's condition against the paper's.
"""

from __future__ import annotations

import contextlib
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import gradio as gr
from PIL import Image

from banana_space.chain.offered import dataset_starts, examples
from banana_space.chain.real_chains import PLAN, plan_from_env, preparing
from banana_space.files import png_bytes, write_atomic
from banana_space.markup import escape_markdown
from banana_space.scores.catalog import to_tensor
from banana_space.sources.images import BadImage, load_image
from banana_space.verdict.conditions import start_note
from page.content import EXAMPLES
from page.door import guard, uploads
from page.door.access import Refusal, public_text
from page.door.disk import PREVIEWS, make_room
from page.settings import RECORDED, REPO, SETTINGS

# Buttons for real chains, shown once they are prepared (banana_space/chain/real_chains.py).
REAL_SLOTS = max(PLAN.count, len(plan_from_env().chains))
REAL_CHAINS_POLL_S = 5  # how often a page asks again while the real chains are prepared
PREVIEW_SIDE = 512  # the page shows it 120 px tall
PREVIEW_LIFETIME_S = 3600


def recorded_choices() -> list[tuple[str, str]]:
    """(label, name) of every bundled recording the picker offers, each labelled simulated
    (`offered.examples`: the real chains have buttons of their own, above it)."""
    return [(e.label, e.path.name)
            for e in examples(SETTINGS.runs_root, RECORDED) if not e.real]


def real_chain_buttons() -> list[Any]:
    """The examples' heading and the real-chain buttons (`REAL_SLOTS` of them), for the real
    chains prepared so far (`banana_space.chain.real_chains`): they come first, with their licence;
    the bundled recordings after them are our simulations, and say so."""
    real = [e for e in examples(SETTINGS.runs_root, RECORDED) if e.real]
    credits = sorted({e.credit for e in real if e.credit})
    heading = ("**Real chains first** — open instantly: Banana100's own chains (real), each "
               "by its path in the dataset, "
               + "; ".join(escape_markdown(c) for c in credits)
               + ". **Below them, our simulations** (a model of the damage, not a real "
               "editor's output)." if real else
               "**Recorded chains** — open instantly, no key or GPU. These are **simulated** "
               "(a model of the damage, not a real editor's output).")
    return [heading, *(gr.update(value=real[i].label, visible=True) if i < len(real)
                       else gr.update(visible=False) for i in range(REAL_SLOTS))]


def example_gallery(bundled: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The example pictures, (thumbnail, caption): Banana100's own starts first where the hub
    was reachable (`offered.dataset_starts`, each captioned with its licence), then ours
    (`bundled`, captioned by name)."""
    return [(str(start.thumb), start.caption) for start in dataset_starts(SETTINGS.runs_root)
            ] + bundled


def picked_example(caption: str | None, index: int, bundled: dict[str, str]) -> str:
    """The picture behind a clicked example: a dataset start's full frame, or one of ours
    (`bundled`: caption -> path), by its caption (the gallery's order changes when the starts
    arrive, so an index may name another picture), by its place where the click had none;
    never a path a visitor names."""
    offered = {start.caption: str(start.image) for start in dataset_starts(SETTINGS.runs_root)
               } | bundled
    if caption is None and 0 <= index < len(offered):
        caption = list(offered)[index]
    if caption not in offered:
        raise Refusal("Pick one of the example pictures.")
    return offered[caption]


def real_chains_tick() -> list[Any]:
    """`real_chain_buttons` again, for a page opened before the real chains were ready (the
    visitor who wakes a sleeping Space), and its timer: it stops once the preparation has
    ended, with chains or without (offline)."""
    more_may_come = preparing()  # asked first: the buttons read after it are then final
    return [*real_chain_buttons(), gr.Timer(active=more_may_come)]


def preview(upload: str | None) -> tuple[Any, str]:
    """The upload's preview (hidden while there is none) and its size and notes."""
    nothing = gr.update(value=None, visible=False)
    if not upload or Path(upload).suffix.lower() == ".zip":
        return nothing, ""
    try:
        loaded = load_image(uploads.received_file(upload))
    except (BadImage, guard.Refused) as error:
        return nothing, f"⚠️ {escape_markdown(public_text(str(error)))}"
    w, h = loaded.image.size
    small = loaded.image.copy()
    small.thumbnail((PREVIEW_SIDE, PREVIEW_SIDE))
    return (gr.update(value=write_preview(small), visible=True),
            f"{w} × {h}" + "".join(f" · {escape_markdown(n)}" for n in loaded.notes))


SMOOTHNESS_TABLE = REPO / "docs" / "start_smoothness.md"  # scripts/start_smoothness.py's table
gr.set_static_paths([SMOOTHNESS_TABLE])  # linked from the note beside the input
CONDITION_SIDE = 2048  # px: the paper's starts are 2K; a larger upload is measured at that


def start_condition(upload: str | None) -> str:
    """Beside the input: its BRISQUE against the paper's example start, and why that matters
    (`conditions.start_note`); nothing for a zip, or where the preview already says why not."""
    from banana_space.scores.pool import POOL, MetricUnavailable

    if not upload or Path(upload).suffix.lower() == ".zip":
        return ""
    try:
        image = load_image(uploads.received_file(upload)).image
    except (BadImage, guard.Refused):
        return ""
    image.thumbnail((CONDITION_SIDE, CONDITION_SIDE), Image.Resampling.LANCZOS)
    try:
        brisque = POOL.score("brisque", to_tensor(image))
    except MetricUnavailable:
        return ""
    return start_note(brisque, f"/gradio_api/file={quote(str(SMOOTHNESS_TABLE))}",
                      CONDITION_SIDE)


def write_preview(image: Image.Image) -> str:
    """The preview as a file of its own under the served runs folder, written atomically.
    Returned as a PIL image, gradio would write it to a path named by its content, in place:
    eight visitors previewing one photo rewrote the file while it was being served to the
    others, who got a truncated image. Previews older than an hour are deleted, and the oldest
    beyond their share of the disk (`SETTINGS.previews_bytes`)."""
    PREVIEWS.mkdir(parents=True, exist_ok=True)
    for old in PREVIEWS.glob("*.png"):
        with contextlib.suppress(FileNotFoundError):
            if time.time() - old.stat().st_mtime > PREVIEW_LIFETIME_S:
                old.unlink()
    path = PREVIEWS / f"{secrets.token_hex(8)}.png"
    data = png_bytes(image)
    make_room(PREVIEWS, len(data), SETTINGS.previews_bytes)
    write_atomic(path, data)
    return str(path)


def example_thumbnails() -> list[tuple[str, str]]:
    """(thumbnail, caption) per example picture, made once when the page is built: a 2K start
    is ~2 MB, and a phone opening the page needs 200 px of it."""
    folder = Path(tempfile.mkdtemp(prefix="banana-examples-"))
    made = []
    for path in map(Path, EXAMPLES):
        with Image.open(path) as image:
            thumb = image.convert("RGB")
        thumb.thumbnail((240, 240))
        thumb.save(folder / f"{path.stem}.jpg", quality=85)
        made.append((str(folder / f"{path.stem}.jpg"), path.stem))
    return made


def pick_example(event: gr.SelectData) -> str:
    """The picture behind the clicked thumbnail (Banana100's starts come first, once they are
    prepared: `example_gallery`)."""
    value = event.value if isinstance(event.value, dict) else {}
    return picked_example(value.get("caption"), event.index,
                          {Path(path).stem: path for path in EXAMPLES})
