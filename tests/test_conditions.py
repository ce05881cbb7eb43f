"""The paper's conditions (issue 43, item 2): beside the input, its BRISQUE against the paper's
example start, linked to our start-smoothness table; the Help quotes that table's finding, as
scripts/start_smoothness.py wrote both."""

from __future__ import annotations

import math
import re
from pathlib import Path

import httpx
import pytest
from raw_api import call
from visitors import file_data, public_app, upload

from banana_space.verdict.conditions import PAPER_START_BRISQUE, start_note

REPO = Path(__file__).resolve().parent.parent
FINDING = re.compile(r"<!-- BEGIN start_smoothness.py finding -->\n(.+?)\n"
                     r"<!-- END start_smoothness.py finding -->", re.S)
NUISANCES = re.compile(r"<!-- BEGIN start_smoothness.py nuisances -->\n(.+?)\n"
                       r"<!-- END start_smoothness.py nuisances -->", re.S)
SIZES = re.compile(r"<!-- BEGIN start_smoothness.py sizes -->\n(.+?)\n"
                   r"<!-- END start_smoothness.py sizes -->", re.S)


def test_the_note_places_a_start_against_the_papers_example_start() -> None:
    rough = start_note(11.04, "/table", 2048)
    assert "BRISQUE 11.0 at 2048 px, rougher than the paper's example start (34.1" in rough
    assert "[our measurement](/table)" in rough and "the size it is run at" in rough
    assert "as smooth as or smoother than" in start_note(PAPER_START_BRISQUE, "/table", 2048)
    assert start_note(math.nan, "/table", 2048) == ""


def test_the_help_quotes_the_start_smoothness_table_as_its_script_wrote_it() -> None:
    help_text = (REPO / "assets" / "copy.md").read_text().split("---HELP---")[1]
    quoted = FINDING.search(help_text)
    assert quoted, "the Help has no finding written by scripts/start_smoothness.py"
    table = (REPO / "docs" / "start_smoothness.md").read_text()
    assert quoted.group(1) in table
    assert "1536 px" in quoted.group(1) and "our finding" in quoted.group(1)
    alarms = NUISANCES.search(help_text)
    assert alarms, "the Help has no false alarms written by scripts/start_smoothness.py"
    assert alarms.group(1) in (REPO / "docs" / "start_smoothness_nuisances.md").read_text()
    assert "at 1536 px" in alarms.group(1)


def test_the_help_states_the_size_of_each_claim_and_of_the_pages_default_run() -> None:
    """Size can flip a verdict, so the Help quotes the size study as its script wrote it, at
    each size it ran, and says at which size the page's default run is."""
    from banana_space.sources.images import MAX_SIDE

    help_text = (REPO / "assets" / "copy.md").read_text().split("---HELP---")[1]
    sizes = SIZES.search(help_text)
    assert sizes, "the Help has no sizes paragraph written by scripts/start_smoothness.py"
    table = (REPO / "docs" / "start_smoothness_sizes.md").read_text()
    assert sizes.group(1) in table
    for side in (1024, 1536, 2048):
        assert f"{side} px" in sizes.group(1) and f"| {side} px |" in table
    assert f"the page's default run is at {MAX_SIDE} px" in sizes.group(1)
    assert "| size |" in (REPO / "docs" / "start_smoothness.md").read_text()


@pytest.mark.app
def test_beside_the_input_its_brisque_and_a_link_to_the_table(tmp_path, photo_path) -> None:
    from PIL import Image

    from banana_space.scores.catalog import to_tensor
    from banana_space.scores.pool import POOL

    with Image.open(photo_path) as opened:
        start = opened.convert("RGB")
    start.thumbnail((2048, 2048), Image.Resampling.LANCZOS)
    expected = POOL.score("brisque", to_tensor(start))
    with public_app(tmp_path / "runs") as app:
        sent = upload(app, photo_path, "10.0.43.2").json()[0]
        answer = call(app["url"], app["index"]["start_condition"], [file_data(sent)])
        assert answer.success, answer.error
        note = answer.data[0]
        shown = float(re.search(r"BRISQUE (\d+\.\d)", note).group(1))
        assert shown == pytest.approx(expected, abs=0.06)  # rounded to 0.1 on the page
        link = re.search(r"\]\((/gradio_api/file=[^)]+)\)", note).group(1)
        served = httpx.get(app["url"].rstrip("/") + link, timeout=60)
        assert served.status_code == 200 and "Start smoothness" in served.text


def test_the_default_example_is_the_2k_start_nearest_the_papers_conditions() -> None:
    """Chosen by a condition of the experiment (BRISQUE at the page's run size against the
    paper's example start), never by the verdicts a run on it gives."""
    from PIL import Image

    from banana_space.scores.catalog import to_tensor
    from banana_space.scores.pool import POOL
    from banana_space.sources.images import MAX_SIDE
    from banana_space.verdict.conditions import nearest_to_the_paper
    from page import content

    brisque = {}
    for path in sorted((REPO / "assets" / "examples").glob("*.png")):
        with Image.open(path) as opened:
            image = opened.convert("RGB")
        if max(image.size) >= 2048:
            image.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
            brisque[path.name] = POOL.score("brisque", to_tensor(image))
    assert len(brisque) >= 4
    assert nearest_to_the_paper(brisque) == content.DEFAULT_EXAMPLE


def test_the_nearest_start_is_by_distance_either_way() -> None:
    from banana_space.verdict.conditions import nearest_to_the_paper

    assert nearest_to_the_paper({"rough": 11.0, "smooth": 44.0}) == "smooth"
    assert nearest_to_the_paper({"rough": 30.0, "smooth": 44.0}) == "rough"
