"""The paper's test as the paper defines it (Banana100, arXiv 2604.03400: Δ from step 1, the
first copy, negative at steps 5, 10 and 20), read through the CLI on chains whose answer is
known: planted white noise that jumps at step 1 and fades after is "fooled" (though worse than
the input at every checkpoint), noise that grows with every copy "detects". The same chains
through the API are in test_mcp.py."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from chains import WORSE_AT_STEP_1_THEN_BETTER, WORSE_WITH_EVERY_COPY, planted_noise_chain

from banana_space.cli import main as cli


def verdicts(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {row["metric"]: row for row in csv.DictReader(handle)}


@pytest.mark.parametrize(("sigmas", "detects", "note"), [
    (WORSE_AT_STEP_1_THEN_BETTER, "no", "step 1 scored worse than the input"),
    (WORSE_WITH_EVERY_COPY, "yes", "")])
def test_the_cli_reads_the_papers_test_from_step_1(photo, tmp_path, capsys, sigmas, detects,
                                                    note) -> None:
    folder = tmp_path / "chain"
    folder.mkdir()
    for step, frame in enumerate(planted_noise_chain(photo, sigmas)):
        frame.save(folder / f"step_{step:03d}.png")
    out = tmp_path / "scored"
    assert cli(["score", str(folder), "--metrics", "noise_level", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    row = verdicts(out / "verdict.csv")["noise_level"]
    assert (row["detects"], row["worse_than_input"]) == (detects, "yes")
    assert row["undecided_because"] == ""
    line = next(text for text in printed.splitlines() if text.startswith("noise_level"))
    assert f" {detects} " in line and (note in line if note else "step 1 scored" not in line)
    assert "Δ5, Δ10, Δ20 are from step 1, the first copy" in printed
