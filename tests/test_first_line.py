"""The first line of a finished short run, from a real engine run (the simulate backend, real
pyiqa metrics and our rulers): the paper's metrics are counted apart from our rulers, the
verdicts are final ("so far" is for a run that goes on), and a verdict read at fewer
checkpoints than the paper's says which it used, on the page, in the CLI and in verdict.csv."""

from __future__ import annotations

import csv
import re

from banana_space.chain.runs import RunSpec, start_run
from banana_space.cli import _summary
from banana_space.scores.catalog import CPU_DEFAULTS
from banana_space.verdict.columns import VERDICT_COLUMN
from banana_space.view import RunView

RULERS = ("noise_level", "colour_cast")
METRICS = [*CPU_DEFAULTS, *RULERS]
LATER_CHECKPOINTS = re.compile(r"\b(10|20)\b")  # "Banana100" is not step 100


def test_a_finished_nine_step_chain_counts_of_4_apart_from_the_rulers_at_step_5_only(
        photo, tmp_path, weights_dir) -> None:
    view = RunView()
    for event in start_run(RunSpec(photo, 9, seed=3, metrics=METRICS), tmp_path):
        screen = view.apply(event)
    assert not screen.running and view.ended.status == "completed"

    first_line = screen.summary
    assert first_line.startswith("**After 9 steps**, PSNR to the input fell"), first_line
    assert "**by the paper's test at step 5 only (Δ from step 1 < 0 there;" in first_line
    counted = re.search(r"(\d) of (\d) standard metrics \(pyiqa's, the kind the paper tests\)",
                        first_line)
    assert counted and counted.group(2) == "4", first_line
    rulers = re.search(r"counted apart, (\d) of (\d) rulers \(ours, not among the paper's "
                       r"metrics\)", first_line)
    assert rulers and rulers.group(2) == "2", first_line
    # Each of the four classics is named in its own family's count, never in the rulers'.
    pyiqa_part, ruler_part = first_line.split("counted apart, ", 1)
    assert all(m in pyiqa_part for m in CPU_DEFAULTS)
    assert not any(m in pyiqa_part for m in RULERS)
    assert not any(re.search(rf"\b{m}\b", ruler_part.split("; beyond")[0])
                   for m in CPU_DEFAULTS)
    assert "so far" not in first_line and not LATER_CHECKPOINTS.search(first_line), first_line
    assert "on this one chain" in first_line and "over every image, not one chain" in first_line

    # The table: final words that name the one checkpoint used.
    decided = [row[VERDICT_COLUMN] for row in screen.verdict
               if not row[VERDICT_COLUMN].startswith(("…", "unavailable"))]
    assert decided and all(word.endswith("(at step 5 only)") for word in decided), decided

    # verdict.csv: a verdict read at step 5 alone says so in its own column.
    with (view.run_dir / "verdict.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["metric"] for row in rows} == {*METRICS, "psnr", "ssim"}
    assert all(row["checkpoints_used"] == "5" and row["delta_10"] == "" for row in rows)

    # The CLI's legend names the checkpoint it used, never steps 10 and 20.
    legend = _summary(view.run_dir).split("\n")[len(rows) + 1:]
    assert legend[0].startswith("detects: the paper's test at step 5 only"), legend
    assert legend[1].startswith("beyond floor: at step 5, ")
    assert not any(LATER_CHECKPOINTS.search(line) for line in legend), legend
