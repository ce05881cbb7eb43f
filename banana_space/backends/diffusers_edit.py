"""Open image editors run through diffusers: Qwen-Image-Edit-2509, FLUX.1 Kontext [dev], FLUX.2.

One table (`MODELS`) says what differs by model; one backend class runs any row. Model cards:
- https://huggingface.co/Qwen/Qwen-Image-Edit-2509: 40 steps, `true_cfg_scale=4.0` with
  `negative_prompt=" "`; a 20B MMDiT with Qwen2.5-VL-7B as text encoder, ~58 GB in bf16.
- https://huggingface.co/black-forest-labs/FLUX.1-Kontext-dev: `guidance_scale=2.5`, 28 steps;
  a 12B transformer with CLIP-L and T5-XXL, ~34 GB in bf16.
- https://huggingface.co/black-forest-labs/FLUX.2-klein-4B: step-distilled, 4 steps, guidance
  ignored; a 4B transformer with Qwen3-4B, ~16 GB in bf16: the default `flux2`, as it fits one
  ZeroGPU slice beside the judge.
- https://huggingface.co/black-forest-labs/FLUX.2-dev (`variant="dev"`): 50 steps,
  `guidance_scale=4`; 32B with Mistral-Small-3.1-24B, ~112 GB in bf16: a whole H200 only.

Resolution follows the input: the frame is scaled down to at most ~1 MP, where all four were
trained (up only below a pipeline's minimum side, 64 px for FLUX.2), and rounded down to the
pipeline's multiple (16); the result is scaled back to the input size. Weights load lazily,
once per process, in bf16, and only where CUDA is: nothing here ever loads 20 GB onto a CPU.
The pipeline call is one `run_on_gpu` job (see `..gpu`): one edit step per ZeroGPU booking.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from PIL import Image

from ..backends.base import BackendUnavailable, Report, report_nothing
from ..gpu import (
    QUOTA_PER_SECOND,
    ModelCache,
    booked_seconds,
    cuda_missing,
    device_refusal,
    gpu_task,
    run_on_gpu,
)
from .base import BackendInfo, Edit, Entry, Option

NEEDS_GPU = ("needs a GPU: this backend runs on CUDA / ZeroGPU; "
             "on this machine use simulate or replay")
MAX_WORK_AREA = 1024 * 1024  # ~1 MP: the area each model was trained around
BOOKING_MARGIN_S = 30  # text encoding, VAE, and a ZeroGPU worker moving weights onto the GPU


def _qwen_options(width: int, height: int, guidance: float) -> dict[str, Any]:
    # Qwen-Image-Edit is not guidance-distilled: its card uses true CFG against a blank prompt.
    return {"true_cfg_scale": guidance, "negative_prompt": " "}


def _kontext_options(width: int, height: int, guidance: float) -> dict[str, Any]:
    # Kontext would otherwise snap the input to its preferred ~1 MP sizes and rescale the output
    # to `max_area` (1 MP by default); our frames come already at their working size.
    return {"guidance_scale": guidance, "max_area": width * height, "_auto_resize": False}


def _flux2_options(width: int, height: int, guidance: float) -> dict[str, Any]:
    return {"guidance_scale": guidance}


@dataclass(frozen=True)
class Model:
    name: str
    repo_id: str
    pipeline_class: str  # a diffusers class name, imported only when the weights load
    steps: int
    guidance: float
    call_options: Callable[[int, int, float], dict[str, Any]]  # (width, height, guidance)
    min_side: int  # the pipeline refuses smaller frames (FLUX.2 checks for 64 px)
    # Seconds per denoising step at 1 MP on an H200, with margin: an estimate that sizes the
    # ZeroGPU booking until bench/gpu_check.py has measured it.
    seconds_per_step: float
    # The ZeroGPU size one edit books (gpu.QUOTA_PER_SECOND): the weights (bf16, the cards' sizes
    # above) plus VisualQuality-R1's ~17 GB, which the card preloads onto the same GPU, against
    # `large`'s 48 GB. FLUX.2 [dev] (~112 GB) fits neither size: it needs a dedicated H200.
    zerogpu_size: str


MODELS: dict[str, Model] = {m.name: m for m in (
    Model("qwen-image-edit", "Qwen/Qwen-Image-Edit-2509", "QwenImageEditPlusPipeline",
          40, 4.0, _qwen_options, 16, 1.5, "xlarge"),
    Model("flux-kontext", "black-forest-labs/FLUX.1-Kontext-dev", "FluxKontextPipeline",
          28, 2.5, _kontext_options, 16, 0.7, "xlarge"),
    Model("flux2-klein-4b", "black-forest-labs/FLUX.2-klein-4B", "Flux2KleinPipeline",
          4, 1.0, _flux2_options, 64, 0.4, "large"),
    Model("flux2-dev", "black-forest-labs/FLUX.2-dev", "Flux2Pipeline",
          50, 4.0, _flux2_options, 64, 2.0, "xlarge"),
)}

# Backend name -> its variants (variant -> a key of MODELS); the first is the default.
VARIANTS: dict[str, dict[str, str]] = {
    "qwen-image-edit": {"2509": "qwen-image-edit"},
    "flux-kontext": {"dev": "flux-kontext"},
    "flux2": {"klein-4b": "flux2-klein-4b", "dev": "flux2-dev"},
}

_SIZE = "works at the input size rounded to 16 px, at most ~1 MP."
_OPTIONS = (Option("guidance_scale", float, "Open editors: guidance scale (blank = the model's "
                   "default)"),
            Option("num_inference_steps", int, "Open editors: inference steps (blank = the "
                   "model's default)"))
INFOS = {
    "qwen-image-edit": BackendInfo(
        "qwen-image-edit", "Qwen-Image-Edit-2509 (GPU)",
        f"Qwen/Qwen-Image-Edit-2509 via diffusers, 40 steps; ~58 GB of weights; {_SIZE}",
        needs_gpu=True, options=_OPTIONS),
    "flux-kontext": BackendInfo(
        "flux-kontext", "FLUX.1 Kontext [dev] (GPU)",
        f"black-forest-labs/FLUX.1-Kontext-dev via diffusers, 28 steps; ~34 GB; {_SIZE}",
        needs_gpu=True, options=_OPTIONS),
    "flux2": BackendInfo(
        "flux2", "FLUX.2 (GPU)",
        "black-forest-labs/FLUX.2-klein-4B via diffusers, 4 steps, ~16 GB (variant='dev': "
        f"FLUX.2 [dev], ~112 GB); {_SIZE}",
        needs_gpu=True, options=(Option("variant", flag=False), *_OPTIONS)),
}

# One editor per process at a time: two do not fit one GPU slice.
_PIPELINES = ModelCache(keep_one=True)
gpu_missing = cuda_missing(NEEDS_GPU)  # the registry's cheap check: loads no weights


def work_size(width: int, height: int, multiple: int, min_side: int = 16,
              max_area: int = MAX_WORK_AREA) -> tuple[int, int]:
    """The size a model works at: the input's, scaled down to `max_area` (or up, for a frame
    smaller than `min_side`), aspect kept, each side rounded down to `multiple`."""
    scale = min(1.0, math.sqrt(max_area / (width * height)))
    scale = max(scale, min_side / min(width, height))
    floor = math.ceil(min_side / multiple) * multiple
    return (max(floor, int(width * scale) // multiple * multiple),
            max(floor, int(height * scale) // multiple * multiple))


def step_seed(seed: int, step: int) -> int:
    """One seed per chain step, so each step draws fresh noise and a run replays bit for bit."""
    return int(np.random.SeedSequence([seed, step]).generate_state(1)[0])


def load_pipeline(model: Model) -> Any:
    """Read a model's weights from the Hugging Face cache in bf16, on the CPU."""
    import diffusers
    import torch

    pipeline = getattr(diffusers, model.pipeline_class).from_pretrained(
        model.repo_id, torch_dtype=torch.bfloat16)
    pipeline.set_progress_bar_config(disable=True)
    return pipeline


@dataclass(frozen=True)
class EditJob:
    """One pipeline call: plain data, small enough to pickle across the GPU seam."""

    model: str  # a key of MODELS
    pipeline_key: str  # where the pipeline sits in _PIPELINES
    image: Image.Image  # already at its working size
    prompt: str
    seed: int
    steps: int
    guidance: float
    device: str


def edit_seconds(model: str, work: tuple[int, int], steps: int) -> float:
    """The estimated GPU seconds of one edit at its working size: ZeroGPU's booking, and the
    page's cost estimate before a run (quota.py)."""
    megapixels = work[0] * work[1] / 1e6
    return BOOKING_MARGIN_S + steps * MODELS[model].seconds_per_step * max(megapixels, 0.25)


def _booking_seconds(job: EditJob) -> float:
    return edit_seconds(job.model, job.image.size, job.steps)


def _gpu_size(job: EditJob) -> str:
    return MODELS[job.model].zerogpu_size


@gpu_task(_booking_seconds, _gpu_size)
def generate(job: EditJob) -> Image.Image:
    """The GPU side of one edit step."""
    import torch

    model = MODELS[job.model]
    from_hub = job.pipeline_key == model.repo_id
    # A ZeroGPU worker forked before the load has no copy yet and reads the weights itself.
    pipeline = _PIPELINES.get(job.pipeline_key, partial(load_pipeline, model) if from_hub else None)
    pipeline.to(job.device)  # a no-op once there
    width, height = job.image.size
    with torch.inference_mode():
        result = pipeline(image=job.image, prompt=job.prompt, height=height, width=width,
                          num_inference_steps=job.steps,
                          generator=torch.Generator("cpu").manual_seed(job.seed),
                          **model.call_options(width, height, job.guidance))
    return result.images[0]


class DiffusersEditBackend:
    def __init__(self, backend: str, *, variant: str | None = None,
                 guidance_scale: float | None = None, num_inference_steps: int | None = None,
                 pipeline: Any = None, device: str | None = None) -> None:
        self.info = INFOS[backend]
        self.model = MODELS[_model_name(backend, variant)]
        self.guidance = self.model.guidance if guidance_scale is None else float(guidance_scale)
        self.steps = self.model.steps if num_inference_steps is None else int(num_inference_steps)
        if self.steps < 1:
            raise ValueError(f"num_inference_steps must be at least 1, got {self.steps}")
        self.device = device or "cuda"
        self._pipeline = pipeline  # handed in (tests, notebooks), else read from the hub
        self._key = self.model.repo_id if pipeline is None else _PIPELINES.adopt(pipeline, self)
        self._read_weights = partial(load_pipeline, self.model) if pipeline is None else None

    def unavailable_reason(self) -> str | None:
        return device_refusal(self.device, self._pipeline is not None, NEEDS_GPU)

    def booking_seconds(self, size: tuple[int, int]) -> int:
        """The GPU seconds one edit of a `size` frame books (each pipeline here works on a
        multiple of 16 px), known before any weights load."""
        work = work_size(*size, 16, self.model.min_side)
        return booked_seconds(edit_seconds(self.model.name, work, self.steps))

    def quota_seconds(self, size: tuple[int, int]) -> int:
        """What one edit of a `size` frame costs of a visitor's daily quota: its booking, twice
        over on an `xlarge` GPU."""
        return self.booking_seconds(size) * QUOTA_PER_SECOND[self.model.zerogpu_size]

    def settings(self) -> dict[str, Any]:
        dtype = "bfloat16" if self._pipeline is None else str(self._pipeline.dtype).split(".")[-1]
        return {"model": self.model.name, "repo_id": self.model.repo_id,
                "pipeline": self.model.pipeline_class,
                "guidance_scale": self.guidance, "num_inference_steps": self.steps,
                "dtype": dtype, "max_work_area": MAX_WORK_AREA}

    def load(self, report: Report = report_nothing) -> Any:
        """The pipeline on its device, read from the hub on first use in this process (minutes,
        tens of GB). Called outside the GPU call, so a forked ZeroGPU worker inherits it; there
        `.to("cuda")` is recorded, and the weights land on each worker's GPU as it starts."""
        if reason := self.unavailable_reason():
            raise BackendUnavailable(reason)
        if not _PIPELINES.holds(self._key):
            report(f"loading {self.model.repo_id} (first use in this process)…")
        return _PIPELINES.get(self._key, self._read_weights).to(self.device)

    def edit(self, image: Image.Image, prompt: str, *, seed: int, step: int,
             report: Report = report_nothing) -> Edit:
        pipeline = self.load(report)
        source = image.convert("RGB")
        size = work_size(*source.size, pipeline.vae_scale_factor * 2, self.model.min_side)
        frame = source if size == source.size else source.resize(size, Image.Resampling.LANCZOS)
        job = EditJob(self.model.name, self._key, frame, prompt, step_seed(seed, step),
                      self.steps, self.guidance, self.device)
        out = run_on_gpu(generate, job).convert("RGB")
        if out.size != source.size:
            out = out.resize(source.size, Image.Resampling.LANCZOS)
        return Edit(image=out, extra={"work_size": list(size), "step_seed": job.seed})


def _model_name(backend: str, variant: str | None) -> str:
    variants = VARIANTS[backend]
    chosen = variant or next(iter(variants))
    if chosen not in variants:
        raise ValueError(f"unknown {backend} variant {variant!r}; valid: {', '.join(variants)}")
    return variants[chosen]


ENTRIES = tuple(Entry(info, partial(DiffusersEditBackend, name), gpu_missing)
                for name, info in INFOS.items())
