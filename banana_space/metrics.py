"""The old single home of the metric names and the metric pool, kept as one import for the
files another change is moving (app.py, handlers.py, mcp_tools.py, runs.py; cli.py's imports
too): the names live in `catalog.py` (what every score name is and how to make it) and the
pool in `pool.py`. Other engine modules import from those two; nothing here is new.
"""

from __future__ import annotations

from .catalog import (
    CPU_DEFAULTS,
    FIDELITY,
    PRESET_KEYS,
    PRESETS,
    ScoreInfo,
    build_metric,
    check_metric_names,
    expand_metric_names,
    metric_info,
    no_reference_names,
    parse_metric_names,
    to_tensor,
)
from .pool import MAX_METRICS_PER_RUN, POOL, MetricPool, MetricUnavailable

__all__ = ["CPU_DEFAULTS", "FIDELITY", "MAX_METRICS_PER_RUN", "POOL", "PRESETS", "PRESET_KEYS",
           "MetricPool", "MetricUnavailable", "ScoreInfo", "build_metric",
           "check_metric_names", "expand_metric_names", "metric_info", "no_reference_names",
           "parse_metric_names", "to_tensor"]
