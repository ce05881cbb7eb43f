"""The decomposition of a score's change (banana_space/explain/shapley.py): the model re-evaluated
on a frame's own features is pyiqa's score of that frame (pyiqa's BRISQUE and NIQE, created
here without our equivalents), the Shapley values of known games are the textbook ones, the
groups cover the 36 features once, and NIQE's blocks are paired only between frames of one
size."""

from __future__ import annotations

import itertools

import numpy as np
import pyiqa
import pytest
import torch
from conftest import EXAMPLES
from PIL import Image
from tolerance import FLOAT64_RELATIVE

from banana_space.backends.simulate import SimulateBackend
from banana_space.explain import shapley as explain
from banana_space.scores.catalog import to_tensor
from banana_space.scores.scoring import as_scored


def pyiqas(metric, frame: Image.Image) -> float:
    """pyiqa's score of a frame with torch's threads as the scorer has them: BRISQUE's float32
    sums move with the thread count (2e-4 of the score between one thread and a many-core CI
    machine's default), and a recorded score is always a one-thread score."""
    with torch.inference_mode(), as_scored():
        return float(metric(to_tensor(frame)))


def crop(name: str, size: tuple[int, int]) -> Image.Image:
    with Image.open(EXAMPLES / name) as image:
        return image.convert("RGB").crop((0, 0, *size))


@pytest.fixture(scope="module")
def frames() -> list[Image.Image]:
    """A held-out photograph and its first two simulated copies (the default profile)."""
    frames = [crop("coffee.png", (600, 400))]
    backend = SimulateBackend()
    for step in (1, 2):
        frames.append(backend.edit(frames[-1], "replica", seed=5, step=step).image)
    return frames


@pytest.mark.parametrize("metric", sorted(explain.EXPLAINED))
def test_the_model_on_a_frames_own_features_is_pyiqas_score(weights_dir, frames,
                                                            metric: str) -> None:
    network = explain._network(metric)  # the catalog's: it seeds pyiqa's weights offline
    theirs = pyiqa.create_metric(metric, device="cpu")  # pyiqa's own network, not ours
    for frame in frames:
        features = explain.frame_features(metric, frame)
        with torch.inference_mode():
            ours = float(network.from_features(features[None]))
        score = pyiqas(theirs, frame)
        # one path (the equivalents, tested to 1e-6 of pyiqa's score), so equal but for that
        assert ours == pytest.approx(score, rel=1e-6)


@pytest.mark.parametrize("metric", sorted(explain.EXPLAINED))
def test_the_decomposition_spans_the_two_frames_scores(weights_dir, frames, metric: str) -> None:
    earlier, later = (explain.frame_features(metric, frame) for frame in frames[1:])
    found = explain.decompose(metric, earlier, later)
    theirs = pyiqa.create_metric(metric, device="cpu")
    assert found.before == pytest.approx(pyiqas(theirs, frames[1]), rel=1e-6)
    assert found.after == pytest.approx(pyiqas(theirs, frames[2]), rel=1e-6)
    # the values add up to the change: float64 sums of 32 terms of the scores' size
    assert sum(found.contributions.values()) == pytest.approx(
        found.delta, rel=FLOAT64_RELATIVE, abs=FLOAT64_RELATIVE * abs(found.before))
    assert list(found.contributions) == list(explain.FEATURE_GROUPS)
    assert len({round(v, 9) for v in found.contributions.values()}) > 1  # a real split
    # swapped the other way, the 64 values are the same ones (the dual game): every share
    # changes sign
    backwards = explain.decompose(metric, later, earlier)
    assert backwards.contributions == pytest.approx(
        {group: -value for group, value in found.contributions.items()},
        abs=FLOAT64_RELATIVE * abs(found.before))


def test_a_swap_that_changes_nothing_has_no_share(weights_dir, frames) -> None:
    earlier = explain.frame_features("brisque", frames[1])
    later = earlier.clone()
    later[[0, 18]] = explain.frame_features("brisque", frames[2])[[0, 18]]  # only α moves
    found = explain.decompose("brisque", earlier, later)
    assert found.contributions["MSCN shape α"] == pytest.approx(found.delta, rel=1e-12)
    assert all(value == 0 for group, value in found.contributions.items()
               if group != "MSCN shape α")


def test_the_groups_cover_every_feature_once_at_both_scales() -> None:
    masks = explain.group_masks()
    assert masks.shape == (2 ** len(explain.FEATURE_GROUPS), 36)
    assert not masks[0].any() and masks[-1].all()
    singles = [masks[1 << bit] for bit in range(len(explain.FEATURE_GROUPS))]
    assert (torch.stack(singles).sum(dim=0) == 1).all()  # disjoint, and every column in one
    for single, columns in zip(singles, explain.FEATURE_GROUPS.values(), strict=True):
        assert single.nonzero().flatten().tolist() == [*columns, *(c + 18 for c in columns)]


def brute_force_shapley(value, players: int) -> list[float]:
    """The definition: each player's marginal change averaged over every order of joining."""
    shares = [0.0] * players
    orders = list(itertools.permutations(range(players)))
    for order in orders:
        joined = 0
        for player in order:
            shares[player] += value(joined | 1 << player) - value(joined)
            joined |= 1 << player
    return [share / len(orders) for share in shares]


def test_shapley_values_are_the_textbook_ones() -> None:
    additive = [sum((1.5, -2.0, 4.0)[i] for i in range(3) if mask >> i & 1) for mask in range(8)]
    assert explain.shapley_values(additive, 3) == pytest.approx([1.5, -2.0, 4.0])
    # the glove game: player 0 holds a left glove, 1 and 2 right ones; a pair is worth 1
    gloves = [float(mask & 1 and bool(mask & 6)) for mask in range(8)]
    assert explain.shapley_values(gloves, 3) == pytest.approx([2 / 3, 1 / 6, 1 / 6])
    rng = np.random.default_rng(7)
    game = rng.normal(size=2 ** 5).tolist()
    shares = explain.shapley_values(game, 5)
    assert shares == pytest.approx(brute_force_shapley(game.__getitem__, 5), rel=1e-12)
    assert sum(shares) == pytest.approx(game[-1] - game[0], rel=1e-12)


def test_niqe_pairs_blocks_only_between_frames_of_one_size(weights_dir) -> None:
    photo = crop("rocket.jpg", (384, 288))
    small = explain.frame_features("niqe", photo)
    smaller = explain.frame_features("niqe", photo.crop((0, 0, 288, 288)))
    assert small.shape == (12, 36) and smaller.shape == (9, 36)
    with pytest.raises(explain.NotExplained, match="do not correspond"):
        explain.decompose("niqe", small, smaller)
    # BRISQUE's one vector per frame pairs up whatever the sizes
    brisque = [explain.frame_features("brisque", image) for image in (photo, photo.crop(
        (0, 0, 288, 288)))]
    assert explain.decompose("brisque", *brisque).delta != 0


def test_a_metric_without_a_decomposition_is_refused() -> None:
    with pytest.raises(explain.NotExplained, match="piqe has no decomposition.*brisque, niqe"):
        explain.check_explained("piqe")
