"""Metrics as plug-ins: any installed package can add a no-reference score.

A distribution declares an entry point in the group `banana_space.metrics`; it loads an object
with `name`, `lower_better`, `meaning`, an optional `score_range` (low, high) and `create()`,
which returns a function from a PIL RGB image to a float. The metric then appears wherever a
metric name is taken (`--metrics`, the page, `table`, the leaderboard), in the family
"plug-in", labelled with its distribution's name and version. The protocol is the one pyiqa's
own table answers (orientation, range, how to make it), so `catalog.resolve` treats it alike.

A plug-in that fails to load is one warning and is left out; one that fails to create or to
score is an unavailable metric or a missing cell, like any other metric: never a crash.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from PIL import Image

GROUP = "banana_space.metrics"


@dataclass(frozen=True)
class Plugin:
    """One plug-in metric, read from its entry point."""

    name: str
    lower_better: bool
    meaning: str
    score_range: tuple[float, float] | None
    create: Callable[[], Callable[[Image.Image], float]]
    distribution: str  # "name version": where it came from

    @property
    def label(self) -> str:
        return f"{self.name} ({self.distribution})"


class PluginWarning(UserWarning):
    """A plug-in that could not be loaded: it is left out, nothing else changes."""


def _read(entry: EntryPoint) -> Plugin:
    spec = entry.load()
    name, create = getattr(spec, "name", None), getattr(spec, "create", None)
    if not isinstance(name, str) or not name.strip() or not callable(create):
        raise TypeError("the object needs a `name` (text) and a `create()` function")
    score_range = getattr(spec, "score_range", None)
    if score_range is not None:
        low, high = (float(end) for end in score_range)
        if not (math.isfinite(low) and math.isfinite(high) and high > low):
            raise ValueError(f"score_range {score_range!r} is not a (low, high) pair")
        score_range = (low, high)
    dist = entry.dist
    origin = f"{dist.name} {dist.version}" if dist is not None else entry.value
    return Plugin(name.strip(), bool(getattr(spec, "lower_better", False)),
                  str(getattr(spec, "meaning", "")), score_range, create, origin)


@cache
def plugins() -> dict[str, Plugin]:
    """Every plug-in installed in this environment, by metric name (read once per process,
    without importing pyiqa: the page lists them at start-up). A name a ruler, a judge's column
    or another plug-in has is refused with one warning, never an overwrite; one pyiqa has, by
    `catalog.no_reference_names`.

    Returns:
        metric name -> `Plugin`, in the entry points' order.
    """
    from ..judges import REGISTRY as JUDGES
    from .rulers import RULERS

    taken = {*RULERS, *JUDGES}
    found: dict[str, Plugin] = {}
    for entry in entry_points(group=GROUP):
        try:
            plugin = _read(entry)
            if plugin.name in taken or plugin.name in found:
                raise ValueError(f"the name {plugin.name!r} is already taken")
        except Exception as error:  # someone else's package: one warning, never a crash
            warnings.warn(f"metric plug-in {entry.name} ({entry.value}) left out: "
                          f"{type(error).__name__}: {error}", PluginWarning, stacklevel=2)
            continue
        found[plugin.name] = plugin
    return found


def plugin_metric(plugin: Plugin) -> Callable[[Any], float]:
    """The plug-in behind pyiqa's calling convention: a (1, 3, H, W) tensor in [0, 1] in, a
    number out (the pool turns a failure into a missing cell)."""
    import numpy as np

    measure = plugin.create()

    def metric(image: Any) -> float:
        pixels = image[0].permute(1, 2, 0).cpu().numpy() * 255.0
        frame = Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), "RGB")
        return float(measure(frame))

    return metric
