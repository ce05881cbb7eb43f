"""What moved a classic metric's score between two frames: an exact decomposition of the change
into the metric model's own feature groups (Shapley values). Ours, not the paper's.

BRISQUE (Mittal, Moorthy & Bovik, IEEE TIP 21(12), 2012) is an SVR on 36 features of a frame;
NIQE (Mittal, Soundararajan & Bovik, IEEE SPL 20(3), 2013) is the distance between the
multivariate Gaussian (MVG) of its 96 px blocks' features and a pristine MVG (eq. 10). Both
compute the same 18 features at each of two scales, in pyiqa's order (archs/brisque_arch.py
`natural_scene_statistics`, archs/niqe_arch.py `compute_feature`): the shape and spread of the
MSCN coefficients, then (shape, mean, left and right spread) of the products of each
coefficient with its neighbour in four orientations. `FEATURE_GROUPS` names six groups of
those columns, each the same columns at both scales.

A group's *swap* takes its columns from the later frame and every other column from the earlier
one, then re-evaluates the model: BRISQUE's SVR on the mixed 36-vector; NIQE's MVG fit and
distance on the mixed blocks' features (each block's columns swapped with those of the block in
the same place of the other frame, so NIQE needs two frames of one size). The value of a set
of swapped groups is that score; with nothing swapped it is the earlier frame's score, with all
swapped the later one's. The Shapley value of a group is its marginal change averaged over
every order of swapping (Shapley 1953), computed exactly from all 2^6 = 64 values, so the six
values add up to the score's change by construction (to float64 rounding).

Every score is pyiqa's: the features and the model are those of the metric object
`catalog.build_metric` makes (pyiqa's, with the exact equivalents of `nss.py`, whose
`features` and `from_features` are pyiqa's own steps split where the features end);
tests/test_explain.py checks both ends against pyiqa's score of each frame.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import torch
from PIL import Image

from ..scores.catalog import build_metric, to_tensor
from ..scores.scoring import as_scored

FEATURES_PER_SCALE = 18
SCALES = 2
# Group -> its columns within one scale (pyiqa's order; the same at the other scale). The four
# orientations are torch.roll's shifts: BRISQUE's (0, 1), (1, 0), (1, 1), (-1, 1); NIQE's
# (0, 1), (1, 0), (1, 1), (1, -1), whose last pairs the same anti-diagonal neighbours.
FEATURE_GROUPS: dict[str, tuple[int, ...]] = {
    "MSCN shape α": (0,),
    "MSCN spread": (1,),  # BRISQUE's GGD σ², NIQE's mean AGGD scale
    "horizontal pair products": (2, 3, 4, 5),
    "vertical pair products": (6, 7, 8, 9),
    "diagonal pair products": (10, 11, 12, 13),
    "anti-diagonal pair products": (14, 15, 16, 17),
}
# pyiqa metric -> what one frame's features are, for the reader (the networks themselves come
# from the catalog; each has `features` and `from_features`, nss.py).
EXPLAINED: dict[str, str] = {
    "brisque": "one 36-vector per frame; the SVR re-evaluated on the mixed vector",
    "niqe": "36 features per 96 px block; the MVG fitted again to the mixed blocks",
}
EXPLAINED_TEXT = ", ".join(EXPLAINED)


class NotExplained(ValueError):
    """The change cannot be decomposed (a metric without a decomposition, frames whose
    features do not correspond); the message says why in one line."""


@dataclass(frozen=True)
class Decomposition:
    """A score's change from an earlier frame to a later one, split over `FEATURE_GROUPS`."""

    metric: str
    before: float  # the model on the earlier frame's features: its score
    after: float  # the model on the later frame's features: its score
    contributions: dict[str, float]  # group -> its Shapley value, in the score's units

    @property
    def delta(self) -> float:
        """The change the contributions add up to: `after - before`."""
        return self.after - self.before


def check_explained(metric: str) -> None:
    """Raises `NotExplained` unless `metric` has a decomposition."""
    if metric not in EXPLAINED:
        raise NotExplained(f"{metric} has no decomposition into its model's feature groups: "
                           f"only {EXPLAINED_TEXT} do")


@functools.cache
def _network(metric: str) -> Any:
    """The metric's network on the CPU, as the catalog builds it (pyiqa's object, its
    network the exact equivalent)."""
    return build_metric(metric, "cpu").net


def frame_features(metric: str, image: Image.Image) -> torch.Tensor:
    """The features `metric`'s model reads in one RGB frame: BRISQUE's (36,), NIQE's
    (blocks, 36)."""
    check_explained(metric)
    with torch.inference_mode(), as_scored():
        return _network(metric).features(to_tensor(image))[0]


def group_masks() -> torch.Tensor:
    """(2^groups, 36) booleans: row `m` marks the columns of the groups whose bits are set in
    `m` (bit i: the i-th group of `FEATURE_GROUPS`), at both scales."""
    rows = []
    for subset in range(2 ** len(FEATURE_GROUPS)):
        row = torch.zeros(FEATURES_PER_SCALE * SCALES, dtype=torch.bool)
        for bit, columns in enumerate(FEATURE_GROUPS.values()):
            if subset >> bit & 1:
                for scale in range(SCALES):
                    row[[scale * FEATURES_PER_SCALE + c for c in columns]] = True
        rows.append(row)
    return torch.stack(rows)


def shapley_values(values: list[float], players: int) -> list[float]:
    """Each player's Shapley value from the value of every coalition (`values[m]`, bit i of
    `m` set when player i is in it): Σ over coalitions S without i of
    |S|! (n - |S| - 1)! / n! (v(S ∪ {i}) - v(S)). They sum to v(all) - v(none)."""
    weights = [math.factorial(size) * math.factorial(players - size - 1)
               / math.factorial(players) for size in range(players)]
    shares = []
    for player in range(players):
        bit = 1 << player
        shares.append(math.fsum(weights[subset.bit_count()] * (values[subset | bit]
                                                               - values[subset])
                                for subset in range(2 ** players) if not subset & bit))
    return shares


def decompose(metric: str, earlier: torch.Tensor, later: torch.Tensor) -> Decomposition:
    """The change of `metric` from the frame of `earlier` features to that of `later` ones
    (`frame_features`), split exactly over `FEATURE_GROUPS`.

    Raises:
        NotExplained: no decomposition of `metric`, or features that do not correspond
            (NIQE's blocks of two frames of different sizes), or a mixed set the model
            gives no finite score.
    """
    check_explained(metric)
    if earlier.shape != later.shape:
        raise NotExplained(f"{metric}'s features of the two frames do not correspond "
                           f"({tuple(earlier.shape)} and {tuple(later.shape)}: NIQE's blocks "
                           "pair up only between frames of one size)")
    network = _network(metric)
    with torch.inference_mode():
        # One mix at a time, as the metric scores one frame: a batch would sum BRISQUE's
        # float32 kernel terms in another order and move a score by ~1e-4 of itself.
        scores = [float(network.from_features(torch.where(mask, later, earlier)[None]))
                  for mask in group_masks()]
    if not all(math.isfinite(score) for score in scores):
        raise NotExplained(f"{metric} gives no finite score for some mix of the two frames' "
                           "features (a frame too small or too flat for its model)")
    shares = dict(zip(FEATURE_GROUPS, shapley_values(scores, len(FEATURE_GROUPS)), strict=True))
    return Decomposition(metric, scores[0], scores[-1], shares)
