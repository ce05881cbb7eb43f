"""Where one frame's scoring time goes: the whole frame as the page scores it, each metric,
bare pyiqa against the engine's metric object, and the steps inside pyiqa's NIQE, BRISQUE, PIQE
and SSIM against the exact equivalents of those steps (banana_space/scores/planes.py, nss.py,
equivalents.py), at the page's default size (2048 x 1280) unless told otherwise.

One frame (a real photo's `simulate` step; psnr and ssim against the photo). The whole frame
goes through the engine's `Scorer` as a run scores it (its metrics side by side, one torch
thread each, the frame's planes shared between them), after one untimed frame; `--repeats`
frames, the median. Metric by metric and step by step, every metric is created once and warmed
up on a small frame, each measured once with one torch thread, as the scorer runs it. CPU
seconds are this process's, every thread; the 1-minute load average is printed on every row,
since a busy neighbour stretches the wall time. Each step's two routes must give the same
numbers (bit for bit, or ssim's map to 1e-12) or the script stops. `--scorer-only` gives the
first table alone: it runs on any checkout of the engine, to measure a change side by side.

    .venv/bin/python bench/scoring_breakdown.py [--sizes 2048x1280,2048x2048] [--no-bare]
                                                [--repeats 3] [--scorer-only]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import _setup

METRICS = ("brisque", "niqe", "piqe", "entropy", "psnr", "ssim")
FIDELITY = ("psnr", "ssim")


def timed(work: Callable[[], Any]) -> tuple[Any, float, float, float]:
    """(result, wall s, CPU s, load average at the start)."""
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return result, time.perf_counter() - wall, time.process_time() - cpu, load


def frames(width: int, height: int) -> tuple[Any, Any]:
    from banana_space.backends.simulate import SimulateBackend

    reference = _setup.photo(max(width, height)).resize((width, height))
    return SimulateBackend().edit(reference, "", seed=0, step=1).image, reference


def whole_frame(size: tuple[int, int], repeats: int) -> list[list[Any]]:
    """The frame through the engine's `Scorer`, as a run scores it: wall and CPU s per frame."""
    from statistics import median

    from banana_space.scores.catalog import CPU_DEFAULTS, seed_weights
    from banana_space.scores.scoring import SCORING_THREADS, Scorer

    seed_weights(_setup.WEIGHTS)
    frame, reference = frames(*size)
    scorer = Scorer(CPU_DEFAULTS)
    list(scorer.load())
    scorer.measure(frame.resize((256, 160)), reference.resize((256, 160)))
    scorer.measure(frame, reference)  # the input's tensor and its planes kept, as in a run
    taken = [timed(lambda: scorer.measure(frame, reference)) for _ in range(repeats)]
    return [["all " + str(len(scorer.metrics)) + " (" + ", ".join(scorer.metrics) + ")",
             SCORING_THREADS, round(median(t[1] for t in taken), 2),
             round(median(t[2] for t in taken), 2),
             round(min(t[2] for t in taken), 2), round(median(t[3] for t in taken), 1)]]


def by_metric(size: tuple[int, int], bare: bool) -> list[list[Any]]:
    import pyiqa
    import torch

    from banana_space.scores.catalog import build_metric, seed_weights, to_tensor
    from banana_space.scores.scoring import as_scored

    seed_weights(_setup.WEIGHTS)
    frame, reference = (to_tensor(image) for image in frames(*size))
    warm = (frame[..., :200, :200], reference[..., :200, :200])
    rows = []
    for name in METRICS:
        ways = {"engine": build_metric(name, "cpu")}
        if bare:
            ways["bare pyiqa"] = pyiqa.create_metric(name, device="cpu")
        row: list[Any] = [name]
        values = []
        for metric in ways.values():
            args = (frame, reference) if name in FIDELITY else (frame,)
            with torch.inference_mode(), as_scored():
                metric(*(warm if name in FIDELITY else warm[:1]))
                value, wall, cpu, load = timed(lambda m=metric, a=args: float(m(*a)))
            values.append(value)
            row += [round(wall, 2), round(cpu, 2)]
        assert len(set(values)) == 1, (name, values)  # the engine's score is pyiqa's
        if bare:
            row.append(round(row[2] / row[4], 3))
        rows.append(row + [round(load, 1)])
    return rows


def by_step(size: tuple[int, int]) -> list[list[Any]]:
    """pyiqa's own function for each step against the route the engine takes."""
    import torch
    from pyiqa.archs.brisque_arch import natural_scene_statistics
    from pyiqa.archs.func_util import normalize_img_with_gauss
    from pyiqa.archs.niqe_arch import compute_feature
    from pyiqa.archs.piqe_arch import piqe
    from pyiqa.archs.ssim_arch import ssim
    from pyiqa.matlab_utils import blockproc, imresize
    from pyiqa.utils.color_util import to_y_channel

    from banana_space.scores import equivalents, nss, planes
    from banana_space.scores.catalog import to_tensor
    from banana_space.scores.scoring import as_scored

    frame, reference = (to_tensor(image) for image in frames(*size))
    with torch.inference_mode(), as_scored():
        luma = to_y_channel(frame, 255, "yiq")
        blocks = luma.to(torch.float64)[..., :size[1] // 96 * 96, :size[0] // 96 * 96]
        mscn = normalize_img_with_gauss(blocks, padding="replicate")
        ssim_pair = [to_y_channel(t, 255, "yiq").to(torch.float64) for t in (frame, reference)]
        steps = [
            ("the frame's luma, for 5 metrics", lambda: [
                to_y_channel(frame, 255, "yiq") for _ in range(5)][0],
             lambda: [planes.luma_255(frame) for _ in range(5)][0],
             "to_y_channel in brisque, niqe, entropy, ssim, piqe; once (planes.luma_255)"),
            ("niqe: MSCN, float64 7x7 Gaussian", lambda: normalize_img_with_gauss(
                blocks, padding="replicate"), lambda: planes.normalize_with_gauss(
                blocks, padding="replicate"),
             "F.conv2d float64 = im2col + GEMM; scipy correlate in 128-row bands"),
            ("niqe: AGGD fits of 96² blocks", lambda: blockproc(mscn, [96, 96], compute_feature),
             lambda: nss.block_features(mscn, 96),
             "9,801-entry table rebuilt and scanned per call; built once, bisected, "
             "4 block columns at a time"),
            ("half-size imresize (niqe, brisque)", lambda: imresize(
                blocks, scale=0.5, antialiasing=True), lambda: nss.half_size(blocks),
             "unfold of 10 x the frame; strided taps summed"),
            ("brisque: one scale's NSS features", lambda: natural_scene_statistics(luma),
             lambda: nss.brisque_features(luma, 7, 7 / 6),
             "float32 MSCN: oneDNN on the whole frame; the same call on 32-row bands"),
            ("piqe: the whole score", lambda: piqe(frame)[0], lambda: nss.piqe_score(frame),
             "its own luma and whole-frame MSCN; the shared Y, the banded MSCN"),
            ("ssim: five float64 11x11 filters", lambda: ssim(*ssim_pair, data_range=255),
             lambda: equivalents._tiled_ssim(*ssim_pair, 255.0),
             "im2col of 121 x the frame; float64 spectra, 118-row strips"),
        ]
        for dtype in (torch.float32, torch.float64):
            nss._shape_tables(dtype, torch.device("cpu"))  # built once: not a step's cost
        rows = []
        for label, theirs, ours, note in steps:
            planes._PLANES.clear()
            reference_value, their_wall, their_cpu, load = timed(theirs)
            our_value, our_wall, our_cpu, _ = timed(ours)
            _check_equal(label, our_value, reference_value)
            rows.append([label, round(their_wall, 2), round(their_cpu, 2), round(our_wall, 2),
                         round(our_cpu, 2), round(our_cpu / their_cpu, 3), round(load, 1), note])
    return rows


def _check_equal(label: str, ours: Any, theirs: Any) -> None:
    import torch

    if label.startswith("ssim"):  # a mean of a map of float64 filters
        assert abs(float(ours) - float(theirs)) <= 1e-12 * abs(float(theirs)), label
    else:
        assert torch.equal(ours.nan_to_num(), theirs.nan_to_num()), label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2048x1280")
    parser.add_argument("--no-bare", action="store_true",
                        help="leave out bare pyiqa's metrics (8.6 GB of entropy at 2K)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scorer-only", action="store_true",
                        help="the whole frame through the Scorer only")
    args = parser.parse_args()
    import banana_space.budget  # noqa: F401  the engine's malloc settings, for both ways alike

    print(_setup.describe_machine())
    for text in args.sizes.split(","):
        size = tuple(int(side) for side in text.split("x"))
        _setup.print_table(
            f"one {size[0]} x {size[1]} frame through the engine's Scorer, as a run scores it "
            f"(median of {args.repeats})", ["metrics", "metric threads", "wall s", "CPU s",
                                            "least CPU s", "load (1 min)"],
            whole_frame(size, args.repeats))
        if args.scorer_only:
            continue
        headers = ["metric", "engine wall s", "engine CPU s"]
        if not args.no_bare:
            headers += ["bare wall s", "bare CPU s", "engine / bare (wall)"]
        rows = by_metric(size, not args.no_bare)
        total = ["all six", *(round(sum(r[i] for r in rows), 2) for i in range(1, len(headers)))]
        if not args.no_bare:
            total[-1] = round(total[1] / total[3], 3)
        _setup.print_table(f"one {size[0]} x {size[1]} frame, metric by metric, one at a time",
                           [*headers, "load (1 min)"], [*rows, [*total, ""]])
        _setup.print_table(
            f"{size[0]} x {size[1]}: steps inside the metrics, pyiqa's function against the "
            "engine's route", ["step", "pyiqa wall s", "pyiqa CPU s", "ours wall s",
                               "ours CPU s", "CPU ours / pyiqa", "load (1 min)", "what"],
            by_step(size))


if __name__ == "__main__":
    main()
