"""The metric pool: each metric created once per process, shared by every run, and a creation
that hangs never stalls anyone else.

A metric is made by `catalog.build_metric` (pyiqa's, ours or a plug-in's); a per-metric lock
lets concurrent runs use one module safely. A metric that cannot be created (weights
unreachable offline, no GPU, missing package) is reported unavailable with the reason, once,
and never stops a run.

The pool is bounded: at most `MAX_LOADED` metrics, and every loaded metric's weights (its
parameters and buffers) are held in the memory budget (`budget.MemoryBudget.hold`) for as long
as the process keeps them, within the budget's held share; one that does not fit is dropped
and reported unavailable, with why. Visitors choose only from the metrics the server can
afford (`catalog.visitor_metrics`); the bound is what holds for the operator's tools too.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

from ..budget import BUDGET, MemoryBudget, size_text
from ..markup import error_line
from ..settings import engine_settings
from .catalog import build_metric


class MetricUnavailable(RuntimeError):
    """The metric cannot be created here; the message says why."""


# A run waits this long, in all, for its metrics to be created (weights fetched, models built);
# what is not ready by then is unavailable for that run while its creation goes on behind.
LOAD_SECONDS = engine_settings().metric_load_s  # BANANA_METRIC_LOAD_S
# The most metrics one run may ask for: every creation costs memory and time for everyone.
MAX_METRICS_PER_RUN = 32
# The most metrics one process keeps loaded (what visitors may choose is far fewer).
MAX_LOADED = 48


class MetricPool:
    """Process-wide cache of metrics, created on first use and then reused.

    Each name is created at most once at a time, in its own thread, and never under a lock that
    another name's creation or any scoring waits on: a metric whose weights hang stalls only
    the runs that asked for it, each for at most `load_seconds`. A failure is kept per name; so
    is a creation that overran the limit, so the next run does not wait for it again."""

    def __init__(self, device: str | None = None, build: Any = None,
                 load_seconds: float | None = None, budget: MemoryBudget | None = None,
                 max_loaded: int = MAX_LOADED) -> None:
        self._device = device
        self._build = build or build_metric
        self.budget = BUDGET if budget is None else budget
        self.max_loaded = max_loaded
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
            if name not in self._loading and (
                    len(self._metrics) + len(self._loading) >= self.max_loaded):
                self._failures[name] = (f"this server keeps at most {self.max_loaded} metrics "
                                        "loaded, and that many are")
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
            weights = resident_bytes(metric)
            if not self.budget.hold(weights):
                del metric  # dropped: its memory goes back before anything else is loaded
                held = size_text(int(self.budget.HELD_SHARE * self.budget.capacity))
                raise MemoryError(f"its weights ({size_text(weights)}) would pass the {held} "
                                  "the memory budget keeps for loaded metrics")
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


def resident_bytes(metric: Any) -> int:
    """The bytes a built metric keeps: its torch parameters and buffers (a ruler or a plain
    function keeps none worth counting)."""
    tensors = [*getattr(metric, "parameters", list)(), *getattr(metric, "buffers", list)()]
    return sum(t.numel() * t.element_size() for t in tensors)


WEIGHTS_UNREACHABLE = "weights not reachable"
_NETWORK_ERRORS = ("urlopen", "Name or service", "resolve", "LocalEntryNotFound", "offline",
                   "Connection", "timed out", "Timeout", "HTTPError", "URLError")


def _reason(error: Exception) -> str:
    """One short line a visitor can read: never a traceback fragment."""
    if any(mark.lower() in error_line(error).lower() for mark in _NETWORK_ERRORS):
        return f"{WEIGHTS_UNREACHABLE} (offline?)"
    if isinstance(error, ImportError) and error.name:
        return f"needs the Python package {error.name.split('.')[0]}"
    return error_line(error, limit=120)


POOL = MetricPool()
