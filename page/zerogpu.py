"""ZeroGPU glue: imported first thing in app.py, before anything touches CUDA: the app's side of
the GPU seam (the engine never imports `spaces`).

It decorates two trampolines with `spaces.GPU` at import time (ZeroGPU schedules only functions
decorated before the app launches), one per GPU size (`large`, half an RTX Pro 6000 with 48 GB,
the default; `xlarge`, the whole card at twice the quota; spaces 0.51 takes `size=`), and
installs a runner that picks one per call, so each edit step and each judged frame borrows a GPU
slice of the size it needs for just that call (`banana_space.gpu`). The booking length and the
size are computed per call from the job (model, image size, inference steps).

Off ZeroGPU (no SPACES_ZERO_GPU in the environment) `spaces.GPU` returns the function unchanged
(spaces 0.51, `spaces/zero/decorator.py`), so this is a plain call on a laptop or a GPU box.

BANANA_PRELOAD (comma-separated backend or judge names, e.g. "flux2,judge_vqr1") loads those
weights now and places them on CUDA. On ZeroGPU that is the documented pattern (hub-docs
`spaces-zerogpu.md`, "Model loading": models placed on `cuda` at module level, where CUDA is
emulated, are packed at start-up and moved onto each worker's GPU), so there it defaults to the
card's `preload_from_hub` pair, the default open editor and the judge; set it to "none" to load
each model on its first use instead, as everywhere else.
"""

from __future__ import annotations

import functools
from typing import Any

import spaces  # before torch initialises CUDA: spaces patches torch.cuda on ZeroGPU

from banana_space import gpu
from banana_space.settings import EngineSettings, engine_settings

# What spaces 0.51 raises when ZeroGPU will not run a call: a gr.Error whose title says why
# (spaces/zero/client.py `schedule`, spaces/zero/wrappers.py). "ZeroGPU worker error" is a
# refusal only as "GPU task aborted"; with another message it is the function's own failure.
REFUSALS = {"ZeroGPU quota exceeded": "quota", "ZeroGPU pending credits exceeded": "quota",
            "ZeroGPU illegal duration": "quota", "ZeroGPU queue timeout": "queue",
            "ZeroGPU client error": "queue"}
ABORTED = ("ZeroGPU worker error", "GPU task aborted")


@spaces.GPU(duration=gpu.estimated_seconds)
def run_on_zerogpu(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


@spaces.GPU(duration=gpu.estimated_seconds, size="xlarge")
def run_on_zerogpu_xlarge(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


def run_sized(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    """One GPU call on the trampoline of the size the job asks for (`gpu.size_of`)."""
    sized = run_on_zerogpu_xlarge if gpu.size_of(fn, *args, **kwargs) == "xlarge" \
        else run_on_zerogpu
    return sized(fn, *args, **kwargs)


def refusal(error: Exception) -> gpu.GpuRefused | None:
    """The engine's `GpuRefused` for a ZeroGPU refusal, None for any other error."""
    title, message = getattr(error, "title", None), str(getattr(error, "message", error))
    if (title, message) == ABORTED:
        return gpu.GpuRefused("aborted", message)
    return gpu.GpuRefused(REFUSALS[title], message) if title in REFUSALS else None


def refusals_named(runner: gpu.GpuRunner) -> gpu.GpuRunner:
    """`runner`, raising `GpuRefused` where ZeroGPU refused the call, so a chain stops there
    cleanly (frames kept, resumable) instead of failing."""

    @functools.wraps(runner)
    def run(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        try:
            return runner(fn, *args, **kwargs)
        except Exception as error:
            refused = refusal(error)
            if refused is None:
                raise
            raise refused from error

    return run


gpu.use_gpu_runner(refusals_named(run_sized))


def preload(names: list[str]) -> None:
    """Load these backends' and judges' weights now and place them on CUDA."""
    from banana_space.backends import REGISTRY as BACKENDS
    from banana_space.backends import create_backend
    from banana_space.judges import create_judge

    for name in names:
        model = create_backend(name) if name in BACKENDS else create_judge(name)
        if not hasattr(model, "load"):
            raise ValueError(f"BANANA_PRELOAD: {name} has no weights to load")
        model.load()


ZEROGPU_PRELOAD = "flux2,judge_vqr1"


def preload_names(settings: EngineSettings) -> list[str]:
    """The models BANANA_PRELOAD names; on ZeroGPU, `ZEROGPU_PRELOAD` when it is unset."""
    default = ZEROGPU_PRELOAD if settings.zero_gpu else ""
    names = default if settings.preload is None else settings.preload
    return [] if names.strip() == "none" else [n.strip() for n in names.split(",") if n.strip()]


preload(preload_names(engine_settings()))
