"""Every standard score comes from pyiqa (https://github.com/chaofengc/IQA-PyTorch); nothing is
reimplemented here.

Each metric is created once per process and shared by every run (`POOL`); a per-metric lock
lets concurrent runs use one module safely. Orientation and ranges come from pyiqa's own table
(`DEFAULT_CONFIGS`): the engine never special-cases a metric by name. Offline machines seed
pyiqa's weight cache from `BANANA_WEIGHTS_DIR` (see `seed_weights`). A metric that cannot be
created (weights unreachable offline, no GPU, missing package) is reported unavailable with the
reason, once, and never stops a run.

Our own rulers (`rulers.py`, family "ours") sit in the same registry, behind the same calling
convention, oriented by their own table (`RULERS`); so do installed plug-ins (`plugins.py`,
family "plug-in"). `parse_metric_names` is the one reader of a metric list (CLI, page, API, MCP).
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image

from .rulers import RULERS

Role = Literal["metric", "fidelity", "judge"]

# Full-reference fidelity to frame 0: in a replication chain the input *is* the right answer.
FIDELITY = ("psnr", "ssim")
# The no-reference metrics that load on any CPU with no download beyond ../shared/weights.
CPU_DEFAULTS = ("brisque", "niqe", "piqe", "entropy")
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


@dataclass(frozen=True)
class ScoreInfo:
    """What a score column is: its name, how to read it, and its role on the plot.

    `family` says whose measure it is: "pyiqa" (every standard metric), "ours" (the rulers in
    `rulers.py`), or "judge". `score_range` is the metric's nominal (low, high) where its table
    gives one (pyiqa's `score_range`), for scaling curves by what the metric can move."""

    name: str
    role: Role
    lower_better: bool
    label: str = ""
    family: str = "pyiqa"
    score_range: tuple[float, float] | None = None
    meaning: str = ""

    @property
    def direction(self) -> str:
        return "lower is better" if self.lower_better else "higher is better"


class MetricUnavailable(RuntimeError):
    """The metric cannot be created here; the message says why."""


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
    if not _seeded and os.environ.get("BANANA_WEIGHTS_DIR"):
        seed_weights(Path(os.environ["BANANA_WEIGHTS_DIR"]))
    _seeded = True
    import pyiqa  # heavy (torch): imported on first use, never at app start

    return pyiqa


_seeded = False


# --- The name registry: pyiqa's table and our rulers' table answer the same questions. ---


def no_reference_names() -> list[str]:
    """Every metric a run can score a frame with: pyiqa's no-reference ones, ours, plug-ins
    (one whose name pyiqa already has is left out, with a warning, once)."""
    builtin = [*_pyiqa().list_models(metric_mode="NR"), *RULERS]
    return [*builtin, *(name for name in _plugins() if name not in _clashing(tuple(builtin)))]


def _plugins() -> dict[str, Any]:
    from .plugins import plugins

    return plugins()


@functools.cache
def _clashing(builtin: tuple[str, ...]) -> frozenset[str]:
    clash = frozenset(set(_plugins()) & set(builtin))
    for name in clash:
        warnings.warn(f"metric plug-in {name} left out: pyiqa has a metric of that name",
                      stacklevel=2)
    return clash


def metric_info(name: str) -> ScoreInfo:
    """What `name` is: orientation and range from its table (pyiqa's or the rulers'), the
    role from whether it needs a reference."""
    if name in RULERS:
        ruler = RULERS[name]
        return ScoreInfo(name, "metric", ruler.lower_better, name, family="ours",
                         score_range=ruler.score_range, meaning=ruler.meaning)
    config = _pyiqa().default_model_configs.DEFAULT_CONFIGS.get(name)
    if config is None and name in _plugins():
        plugin = _plugins()[name]
        return ScoreInfo(name, "metric", plugin.lower_better, plugin.label, family="plug-in",
                         score_range=plugin.score_range, meaning=plugin.meaning)
    if config is None:
        raise ValueError(f"unknown metric {name!r}; valid no-reference metrics: "
                         f"{', '.join(no_reference_names())}")
    role: Role = "fidelity" if config.get("metric_mode") == "FR" else "metric"
    return ScoreInfo(name, role, bool(config.get("lower_better", False)), name,
                     score_range=parse_score_range(config.get("score_range")))


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
    """A clear error for an unknown or full-reference name, listing what is valid."""
    valid = set(no_reference_names())
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise ValueError(f"unknown metric(s) {', '.join(unknown)}; valid no-reference "
                         f"metrics: {', '.join(sorted(valid))}; presets: "
                         f"{', '.join(PRESET_KEYS)}")


def parse_metric_names(names: str | Sequence[str] | None,
                       blank: Sequence[str] = CPU_DEFAULTS) -> list[str]:
    """The one reader of a metric list, for the CLI, the page, the API and MCP: "rulers,
    brisque" (or a list, or lines) -> checked metric names, presets expanded; `blank` when
    nothing is named. Raises ValueError naming what is valid."""
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


# --- end of the name registry ---


def build_metric(name: str, device: str) -> Any:
    """Create the metric called `name`: a callable taking (image[, reference]) tensors from
    `to_tensor` and returning a score (a number or a one-element tensor)."""
    if name in RULERS:
        return _ruler_metric(name)
    if metric_info(name).family == "plug-in":
        from .plugins import plugin_metric

        return plugin_metric(_plugins()[name])
    metric = _pyiqa().create_metric(name, device=device)
    # pyiqa's own object; where its way is pathological at 2K, an exact equivalent inside it
    from .equivalents import with_equivalent

    return with_equivalent(name, metric)


def to_tensor(image: Image.Image) -> Any:
    """PIL RGB -> float tensor (1, 3, H, W) in [0, 1], the input every pyiqa metric takes."""
    import torch

    array = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    return torch.from_numpy(array).permute(2, 0, 1).unsqueeze(0).contiguous()


# ---- The metric pool: creating metrics without letting one stall anyone else -------------
# A run waits this long, in all, for its metrics to be created (weights fetched, models built);
# what is not ready by then is unavailable for that run while its creation goes on behind.
LOAD_SECONDS = float(os.environ.get("BANANA_METRIC_LOAD_S", "30"))
# The most metrics one run may ask for: every creation costs memory and time for everyone.
MAX_METRICS_PER_RUN = 32


class MetricPool:
    """Process-wide cache of metrics, created on first use and then reused.

    Each name is created at most once at a time, in its own thread, and never under a lock that
    another name's creation or any scoring waits on: a metric whose weights hang stalls only
    the runs that asked for it, each for at most `load_seconds`. A failure is kept per name; so
    is a creation that overran the limit, so the next run does not wait for it again."""

    def __init__(self, device: str | None = None, build: Any = None,
                 load_seconds: float | None = None) -> None:
        self._device = device
        self._build = build or build_metric
        self.load_seconds = LOAD_SECONDS if load_seconds is None else load_seconds
        self._metrics: dict[str, Any] = {}
        self._failures: dict[str, str] = {}
        self._loading: dict[str, tuple[threading.Event, float]] = {}  # name -> (done, since)
        self._use_locks: dict[str, threading.Lock] = {}
        self._state = threading.Lock()  # guards the dicts above; never held while creating

    @property
    def device(self) -> str:
        if self._device is None:
            import torch

            self._device = "cuda" if torch.cuda.is_available() else "cpu"
        return self._device

    def is_ready(self, name: str) -> bool:
        """Created or failed: asking for it costs no wait."""
        with self._state:
            return name in self._metrics or name in self._failures

    def begin(self, name: str) -> threading.Event:
        """Start creating `name` in the background unless it is made, failed or under way;
        the event is set once it is made or has failed."""
        with self._state:
            if name in self._metrics or name in self._failures:
                ready = threading.Event()
                ready.set()
                return ready
            if name not in self._loading:
                self._loading[name] = (threading.Event(), time.monotonic())
                threading.Thread(target=self._create, args=(name,), name=f"load-{name}",
                                 daemon=True).start()
            return self._loading[name][0]

    def _create(self, name: str) -> None:
        try:
            metric = self._build(name, self.device)
        except Exception as error:  # any failure to build means "unavailable here"
            with self._state:
                self._failures[name] = _reason(error)
        else:
            with self._state:
                self._metrics[name] = metric
                self._use_locks[name] = threading.Lock()
                self._failures.pop(name, None)  # it overran a run's limit, but it is here now
        finally:
            with self._state:
                done, _ = self._loading.pop(name)
            done.set()

    def get(self, name: str, deadline: float | None = None) -> Any:
        """The metric, waiting for its creation until `deadline` (time.monotonic()) at most:
        `load_seconds` from now by default. Raises `MetricUnavailable` with the reason."""
        done = self.begin(name)
        with self._state:
            since = self._loading.get(name, (None, time.monotonic()))[1]
        if deadline is None:
            deadline = time.monotonic() + self.load_seconds
        # A creation that already overran the limit for an earlier run is not waited for again.
        deadline = min(deadline, since + self.load_seconds)
        done.wait(max(0.0, deadline - time.monotonic()))
        with self._state:
            if name in self._metrics:
                return self._metrics[name]
            if name in self._failures:
                raise MetricUnavailable(self._failures[name])
        raise MetricUnavailable(f"{WEIGHTS_UNREACHABLE} within {self.load_seconds:.0f} s")

    def unavailable_reason(self, name: str) -> str | None:
        try:
            self.get(name)
        except MetricUnavailable as error:
            return str(error)
        return None

    def score(self, name: str, image: Any, reference: Any | None = None) -> float:
        """One score; `image` and `reference` are tensors from `to_tensor`."""
        import torch

        metric = self.get(name)
        with self._use_locks[name], torch.inference_mode():
            value = metric(image) if reference is None else metric(image, reference)
        value = float(value.item() if hasattr(value, "item") else value)
        return value if math.isfinite(value) else math.nan


WEIGHTS_UNREACHABLE = "weights not reachable"
_NETWORK_ERRORS = ("urlopen", "Name or service", "resolve", "LocalEntryNotFound", "offline",
                   "Connection", "timed out", "Timeout", "HTTPError", "URLError")


def _reason(error: Exception) -> str:
    """One short line a visitor can read: never a traceback fragment."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if any(mark.lower() in f"{type(error).__name__} {text}".lower() for mark in _NETWORK_ERRORS):
        return f"{WEIGHTS_UNREACHABLE} (offline?)"
    if isinstance(error, ImportError) and error.name:
        return f"needs the Python package {error.name.split('.')[0]}"
    return f"{type(error).__name__}: {text[:120]}" if text else type(error).__name__
# ---- end of the metric pool ---------------------------------------------------------------


POOL = MetricPool()
