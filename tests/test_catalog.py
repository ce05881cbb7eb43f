"""The one resolver of score names (issue 26): family, role, orientation, range and builder
for pyiqa's names and our rulers alike, and the names that are not a score of one frame
(distributions, a caption score, a pair comparison) refused with their reason, never listed."""

from __future__ import annotations

import pytest
from PIL import Image

from banana_space.scores.catalog import (
    NOT_PER_FRAME,
    build_metric,
    check_metric_names,
    metric_info,
    no_reference_names,
    parse_metric_names,
    resolve,
    to_tensor,
)
from banana_space.scores.rulers import RULERS

REFUSED = ("fid", "sfid", "fid_dinov2", "inception_score", "clipscore", "compare2score")


def test_names_that_are_not_a_score_of_one_frame_are_not_listed() -> None:
    assert set(NOT_PER_FRAME) == set(REFUSED)
    listed = no_reference_names()
    assert not set(REFUSED) & set(listed)
    assert {"brisque", "niqe", *RULERS} <= set(listed)


@pytest.mark.parametrize(("name", "reason"), [
    ("fid", "two sets of images"), ("sfid", "two sets of images"),
    ("fid_dinov2", "two sets of images"), ("inception_score", "a set of images"),
    ("clipscore", "caption"), ("compare2score", "pairs of images")])
def test_they_are_refused_with_the_reason(name: str, reason: str) -> None:
    for ask in (lambda: parse_metric_names(f"brisque,{name}"), lambda: metric_info(name),
                lambda: check_metric_names([name])):
        with pytest.raises(ValueError, match=f"{name} is not a score of one frame: .*{reason}"):
            ask()


def test_a_refusal_and_an_unknown_name_are_both_said() -> None:
    with pytest.raises(ValueError) as refused:
        parse_metric_names("clipscore,brisquee")
    assert "clipscore is not a score of one frame" in str(refused.value)
    assert "unknown metric(s) brisquee" in str(refused.value)


def test_one_resolver_answers_for_every_family() -> None:
    psnr, brisque, grain = (resolve(name).info for name in ("psnr", "brisque", "scale_index"))
    assert (psnr.family, psnr.role, psnr.lower_better) == ("pyiqa", "fidelity", False)
    assert (brisque.family, brisque.role, brisque.lower_better) == ("pyiqa", "metric", True)
    assert (grain.family, grain.role, grain.lower_better) == ("ours", "metric", True)
    assert psnr.score_range == (0.0, 40.0)
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        resolve("nope")


def test_the_resolvers_builder_makes_a_metric_that_scores() -> None:
    frame = to_tensor(Image.new("RGB", (64, 48), (90, 120, 150)))
    assert float(build_metric("scale_index", "cpu")(frame)) == pytest.approx(0.0, abs=1e-6)
    assert float(build_metric("psnr", "cpu")(frame, frame)) > 40  # identical: pyiqa's cap


@pytest.mark.parametrize("name", ["brisque", "piqe"])
def test_brisque_and_piqe_run_on_the_cpu_wherever_the_others_run(name: str, photo) -> None:
    """On an H200, pyiqa's float32 BRISQUE and PIQE of a photo with smooth areas came out far
    from their CPU scores (bench/gpu_check.py): asked for CUDA, they are built on the CPU, and
    score as there. On a machine without CUDA, building for CUDA would raise."""
    import torch

    asked_cuda, on_cpu = build_metric(name, "cuda"), build_metric(name, "cpu")
    assert str(asked_cuda.device) == "cpu"
    frame = to_tensor(photo)
    with torch.inference_mode():
        assert float(asked_cuda(frame)) == float(on_cpu(frame))
