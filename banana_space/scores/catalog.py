"""What every score name is: its family, role, orientation, range and how to make it.

Every standard score comes from pyiqa (https://github.com/chaofengc/IQA-PyTorch); nothing is
reimplemented here. Orientation and ranges come from pyiqa's own table (`DEFAULT_CONFIGS`), our
rulers' from theirs (`rulers.RULERS`, family "ours"), an installed plug-in's from its entry point
(`plugins.py`, family "plug-in"). `resolve` is the one place that asks which family a name
belongs to; everything else (`Scorer`, the pool, the table, the leaderboard) reads its answer.
Offline machines seed pyiqa's weight cache from `BANANA_WEIGHTS_DIR` (see `seed_weights`).

The paper's protocol scores each frame on its own (Banana100, arXiv 2604.03400, Sec. 3), so a
name pyiqa lists as no-reference that is not a score of one frame (a distance between image
sets, a caption score, a pair comparison) is refused with its reason and never listed.
`parse_metric_names` is the one reader of a metric list (CLI, page, API, MCP).
"""

from __future__ import annotations

import functools
import os
import shutil
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..events import Role, ScoreInfo
from ..settings import engine_settings
from .rulers import RULERS

# Full-reference fidelity to frame 0: in a replication chain the input *is* the right answer.
FIDELITY = ("psnr", "ssim")
# The no-reference metrics that load on any CPU with no download beyond ../shared/weights.
CPU_DEFAULTS = ("brisque", "niqe", "piqe", "entropy")
# pyiqa metrics that run on the CPU even where the others run on a GPU. In float32 on an H200,
# pyiqa's BRISQUE and PIQE of a photo with smooth areas came out 140 % and 38 % away from
# their CPU scores, which float64 puts within 1e-7 of each other on both (docs/performance.md,
# "GPU check"); a score must not depend on the card, and each is a fraction of a CPU second.
ON_CPU = ("brisque", "piqe")
# Metric presets: one table, name -> metric names (pyiqa's and our rulers).
PRESETS: dict[str, tuple[str, ...]] = {
    "CPU classics (4)": CPU_DEFAULTS,
    # The candidates studied in Banana100 (arXiv 2604.03400), Table 2.
    "Banana100 (21 metrics)": (
        "brisque", "niqe", "ilniqe", "piqe", "nrqm", "pi", "cnniqa", "dbcnn", "hyperiqa",
        "musiq", "nima", "paq2piq", "maniqa", "tres", "clipiqa", "clipiqa+", "liqe",
        "qualiclip", "topiq_nr", "arniqa", "wadiqam_nr"),
    # Ours (rulers.py): no-reference measures aimed at what repeated editing adds.
    "Chain-aware rulers": tuple(RULERS),
}
# Short names for the presets, for the command line (`--metrics rulers,brisque`).
PRESET_KEYS = {"classics": "CPU classics (4)", "banana100": "Banana100 (21 metrics)",
               "rulers": "Chain-aware rulers"}
# How a count of one family's scores names them (a run's first line, `finding.summarise`), in the
# order it counts them: the paper's metrics come from pyiqa; ours and plug-ins are not the
# paper's, and are counted apart from its metrics, never pooled with them.
# family -> (noun, what they are)
FAMILY_NOUNS: dict[str, tuple[str, str]] = {
    "pyiqa": ("standard metrics", "pyiqa's, the kind the paper tests"),
    "plug-in": ("plug-in metrics", "installed here, not among the paper's"),
    "ours": ("rulers", "ours, not among the paper's metrics"),
}
# pyiqa's "no-reference" names that are not a score of one frame, each with why.
_DISTRIBUTION = "it measures the distance between two sets of images (their distributions)"
NOT_PER_FRAME = {
    "fid": _DISTRIBUTION,
    "sfid": _DISTRIBUTION,
    "fid_dinov2": _DISTRIBUTION,
    "inception_score": "it scores a set of images (their distribution)",
    "clipscore": "it needs a caption to compare the image with",
    "compare2score": "it compares pairs of images",
}


@dataclass(frozen=True)
class Resolved:
    """A name's answer: what it is (`info`) and how to make it (`build(device)` returns a
    callable taking `to_tensor` tensors, (image[, reference]), and returning a score)."""

    info: ScoreInfo
    build: Callable[[str], Any]


def pyiqa_cache() -> Path:
    """Where pyiqa looks for weights: torch hub's folder (TORCH_HOME) + /pyiqa."""
    torch_home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "torch")
    return Path(torch_home) / "hub" / "pyiqa"


def seed_weights(folder: Path) -> list[str]:
    """Copy weight files that pyiqa would download into its cache, where missing: how an
    offline machine (CI, a laptop on a plane) gets BRISQUE and NIQE. Returns what was copied."""
    cache = pyiqa_cache()
    cache.mkdir(parents=True, exist_ok=True)
    copied = []
    for weights in sorted(Path(folder).glob("*")):
        target = cache / weights.name
        if weights.suffix in (".pth", ".mat", ".pt", ".ckpt") and not target.exists():
            shutil.copyfile(weights, target)
            copied.append(weights.name)
    return copied


def _pyiqa() -> Any:
    global _seeded
    if not _seeded and engine_settings().weights_dir:
        seed_weights(engine_settings().weights_dir)
    _seeded = True
    import pyiqa  # heavy (torch): imported on first use, never at app start

    return pyiqa


_seeded = False


def _pyiqa_configs() -> dict[str, dict[str, Any]]:
    return _pyiqa().default_model_configs.DEFAULT_CONFIGS


def no_reference_names() -> list[str]:
    """Every metric a run can score a frame with: pyiqa's no-reference ones that score one
    frame (not `NOT_PER_FRAME`), ours, then plug-ins (one whose name pyiqa or a ruler already
    has is left out, with one warning)."""
    builtin = [*(n for n in _pyiqa().list_models(metric_mode="NR") if n not in NOT_PER_FRAME),
               *RULERS]
    clashing = _clashing(tuple(_pyiqa_configs()))
    return [*builtin, *(name for name in _plugins() if name not in clashing)]


def _plugins() -> dict[str, Any]:
    from .plugins import plugins

    return plugins()


@functools.cache
def _clashing(pyiqa_names: tuple[str, ...]) -> frozenset[str]:
    """The plug-ins named like one of pyiqa's metrics (any mode): each warned of once."""
    clash = frozenset(set(_plugins()) & set(pyiqa_names))
    for name in sorted(clash):
        warnings.warn(f"metric plug-in {name} left out: pyiqa has a metric of that name",
                      stacklevel=2)
    return clash


def resolve(name: str) -> Resolved:
    """The one answer to "what is this score name?", for pyiqa's names, our rulers and
    plug-ins alike (a ruler's name first, then pyiqa's, then a plug-in's, so a plug-in never
    takes a built-in's name).

    Args:
        name: a metric name, e.g. "brisque", "psnr", "scale_index".

    Returns:
        Its `ScoreInfo` (family; role "fidelity" for a full-reference score, else "metric";
        orientation; range; label) and its builder.

    Raises:
        ValueError: an unknown name (listing the valid ones), or one that is not a score of
            one frame (`NOT_PER_FRAME`, with the reason).
    """
    if name in RULERS:
        ruler = RULERS[name]
        info = ScoreInfo(name, "metric", ruler.lower_better, name, family="ours",
                         score_range=ruler.score_range, meaning=ruler.meaning)
        return Resolved(info, lambda device: _ruler_metric(name))
    if name in NOT_PER_FRAME:
        raise ValueError(not_per_frame(name))
    config = _pyiqa_configs().get(name)
    if config is None and name in _plugins():
        plugin = _plugins()[name]
        info = ScoreInfo(name, "metric", plugin.lower_better, plugin.label, family="plug-in",
                         score_range=plugin.score_range, meaning=plugin.meaning)
        return Resolved(info, lambda device: _plugin_metric(plugin))
    if config is None:
        raise ValueError(f"unknown metric {name!r}; valid no-reference metrics: "
                         f"{', '.join(no_reference_names())}")
    role: Role = "fidelity" if config.get("metric_mode") == "FR" else "metric"
    info = ScoreInfo(name, role, bool(config.get("lower_better", False)), name,
                     score_range=parse_score_range(config.get("score_range")))
    return Resolved(info, lambda device: _pyiqa_metric(name, device))


def metric_info(name: str) -> ScoreInfo:
    """What `name` is (`resolve(name).info`): orientation and range from its table, the role
    from whether it needs a reference. Raises ValueError as `resolve` does."""
    return resolve(name).info


def build_metric(name: str, device: str) -> Any:
    """Create the metric called `name`.

    Args:
        name: a name `resolve` accepts.
        device: "cpu" or "cuda[:N]" (pyiqa's models; rulers, plug-ins and `ON_CPU` run on
            the CPU).

    Returns:
        A callable taking (image[, reference]) tensors from `to_tensor` and returning a score
        (a number or a one-element tensor).
    """
    return resolve(name).build(device)


def not_per_frame(name: str) -> str:
    """Why `name` (one of `NOT_PER_FRAME`) cannot score a frame, in one line."""
    return f"{name} is not a score of one frame: {NOT_PER_FRAME[name]}"


def parse_score_range(text: str | None) -> tuple[float, float] | None:
    """pyiqa's `score_range` text -> (low, high): "~0, ~100" -> (0.0, 100.0) ("~" marks an
    approximate end). None where an end is open ("0, ~") or the text is not a plain pair."""
    parts = [part.strip().lstrip("~").strip() for part in (text or "").split(",")]
    try:
        low, high = (float(part) for part in parts)
    except ValueError:  # an open end, or a multi-part description
        return None
    return (low, high) if high > low else None


def check_metric_names(names: list[str]) -> None:
    """A clear error for a name that cannot score a frame here.

    Args:
        names: metric names (presets already expanded).

    Raises:
        ValueError: naming, for a name that is not a score of one frame, the reason; for an
            unknown or full-reference name, what is valid.
    """
    refused = [not_per_frame(n) for n in names if n in NOT_PER_FRAME]
    valid = set(no_reference_names())
    unknown = [n for n in names if n not in valid and n not in NOT_PER_FRAME]
    if unknown:
        refused.append(f"unknown metric(s) {', '.join(unknown)}; valid no-reference "
                       f"metrics: {', '.join(sorted(valid))}; presets: "
                       f"{', '.join(PRESET_KEYS)}")
    if refused:
        raise ValueError("; ".join(refused))


# What a visitor (the page, the API, MCP) may ask this server to build and keep: the CPU
# classics, the fidelity references and our rulers, each a few MB and a second per frame on any
# CPU. Installed plug-ins (the operator's choice) join them; BANANA_VISITOR_METRICS widens the
# list (read once in page/settings.py). Anything else, a 7-9B model such as qalign or
# qrealign-pro among them, is refused before it is built. The CLI and `table` are the
# operator's own tools and take every name.
VISITOR_METRICS = (*CPU_DEFAULTS, *FIDELITY, *RULERS)


def visitor_metrics(widened: Sequence[str] = ()) -> list[str]:
    """The metrics a visitor may choose here: `VISITOR_METRICS`, the installed plug-ins, and
    `widened` (names or presets the operator added), in that order."""
    return list(dict.fromkeys([*VISITOR_METRICS, *_plugins(), *expand_metric_names(widened)]))


def check_visitor_metrics(names: Sequence[str], allowed: Sequence[str]) -> None:
    """Refuse, before anything is built, a metric a visitor may not choose here.

    Args:
        names: the metric names asked for (presets expanded).
        allowed: `visitor_metrics(...)`.

    Raises:
        ValueError: naming what was refused and listing what is offered.
    """
    refused = [name for name in names if name not in allowed]
    if refused:
        raise ValueError(f"not offered to visitors on this server: {', '.join(refused)} (a "
                         "model costs memory for as long as the server runs); metrics offered "
                         f"here: {', '.join(allowed)}")


def parse_metric_names(names: str | Sequence[str] | None,
                       blank: Sequence[str] = CPU_DEFAULTS) -> list[str]:
    """The one reader of a metric list, for the CLI, the page, the API and MCP.

    Args:
        names: "rulers, brisque" (or a list, or lines); a preset stands for its metrics.
        blank: what an empty list means.

    Returns:
        The checked metric names, presets expanded, in order, repeats dropped.

    Raises:
        ValueError: a name that cannot score a frame, saying why or naming what is valid.
    """
    if isinstance(names, str):
        names = names.replace("\n", ",")
    expanded = expand_metric_names(names or [])
    if not expanded:
        return list(blank)
    check_metric_names(expanded)
    return expanded


def expand_metric_names(names: str | Sequence[str]) -> list[str]:
    """"rulers,brisque,piqe" -> metric names: a preset (its short key such as `rulers` or
    `classics`, or its display name) stands for its metrics; anything else is kept as a name
    for `check_metric_names` to judge. Order is kept, repeats dropped."""
    parts = names.split(",") if isinstance(names, str) else names
    expanded: list[str] = []
    for part in (p.strip() for p in parts if p.strip()):
        preset = PRESETS.get(PRESET_KEYS.get(part.lower(), part))
        expanded.extend(preset if preset is not None else (part,))
    return list(dict.fromkeys(expanded))


def _ruler_metric(name: str) -> Callable[[Any], float]:
    """A ruler behind pyiqa's calling convention: a (1, 3, H, W) tensor in [0, 1] in, a
    number out."""
    measure = RULERS[name].measure

    def metric(image: Any) -> float:
        return measure(image[0].permute(1, 2, 0).cpu().numpy())

    return metric


def _plugin_metric(plugin: Any) -> Callable[[Any], float]:
    from .plugins import plugin_metric

    return plugin_metric(plugin)


def _pyiqa_metric(name: str, device: str) -> Any:
    metric = _pyiqa().create_metric(name, device="cpu" if name in ON_CPU else device)
    # pyiqa's own object; where its way is pathological at 2K, an exact equivalent inside it
    from .equivalents import with_equivalent

    return with_equivalent(name, metric)


def to_tensor(image: Image.Image) -> Any:
    """PIL RGB -> float tensor (1, 3, H, W) in [0, 1], the input every pyiqa metric takes."""
    import torch

    array = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    return torch.from_numpy(array).permute(2, 0, 1).unsqueeze(0).contiguous()
