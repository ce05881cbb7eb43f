"""Where one frame's scoring time goes (issue 35): each metric, bare pyiqa against the engine's
metric object, and the steps inside pyiqa's NIQE, BRISQUE and SSIM against the exact
equivalents of those steps (banana_space/scores/nss.py, equivalents.py), at 1536 x 1024 and 2048².

One frame (a real photo's `simulate` step; psnr and ssim against the photo), every metric
created once and warmed up on a small frame, each measured once (repeats are kept small: the
machine is shared). CPU seconds are this process's, all of torch's threads; the 1-minute load
average is printed on every row, since a busy neighbour stretches the wall time. Each step's
two routes must give the same numbers (bit for bit, or ssim's map to 1e-12) or the script stops.

    .venv/bin/python bench/scoring_breakdown.py [--sizes 1536x1024,2048x2048] [--no-bare]
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


def by_metric(size: tuple[int, int], bare: bool) -> list[list[Any]]:
    import pyiqa
    import torch

    from banana_space.scores.catalog import build_metric, seed_weights, to_tensor

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
            with torch.inference_mode():
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
    from pyiqa.archs.ssim_arch import ssim
    from pyiqa.matlab_utils import blockproc, imresize
    from pyiqa.utils.color_util import to_y_channel

    from banana_space.scores import equivalents
    from banana_space.scores import nss
    from banana_space.scores.catalog import to_tensor

    frame, reference = (to_tensor(image) for image in frames(*size))
    with torch.inference_mode():
        luma = to_y_channel(frame, 255, "yiq")
        blocks = luma.to(torch.float64)[..., :size[1] // 96 * 96, :size[0] // 96 * 96]
        mscn = normalize_img_with_gauss(blocks, padding="replicate")
        ssim_pair = [to_y_channel(t, 255, "yiq").to(torch.float64) for t in (frame, reference)]
        steps = [
            ("the frame's luma, for 4 metrics", lambda: [
                to_y_channel(frame, 255, "yiq") for _ in range(4)][0],
             lambda: [nss.luma_255(frame) for _ in range(4)][0],
             "to_y_channel in brisque, niqe, entropy, ssim; once (nss.luma_255)"),
            ("niqe: MSCN, float64 7x7 Gaussian", lambda: normalize_img_with_gauss(
                blocks, padding="replicate"), lambda: nss.normalize_with_gauss(blocks),
             "F.conv2d float64 = im2col + GEMM; scipy correlate"),
            ("niqe: AGGD fits of 96² blocks", lambda: blockproc(mscn, [96, 96], compute_feature),
             lambda: blockproc(mscn, [96, 96], nss.niqe_block_features),
             "9,801-entry table rebuilt and scanned per call; built once, bisected"),
            ("half-size imresize (niqe, brisque)", lambda: imresize(
                blocks, scale=0.5, antialiasing=True), lambda: nss.half_size(blocks),
             "unfold of 10 x the frame; gathered taps"),
            ("brisque: one scale's NSS features", lambda: natural_scene_statistics(luma),
             lambda: nss.brisque_features(luma, 7, 7 / 6),
             "float32 MSCN (oneDNN) kept; the fits as niqe's"),
            ("ssim: five float64 11x11 filters", lambda: ssim(*ssim_pair, data_range=255),
             lambda: equivalents._tiled_ssim(*ssim_pair, 255.0),
             "im2col of 121 x the frame; float64 spectra, 256-row strips"),
        ]
        for dtype in (torch.float32, torch.float64):
            nss._shape_tables(dtype, torch.device("cpu"))  # built once: not a step's cost
        rows = []
        for label, theirs, ours, note in steps:
            nss._LUMA.clear()
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
    parser.add_argument("--sizes", default="1536x1024,2048x2048")
    parser.add_argument("--no-bare", action="store_true",
                        help="leave out bare pyiqa's metrics (8.6 GB of entropy at 2K)")
    args = parser.parse_args()
    import banana_space.budget  # noqa: F401  the engine's malloc settings, for both ways alike

    print(_setup.describe_machine())
    for text in args.sizes.split(","):
        size = tuple(int(side) for side in text.split("x"))
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
