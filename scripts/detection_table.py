"""Which metrics detect each simulated damage, which are fooled, and which "detect" nothing at
all, at full size: every `simulate` profile (damage, the blur control and the nuisance chains)
on the clean starts, with two verdicts per run. The paper's (Banana100, arXiv 2604.03400: the
oriented Δ from step 1, the first copy, is negative at steps 5, 10 and 20) and the robust one
(ours: every checkpoint worse by more than the score's noise floor,
banana_space/verdict/floors.csv), plus where the change since the input reads otherwise
(`VerdictRow.input_contrast`) and the trend from the first copy (ρ against PSNR over steps 1..N).

    .venv/bin/python scripts/measure_floors.py       # first: the floors the tables use
    .venv/bin/python scripts/detection_table.py --metrics classics --out docs/detection_table.md \
        --page docs/generators.md
    .venv/bin/python scripts/detection_table.py --metrics rulers --out docs/detection_rulers.md \
        --page docs/metrics.md

The runs are scripts/suite_runs.py's (1536 px longest side, 20 steps, seed 0, kept as CSVs in
docs/detection_runs/; missing ones are made first, 2 processes). On a nuisance chain every
detection is a false alarm. `--page` also writes the summary into that docs page between its
`<!-- BEGIN detection_table.py KEY -->` and `<!-- END detection_table.py KEY -->` lines (KEY:
the --metrics value); docs/detection_runs/verdicts.csv gets every run's verdict rows.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from pathlib import Path

import suite_runs

from banana_space.backends.simulate import PROFILES, profiles_of_kind
from banana_space.scores.catalog import expand_metric_names
from banana_space.verdict.analysis import INPUT_CONTRASTS, PAPER_TEST
from banana_space.verdict.columns import VERDICT_FIELDS, file_cells
from banana_space.verdict.history import VerdictRow

MARK = {True: "✅", False: "❌", None: "…"}


def _db(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.1f}"


def _cell(row: VerdictRow | None) -> str:
    """One run's verdicts for one metric: paper / robust, ρ from the first copy."""
    if row is None:
        return "unavailable"
    rho = "" if math.isnan(row.spearman_from_first) else f" ρ₁ {row.spearman_from_first:+.2f}"
    since = " (since input: otherwise)" if row.input_contrast else ""
    return f"{MARK[row.detects]}/{MARK[row.detects_robust]}{since}{rho}"


def collect(jobs: list[suite_runs.Job], runs: Path) -> dict[suite_runs.Job, tuple]:
    """Per run: its verdict rows by metric and its PSNR series."""
    made = {}
    for job in jobs:
        meta, history = suite_runs.read(runs, job)
        made[job] = ({row.metric: row for row in history.verdict()}, history.scores["psnr"],
                     "×".join(map(str, meta["settings"]["input_size"])))
    return made


def summary(made: dict, metrics: list[str], profiles: list[str], starts: list[str]) -> list[str]:
    """Per profile and metric: runs detected by the paper's test · beyond the floor."""
    lines = ["| profile | kind | what it models | " + " | ".join(metrics) + " |",
             "|" + " --- |" * (3 + len(metrics))]
    for profile in profiles:
        rows = [made[job][0] for job in made if job.profile == profile]
        cells = []
        for metric in metrics:
            paper = sum(bool(r.get(metric) and r[metric].detects) for r in rows)
            robust = sum(bool(r.get(metric) and r[metric].detects_robust) for r in rows)
            since = sum(bool(r.get(metric) and r[metric].input_contrast) for r in rows)
            cells.append(f"{paper}/{len(starts)} · {robust}/{len(starts)}"
                         + (f" ({since} since input: otherwise)" if since else ""))
        info = PROFILES[profile]
        lines.append(f"| {info.label} | {info.kind} | {info.models} | " + " | ".join(cells)
                     + " |")
    return lines


def every_run(made: dict, metrics: list[str]) -> list[str]:
    lines = ["| profile | start (px) | PSNR@10 dB | PSNR@20 dB | " + " | ".join(metrics) + " |",
             "|" + " --- |" * (4 + len(metrics))]
    for job, (rows, psnr, size) in made.items():
        lines.append(f"| {PROFILES[job.profile].label} | {job.start} ({size}) | {_db(psnr[10])} | "
                     f"{_db(psnr[20])} | " + " | ".join(_cell(rows.get(m)) for m in metrics)
                     + " |")
    return lines


def write_verdicts(made: dict, target: Path) -> None:
    with target.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["profile", "start", *VERDICT_FIELDS])
        for job, (rows, _, _) in made.items():
            for r in rows.values():
                out.writerow([job.profile, job.start,
                              *(f"{v:.6g}" if isinstance(v, float) else v for v in file_cells(r))])


def into_page(page: Path, key: str, text: str, script: str = "detection_table.py") -> None:
    """Replace the docs page's block for `key` with `text` (the markers, which name the
    `script` that writes the block, stay)."""
    begin, end = (f"<!-- {word} {script} {key} -->" for word in ("BEGIN", "END"))
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    source = page.read_text()
    if not pattern.search(source):
        raise SystemExit(f"{page} has no {begin} ... {end} block")
    page.write_text(pattern.sub(lambda _: f"{begin}\n{text}\n{end}", source))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    suite = [*suite_runs.MEASURED, *profiles_of_kind("control"), *profiles_of_kind("nuisance")]
    parser.add_argument("--metrics", default="classics",
                        help="comma-separated metric names or presets (classics, rulers)")
    parser.add_argument("--profiles", default=",".join(suite))
    parser.add_argument("--starts", default=",".join(suite_runs.CLEAN_STARTS))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--side", type=int, default=suite_runs.SIDE, help="longest side, px")
    parser.add_argument("--runs", type=Path, default=suite_runs.RUNS)
    parser.add_argument("--out", type=Path, required=True, help="the markdown file to write")
    parser.add_argument("--page", type=Path,
                        help="also write the summary into this docs page, between its markers")
    args = parser.parse_args()
    profiles, starts = args.profiles.split(","), args.starts.split(",")
    jobs = suite_runs.jobs_for(profiles, starts, args.steps, args.side)
    suite_runs.run_all(jobs, args.runs)
    made = collect(jobs, args.runs)
    metrics = expand_metric_names(args.metrics)
    head = (f"{args.steps} steps, seed 0, at {args.side} px (longest side: larger starts "
            f"are downscaled to it before the chain; frames never are), on "
            f"{', '.join(starts)}; scored at steps {', '.join(map(str, suite_runs.SCORED_STEPS))}. "
            f"Each cell: runs detected by {PAPER_TEST} · beyond the noise floor (every "
            "checkpoint below −floor, banana_space/verdict/floors.csv); "
            "\"since input: otherwise\": "
            "runs where the change since the input (step 0) reads otherwise at the same "
            "checkpoints. On a nuisance chain every detection is a false alarm.")
    table = "\n".join([head, "", *summary(made, metrics, profiles, starts)])
    legend = ("Each cell: paper's verdict / beyond the floor (✅ detects, ❌ no, … undecided), "
              "\"since input: otherwise\" where the change since the input reads otherwise "
              f"({'; '.join(INPUT_CONTRASTS.values())}), ρ₁: Spearman "
              "ρ against PSNR over steps 1–20 (+1: it falls as fidelity falls).")
    args.out.write_text("\n".join([table, "", "Every run. " + legend, "",
                                   *every_run(made, metrics)]) + "\n")
    every = [suite_runs.Job(*folder.name.split("--"), args.steps, args.side,
                            suite_runs.SUITE_METRICS)
             for folder in sorted(args.runs.iterdir()) if "--" in folder.name]
    write_verdicts(collect(every, args.runs), args.runs / "verdicts.csv")  # every run kept
    if args.page:
        into_page(args.page, args.metrics, table)
    print(table)


if __name__ == "__main__":
    sys.exit(main())
