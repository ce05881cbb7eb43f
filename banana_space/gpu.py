"""The GPU seam: the one place where engine work crosses onto a GPU.

On a ZeroGPU Space every call of a function decorated with `@spaces.GPU` borrows a GPU slice for
about `duration` seconds and runs in a forked worker process; its arguments and its result are
pickled across (spaces 0.51, `spaces/zero/wrappers.py`). A 100-step chain must not hold a slice
for its whole length, so the engine asks for the GPU one edit step, or one judged frame, at a time:

    run_on_gpu(generate_frame, job)

By default that is a plain call. `page/zerogpu.py`, the app's side, decorates a trampoline with
`spaces.GPU` at import time (ZeroGPU only schedules functions decorated before the app launches)
and installs it with `use_gpu_runner`; the engine itself never imports `spaces` or gradio.

Because the seam may pickle, what crosses it is small: a module-level function and a job of plain
data (an image, a prompt, a seed, a model key). Models never cross it: they live in a `ModelCache`
of the process, which a forked worker inherits and looks up by key.
"""

from __future__ import annotations

import gc
import math
import shutil
import sys
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .settings import engine_settings

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

# (fn, *args, **kwargs) -> fn(*args, **kwargs), possibly on a borrowed GPU.
GpuRunner = Callable[..., Any]

# Booked when a GPU function does not say how long it takes (ZeroGPU's own default is 60 s).
DEFAULT_GPU_SECONDS = 60
# ZeroGPU's two sizes and what a second of each costs of the daily quota (hub-docs
# `spaces-zerogpu.md`, "Technical Specifications", 2026-08-22): `large`, half an RTX Pro 6000
# Blackwell with 48 GB, the default; `xlarge`, the whole card with 96 GB, at twice the quota.
QUOTA_PER_SECOND = {"large": 1, "xlarge": 2}


def call_here(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """The default runner: a plain call in this process, on whatever GPU it has."""
    return fn(*args, **kwargs)


_runner: GpuRunner = call_here


def use_gpu_runner(runner: GpuRunner | None) -> None:
    """Install `runner` for every later `run_on_gpu`; None puts back the plain call."""
    global _runner
    _runner = call_here if runner is None else runner


def current_gpu_runner() -> GpuRunner:
    return _runner


def run_on_gpu(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run one unit of GPU work (one edit step, one judged frame) through the installed runner."""
    return _runner(fn, *args, **kwargs)


def gpu_task(estimate: Callable[..., float],
             size: Callable[..., str] | None = None) -> Callable[[F], F]:
    """Mark a function run through `run_on_gpu` with how many seconds it may need and, where it
    needs more than ZeroGPU's default half card, which size (`QUOTA_PER_SECOND`), each computed
    from its own arguments; ZeroGPU books a slot that long, of that size, before the call starts."""

    def mark(fn: F) -> F:
        fn.gpu_seconds = estimate  # type: ignore[attr-defined]
        fn.gpu_size = size  # type: ignore[attr-defined]
        return fn

    return mark


def size_of(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> str:
    """The ZeroGPU size `fn(*args, **kwargs)` asks for: "large" unless its `gpu_task` says."""
    size = getattr(fn, "gpu_size", None)
    chosen = "large" if size is None else size(*args, **kwargs)
    if chosen not in QUOTA_PER_SECOND:
        raise ValueError(f"unknown ZeroGPU size {chosen!r}; one of {', '.join(QUOTA_PER_SECOND)}")
    return chosen


def estimated_seconds(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> int:
    """Seconds to book for `fn(*args, **kwargs)`: the runner's signature, so `page/zerogpu.py`
    can pass it to `spaces.GPU(duration=...)`, which calls it with the decorated function's
    arguments."""
    estimate = getattr(fn, "gpu_seconds", None)
    if estimate is None:
        return DEFAULT_GPU_SECONDS
    return booked_seconds(estimate(*args, **kwargs))


class GpuRefused(RuntimeError):
    """ZeroGPU would not run a call: the visitor's daily quota is used up (`kind` "quota"), no
    GPU came free in time ("queue"), or the GPU task was aborted ("aborted"). Not a failure of
    the work: a chain ends on it as *stopped*, keeping its frames, and can be resumed.
    `page/zerogpu.py` turns what `spaces` raises into this; the engine never sees `spaces`."""

    ADVICE = {"quota": "GPU quota used up at step {step}: sign in or resume later",
              "queue": "no GPU came free at step {step} (ZeroGPU's queue timed out): "
                       "resume later",
              "aborted": "the GPU task was aborted at step {step}: resume later"}

    def __init__(self, kind: str, detail: str = "") -> None:
        if kind not in self.ADVICE:
            raise ValueError(f"unknown refusal {kind!r}; one of {', '.join(self.ADVICE)}")
        super().__init__(detail or kind)
        self.kind = kind

    def at_step(self, step: int) -> str:
        """One line for the visitor, e.g. "GPU quota used up at step 17: sign in or resume
        later"."""
        return self.ADVICE[self.kind].format(step=step)


def booked_seconds(estimate: float) -> int:
    """What ZeroGPU books for an estimate: whole seconds, at least one."""
    return max(1, math.ceil(estimate))


def cuda_available() -> bool:
    """True where torch sees CUDA (on ZeroGPU, once `spaces` is imported). Loads no model.

    The app lists backends before its page can show, so where there is plainly no NVIDIA GPU
    (no driver, not ZeroGPU) this answers without importing torch (seconds on a small CPU)."""
    driver = (engine_settings().zero_gpu or Path("/proc/driver/nvidia").exists()
              or shutil.which("nvidia-smi"))
    if not driver:
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()

def cuda_missing(needs_gpu: str) -> Callable[[], str | None]:
    """A registry's cheap check for a model that runs on CUDA only (an editor, a judge).

    Args:
        needs_gpu: the one-line how-to a visitor reads where there is no GPU.

    Returns:
        A function of no arguments answering None where torch sees CUDA, else `needs_gpu`. It
        loads no weights, and imports torch only where an NVIDIA driver is (`cuda_available`).
    """

    def check() -> str | None:
        return None if cuda_available() else needs_gpu

    return check


def device_refusal(device: str, handed_in: bool, needs_gpu: str) -> str | None:
    """Why a model cannot run on `device` here, or None. Weights read from the hub run on CUDA
    only, so nothing ever loads tens of GB onto a CPU; a model handed in runs where its caller
    says."""
    if not device.startswith("cuda"):
        return None if handed_in else (
            f"the hub weights run on CUDA only; device={device!r} is for a model you hand in")
    return None if cuda_available() else needs_gpu


class ModelCache:
    """Models loaded at most once per process, found by key from inside a GPU call.

    With `keep_one`, loading a model drops the others this cache loaded first: two 20-60 GB
    editors do not fit one GPU slice. Models handed in by a caller (`adopt`) are the caller's:
    never dropped for another, and kept only as long as the object that handed them in lives.
    """

    def __init__(self, keep_one: bool = False) -> None:
        self._keep_one = keep_one
        self._models: dict[str, Any] = {}
        self._adopted: set[str] = set()
        # One lock for all keys: a second caller waits for a load in progress rather than
        # starting another copy of the same 40 GB.
        self._lock = threading.Lock()

    def adopt(self, model: Any, owner: Any) -> str:
        """Keep a ready model handed in through `owner` (a backend, a judge) while `owner`
        lives; returns its key. Kept longer, a handed-in model would stay on the GPU after its
        backend is gone."""
        key = f"adopted-{id(owner)}"
        with self._lock:
            self._models[key] = model
            self._adopted.add(key)
        # No lock here: a collection can run this on a thread that holds it.
        weakref.finalize(owner, self._forget, key)
        return key

    def _forget(self, key: str) -> None:
        self._models.pop(key, None)
        self._adopted.discard(key)

    def clear(self) -> None:
        """Drop every model, handed in or loaded, and give the GPU memory they held back."""
        with self._lock:
            self._models.clear()
            self._adopted.clear()
            _free_cuda()

    def holds(self, key: str) -> bool:
        return key in self._models

    def get(self, key: str, load: Callable[[], T] | None = None) -> T:
        """The model under `key`, loaded with `load()` on first use."""
        with self._lock:
            if key not in self._models:
                if load is None:
                    raise KeyError(f"no model {key!r} in this process and no way to load it")
                if self._keep_one:
                    self._drop_loaded()
                self._models[key] = load()
            return self._models[key]

    def _drop_loaded(self) -> None:
        loaded = [key for key in self._models if key not in self._adopted]
        for key in loaded:
            del self._models[key]
        if loaded:
            _free_cuda()


def _free_cuda() -> None:
    """Collect what was dropped and hand the CUDA memory it held back to the driver."""
    if "torch" in sys.modules:
        gc.collect()
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
