"""Our finding, measured: how smooth the start is decides whether a classic metric is "fooled".

Banana100 (arXiv 2604.03400) started its chains from 13 generated images (11 made by Nano Banana
Pro itself), smooth as generated images are: its example start scores BRISQUE 34.1. A
photograph is rougher (the default moss: 11.0 at 1536 px). This script runs each photographic
start as it is and smoothed three ways (`suite_runs.SMOOTHINGS`: a Gaussian of σ 1.0 and 1.5 px,
and scikit-image's edge-preserving TV denoising), with the given simulate profiles, and asks the
paper's test of the four CPU classics (Δ from step 1, the first copy, negative at steps 5, 10
and 20). It writes the table to `--out` and the finding, in numbers, into the page's Help
(`assets/copy.md`, between its `<!-- BEGIN start_smoothness.py finding -->` and
`<!-- END start_smoothness.py finding -->` lines; a nuisance run's false alarms go between the
`nuisances` markers).

    .venv/bin/python scripts/start_smoothness.py --profiles nano-banana-pro,contour-wrinkles,\
scattered-dots,simplification,lattice-ripple,granular,jpeg,white-noise,blur \
        --out docs/start_smoothness.md --page assets/copy.md
    .venv/bin/python scripts/start_smoothness.py \
        --profiles random-shift,random-jpeg,random-resample,random-exposure \
        --out docs/start_smoothness_nuisances.md --page assets/copy.md

    .venv/bin/python scripts/start_smoothness.py --profiles nano-banana-pro,white-noise,blur \
        --sides 1024,1536,2048 --out docs/start_smoothness_sizes.md --page assets/copy.md

(the committed tables: every damage profile, both controls and the four nuisances that vary at
every step, on every photograph at 1536 px; a 1536 px run takes 6 s to 3 min on the 2-core
machine, the random shift's the longest; and the default profile and both controls at 1024,
1536 and 2048 px, the size as a measured variable: on the moss, BRISQUE detects the default
profile's damage at 1536 px and is fooled at the page's 2048). The Help's paragraph is about
the first profile given (the default's), with one sentence over every damage profile given; the
nuisances' false alarms, and the sizes, go into blocks of their own beside it.

The runs are scripts/suite_runs.py's (`--sides` px on the long side, 20 steps, seed 0, scored
at steps 0, 1, 5, 10, 20), kept as CSVs in `--runs`, one folder per size (`1536px/`); missing
ones are made first, the starts as they are before any smoothing, and within one smoothing one
size's, then one profile's chains on every start before the next's, so a run cut short leaves
whole rows and the sizes of the starts as they are first (rerun with what finished).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import suite_runs
from detection_table import into_page

from banana_space.backends.simulate import PROFILES
from banana_space.scores.catalog import expand_metric_names
from banana_space.sources.images import MAX_SIDE
from banana_space.verdict.analysis import CHECKPOINTS, PAPER_TEST
from banana_space.verdict.conditions import PAPER_START_BRISQUE, nearest_to_the_paper

METRICS = ("classics",)  # the paper's own kind of metric; psnr and ssim come with every run
AS_IS = ""
SMOOTHED = (AS_IS, *suite_runs.SMOOTHINGS)
SMOOTHING_LABEL = {AS_IS: "as it is", "gauss-1.0": "Gaussian σ 1.0 px",
                   "gauss-1.5": "Gaussian σ 1.5 px", "tv": "TV denoised (edge-preserving)"}
MARK = {True: "✅", False: "❌", None: "…"}
RUNS = suite_runs.REPO / "docs" / "smoothness_runs"
NUISANCE_TABLE = "docs/start_smoothness_nuisances.md"  # the second command's --out (docstring)
SIZES_TABLE = "docs/start_smoothness_sizes.md"  # the third command's


def _signed(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:+.3g}"


def _span(values: list[float]) -> str:
    """"11.0" for one value, "11.0–41.7" for several."""
    low, high = min(values), max(values)
    return f"{low:.1f}" if low == high else f"{low:.1f}–{high:.1f}"


def photographs(starts: list[str]) -> str:
    """Which photographs ran, of how many bundled: "photo-moss (1 of the 4 photographs)"."""
    bundled = len(list(suite_runs.EXAMPLES.glob("photo-*.png")))
    return f"{', '.join(starts)} ({len(starts)} of the {bundled} bundled photographs)"


def _tally(found: list, metric: str) -> str:
    """"3/4": on how many of the runs `found` (`collect`'s values) `metric` detects."""
    return f"{sum(bool(rows[metric].detects) for rows, _ in found)}/{len(found)}"


def collect(jobs: list[suite_runs.Job], runs: Path) -> dict[suite_runs.Job, tuple]:
    """Per run made: its verdict rows by metric and its start's BRISQUE (step 0)."""
    made = {}
    for job in jobs:
        if not suite_runs.done(runs, job):  # a study cut short: its tables say what ran
            continue
        _, history = suite_runs.read(runs, job)
        made[job] = ({row.metric: row for row in history.verdict()},
                     history.scores["brisque"][0])
    return made


def every_run(made: dict, metrics: list[str]) -> list[str]:
    """One row per run: the start, its size, smoothing and BRISQUE, then per metric the paper's
    Δ at 5, 10 and 20 and its verdict."""
    lines = ["| profile | start | size | smoothing | BRISQUE at step 0 | "
             + " | ".join(f"{m} Δ{'/'.join(map(str, CHECKPOINTS))}" for m in metrics) + " |",
             "|" + " --- |" * (5 + len(metrics))]
    for job, (rows, brisque) in made.items():
        cells = [f"{MARK[rows[m].detects]} " + " ".join(_signed(d) for d in
                                                        rows[m].at_checkpoints)
                 for m in metrics]
        lines.append(f"| {PROFILES[job.profile].label} | {job.start} | {job.side} px | "
                     f"{SMOOTHING_LABEL[job.smoothing]} | {brisque:.1f} | "
                     + " | ".join(cells) + " |")
    return lines


def summary(made: dict, metrics: list[str], profiles: list[str], sides: list[int]) -> list[str]:
    """Per profile, size and smoothing: the starts' BRISQUE range, and on how many starts each
    metric detects (on a nuisance profile, every detection is a false alarm). In a study cut
    short, a row with no run made is left out, and one with some has them as its count's
    denominator."""
    lines = ["| profile | kind | size | smoothing | BRISQUE at step 0 | " + " | ".join(metrics)
             + " |", "|" + " --- |" * (5 + len(metrics))]
    for profile in profiles:
        for side in sides:
            for smoothing in SMOOTHED:
                found = [made[job] for job in made if job.profile == profile
                         and job.side == side and job.smoothing == smoothing]
                if not found:
                    continue
                cells = [_tally(found, m) for m in metrics]
                lines.append(f"| {PROFILES[profile].label} | {PROFILES[profile].kind} | "
                             f"{side} px | {SMOOTHING_LABEL[smoothing]} | "
                             f"{_span([b for _, b in found])} | " + " | ".join(cells) + " |")
    return lines


def finding(made: dict, metrics: list[str], profile: str, side: int, starts: list[str],
            steps: int) -> str:
    """The Help's paragraph: on `profile`, per smoothing, the starts' BRISQUE and on how many
    starts each metric detects, then which metrics' counts change with the smoothing alone."""
    counts: dict[str, list[int]] = {metric: [] for metric in metrics}
    parts = []
    for smoothing in SMOOTHED:
        found = [made[job] for job in made if job.profile == profile and job.smoothing == smoothing]
        for metric in metrics:
            counts[metric].append(sum(bool(rows[metric].detects) for rows, _ in found))
        parts.append(f"{SMOOTHING_LABEL[smoothing]} (BRISQUE {_span([b for _, b in found])}): "
                     + ", ".join(f"{m} {counts[m][-1]}/{len(found)}" for m in metrics))
    changed = [metric for metric, seen in counts.items() if len(set(seen)) > 1]
    damage = sorted({job.profile for job in made if PROFILES[job.profile].kind == "damage"})
    overall = ""
    if len(damage) > 1:
        spans = []
        for smoothing in SMOOTHED:
            found = [made[job] for job in made
                     if job.profile in damage and job.smoothing == smoothing]
            spans.append(f"{SMOOTHING_LABEL[smoothing]} "
                         + ", ".join(f"{m} {_tally(found, m)}" for m in metrics))
        overall = (f" Over all {len(damage)} damage profiles (chains on which each detects): "
                   + "; ".join(spans) + ".")
    outcome = (f"The verdicts of {', '.join(changed)} change with the start's smoothness alone"
               if changed else "No metric's verdicts changed with the start's smoothness here")
    return (f"**How smooth the start is (our finding, not the paper's).** Banana100's starts "
            f"were generated images, smooth as such images are (its example start: BRISQUE "
            f"{PAPER_START_BRISQUE}); a photograph is rougher. We ran {photographs(starts)} at "
            f"{side} px as they are and smoothed, with the "
            f"{PROFILES[profile].label} profile, {steps} steps, and counted the starts on which "
            f"each classic metric detects the damage by the paper's test: " + "; ".join(parts)
            + f". {outcome}: a verdict holds for starts like the ones it was measured on."
            f"{overall} The whole table, with both controls: docs/start_smoothness.md; the "
            f"nuisance chains, on the starts they ran on: {NUISANCE_TABLE}; the default profile "
            f"and both controls at other sizes: {SIZES_TABLE}.")


def by_size(made: dict, metrics: list[str], profiles: list[str], sides: list[int],
            starts: list[str], steps: int) -> str:
    """The Help's paragraph for a run at several sizes: per profile, on the starts as they
    are, on how many each metric detects at each size; then, over the chains (start and
    smoothing) made at every size, on how many each metric's verdict is not the same at every
    size."""
    def tallies(profile: str) -> str:
        """"1024 px brisque 1/4, …; 1536 px …": at each size with runs of the starts as is."""
        per_side = []
        for side in sides:
            found = [made[job] for job in made if job.profile == profile and job.side == side
                     and job.smoothing == AS_IS]
            if found:
                per_side.append(f"{side} px " + ", ".join(f"{m} {_tally(found, m)}"
                                                          for m in metrics))
        return f"{PROFILES[profile].label}: " + "; ".join(per_side)

    as_is = [tallies(profile) for profile in profiles]
    by_chain: dict[tuple, dict[int, dict]] = {}
    for job, (rows, _) in made.items():
        by_chain.setdefault((job.profile, job.start, job.smoothing), {})[job.side] = rows
    complete = {key: found for key, found in by_chain.items() if len(found) == len(sides)}
    flips = []
    for profile in profiles:
        chains = [found for key, found in complete.items() if key[0] == profile]
        moved = {m: sum(len({rows[m].detects for rows in found.values()}) > 1
                        for found in chains) for m in metrics}
        flips.append(f"{PROFILES[profile].label} " + ", ".join(
            f"{m} {count}/{len(chains)}" for m, count in moved.items()))
    smoothings = sorted({key[2] for key in complete}, key=SMOOTHED.index)
    kept = ", ".join(SMOOTHING_LABEL[smoothing] for smoothing in smoothings)
    return (f"**How large the frame is (our finding, not the paper's).** The same chains at "
            f"{', '.join(f'{side} px' for side in sides)} on the long side: "
            f"{photographs(starts)}, {steps} steps, seed 0 (the start-smoothness finding, "
            f"docs/start_smoothness.md, is at {suite_runs.SIDE} px). Starts as they are on "
            "which each classic metric detects the damage by the paper's test: "
            + "; ".join(as_is) + f". Over the chains made at every size (each start {kept}), "
            "on how many a metric's verdict is not the same at every size: " + "; ".join(flips)
            + ". A verdict holds at the size it was measured at: the page runs every start at "
            f"up to {MAX_SIDE} px on the long side (`BANANA_MAX_SIDE`), so the page's default "
            f"run is at {MAX_SIDE} px and its verdicts are the {MAX_SIDE} px rows', not the "
            f"{suite_runs.SIDE} px ones. Every run: {SIZES_TABLE}.")


def false_alarms(made: dict, metrics: list[str], profiles: list[str], side: int) -> str:
    """The Help's paragraph for a run of nuisance profiles: on how many of its chains each
    metric detects, every one of them a false alarm."""
    found = list(made.values())
    return (f"**False alarms (ours).** On the nuisance chains ({', '.join(profiles)}; the same "
            f"starts and smoothings, at {side} px), a person would call every copy the same "
            "picture, so every detection there is a false alarm. The paper's test raised them on: "
            + ", ".join(f"{m} {_tally(found, m)}" for m in metrics)
            + " chains (the paper's test has no noise floor; the leaderboard's robust rule adds "
            f"one): {NUISANCE_TABLE}.")


def default_example(side: int) -> list[str]:
    """The page's default example, chosen by the paper's conditions: among the bundled starts
    of 2K or more (the paper's size), the one whose BRISQUE at `side` px (the page's run size)
    is nearest the paper's example start. Never by the verdicts a run on it gives."""
    from PIL import Image

    from banana_space.scores.catalog import to_tensor
    from banana_space.scores.pool import POOL

    brisque = {}
    for path in sorted(suite_runs.EXAMPLES.glob("*.png")):
        with Image.open(path) as opened:
            image = opened.convert("RGB")
        if max(image.size) < 2048:
            continue
        image.thumbnail((side, side), Image.Resampling.LANCZOS)
        brisque[path.name] = POOL.score("brisque", to_tensor(image))
    chosen = nearest_to_the_paper(brisque)
    return ["## The page's default example", "",
            f"Chosen by the paper's conditions, never by the verdicts a run on it gives: among "
            f"the bundled starts of 2K or more (the paper's starts were 2K or more), the one "
            f"whose BRISQUE at {side} px (the size the page runs it at, `BANANA_MAX_SIDE`) is "
            f"nearest the paper's example start ({PAPER_START_BRISQUE}): **{chosen}** "
            "(`app.DEFAULT_EXAMPLE`; tests/test_conditions.py checks it). The flat synthetic "
            "renders are generated images too, but 1536 px and far smoother.", "",
            "| start | BRISQUE | distance from the paper's |", "| --- | --- | --- |",
            *(f"| {name} | {value:.1f} | {abs(value - PAPER_START_BRISQUE):.1f} |"
              for name, value in brisque.items())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", required=True, help="comma-separated simulate profiles")
    parser.add_argument("--starts", default="photo-moss,photo-nuthatch,photo-flower,photo-facade")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sides", default=str(suite_runs.SIDE),
                        help="comma-separated longest sides, px (several: the size study)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("--made-only", action="store_true",
                        help="make no run: the tables from the runs already made (a study "
                             "cut short; the tables leave out what is missing)")
    parser.add_argument("--out", type=Path, required=True, help="the markdown file to write")
    parser.add_argument("--page", type=Path, help="also write the finding into this page")
    args = parser.parse_args()
    profiles, starts = args.profiles.split(","), args.starts.split(",")
    sides = [int(side) for side in args.sides.split(",")]
    jobs = [job for smoothing in SMOOTHED for side in sides for job in
            suite_runs.jobs_for(profiles, starts, args.steps, side, METRICS, smoothing,
                                folder=f"{side}px")]
    # the starts as they are first, at every size; then within a smoothing and size whole
    # profiles, every start: a run cut short leaves complete rows
    jobs.sort(key=lambda job: (SMOOTHED.index(job.smoothing), sides.index(job.side),
                               profiles.index(job.profile), starts.index(job.start)))
    args.runs.mkdir(parents=True, exist_ok=True)
    if not args.made_only:
        suite_runs.run_all(jobs, args.runs, args.workers)
    made = collect(jobs, args.runs)
    metrics = expand_metric_names(",".join(METRICS))
    missing = [job.place(Path()).as_posix() for job in jobs if job not in made]
    head = (f"Written by `scripts/start_smoothness.py` (our finding, not the paper's). "
            f"{args.steps} steps, seed 0, at {', '.join(f'{side} px' for side in sides)} on the "
            f"long side (the page runs at {MAX_SIDE} px, `BANANA_MAX_SIDE`), on "
            f"{photographs(starts)}, each as it is and smoothed "
            f"({', '.join(SMOOTHING_LABEL[s] for s in SMOOTHED[1:])}; the TV weight is "
            "scikit-image's default, 0.1) after the resize; profiles "
            f"{', '.join(profiles)}. The paper's example start scores BRISQUE "
            f"{PAPER_START_BRISQUE}. Each cell: on how many starts the metric detects by "
            f"{PAPER_TEST}; on a nuisance chain every detection is a false alarm."
            + (f" Not made (the study was cut short), so not in the tables: "
               f"{', '.join(missing)}." if missing else ""))
    damage = PROFILES[profiles[0]].kind == "damage"
    if len(sides) > 1:
        block, text = "sizes", by_size(made, metrics, profiles, sides, starts, args.steps)
    elif damage:
        block, text = "finding", finding(made, metrics, profiles[0], sides[0], starts,
                                         args.steps)
    else:
        block, text = "nuisances", false_alarms(made, metrics, profiles, sides[0])
    args.out.write_text("\n".join([
        "# Start smoothness" + (" and frame size: conditions" if len(sides) > 1 else
                                ": a condition") + " of the experiment", "", head, "",
        *summary(made, metrics, profiles, sides), "", text, "",
        *default_example(MAX_SIDE), "",
        "## Every run", "", "Per metric: the paper's verdict and Δ from step 1 at steps "
        f"{', '.join(map(str, CHECKPOINTS))} (oriented: negative = worse).", "",
        *every_run(made, metrics)]) + "\n")
    if args.page:
        into_page(args.page, block, text, script="start_smoothness.py")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
