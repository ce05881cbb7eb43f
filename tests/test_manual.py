"""The manual says what the code does (issue 43's small fixes): the CLI page lists every
simulate profile, the recordings page names only recordings that exist, and the leaderboard
page gives the suite's own version."""

from __future__ import annotations

import re

from conftest import REPO

from banana_space.backends.simulate import PROFILES
from banana_space.leaderboard.suite import SUITE_VERSION

DOCS = REPO / "docs"


def test_the_cli_page_lists_every_profile() -> None:
    usage = (DOCS / "cli.md").read_text().split("```")[1]
    listed = re.search(r"\[--profile ([^\]]+)\]", usage).group(1)
    assert [name.strip() for name in listed.split("|")] == list(PROFILES)


def test_the_recordings_page_names_only_recordings_that_exist() -> None:
    named = set(re.findall(r"`([a-z]+-[a-z-]+-\d+)`", (DOCS / "recordings.md").read_text()))
    recorded = {path.name for path in (REPO / "assets" / "recorded").iterdir() if path.is_dir()}
    assert named == recorded


def test_the_leaderboard_page_gives_the_suites_version() -> None:
    said = re.findall(r"version (\d+)", (DOCS / "leaderboard.md").read_text())
    assert said == [SUITE_VERSION]
