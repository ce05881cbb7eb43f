"""The paper's conditions: how a visitor's start compares with the starts Banana100 used.

Banana100 (arXiv 2604.03400) started its chains from 13 generated images, 11 of them made by
Nano Banana Pro itself: smooth, as generated images are. Its example start scores BRISQUE 34.1
(pyiqa's BRISQUE, as an independent audit measured it; docs/start_smoothness.md). How smooth a start
is can flip a classic metric's verdict on the same damage (our finding, measured by
scripts/start_smoothness.py into docs/start_smoothness.md; so can the frame's size,
docs/start_smoothness_sizes.md), so the page says where a visitor's start stands, and at what size.
Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["PAPER_START_BRISQUE", "nearest_to_the_paper", "start_note"]

PAPER_START_BRISQUE = 34.1  # the paper's example start (lower = rougher, more camera-like)


def start_note(brisque: float, table_link: str, side: int) -> str:
    """One line of Markdown beside the input: its BRISQUE at `side` px on the long side (the
    size a run scores it at) against the paper's example start, and why that matters, linking
    to the table (`table_link`, a URL)."""
    if brisque != brisque:  # NaN: the score could not be read
        return ""
    where = ("rougher than" if brisque < PAPER_START_BRISQUE else "as smooth as or smoother than")
    return (f"Start: BRISQUE {brisque:.1f} at {side} px, {where} the paper's example start "
            f"({PAPER_START_BRISQUE}, a generated image). How smooth the start is, and the size "
            f"it is run at, can flip a classic metric between \"detects\" and \"fooled\" on the "
            f"same damage ([our measurement]({table_link})).")


def nearest_to_the_paper(brisque: Mapping[str, float]) -> str:
    """The start whose BRISQUE is nearest the paper's example start's: the page's default
    example is chosen so, by a condition of the experiment, never by the verdicts a run on it
    gives.

    Args:
        brisque: start name -> its BRISQUE at the size a run scores it (the page's
            `BANANA_MAX_SIDE`, 2048 px: the paper's starts are 2K).

    Returns:
        The name of the nearest (the first in name order on a tie).
    """
    return min(sorted(brisque), key=lambda name: abs(brisque[name] - PAPER_START_BRISQUE))
