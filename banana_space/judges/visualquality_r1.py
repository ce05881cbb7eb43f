"""`judge_vqr1`: VisualQuality-R1-7B rates each frame's quality from 1 to 5, on a GPU.

Model card: https://huggingface.co/TianheWu/VisualQuality-R1-7B; code:
https://github.com/TianheWu/VisualQuality-R1; paper: Wu et al., "VisualQuality-R1:
Reasoning-Induced Image Quality Assessment via Reinforcement Learning to Rank" (NeurIPS 2025,
arXiv 2505.14460). A Qwen2.5-VL-7B-Instruct fine-tune, ~16.6 GB in bf16.

We follow the card's non-thinking mode, which it recommends for using the model as an evaluator:
its prompt word for word, the image then the text in one user turn, and
`apply_chat_template(add_generation_prompt=True, add_vision_id=True)`. We differ on purpose:
- greedy decoding (the card samples with top_k=50), so a frame always gets the same score;
- at most 64 new tokens (the card allows 2048): a non-thinking answer is about ten, and the bound
  keeps the GPU booking short;
- no `qwen_vl_utils`: the PIL image goes straight to the processor, whose min/max pixel limits
  (from the repo's preprocessor config) are the ones qwen_vl_utils applies;
- a reply without a usable number is NaN with a warning (`answer.parse_answer`), never the
  card's random fallback.
One frame is one `run_on_gpu` job (see `..gpu`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PIL import Image

from ..backends.base import BackendUnavailable, Report, report_nothing
from ..gpu import ModelCache, booked_seconds, cuda_missing, device_refusal, gpu_task, run_on_gpu
from .answer import PROMPT, parse_answer
from .base import Entry, JudgeInfo, Rating

REPO_ID = "TianheWu/VisualQuality-R1-7B"
NEEDS_GPU = ("needs a GPU: this judge runs on CUDA / ZeroGPU (~17 GB of weights); "
             "on this machine use the Gemini judge or none")

INFO = JudgeInfo(
    name="judge_vqr1",
    label="VisualQuality-R1-7B (GPU)",
    description="TianheWu/VisualQuality-R1-7B rates each frame 1-5 (non-thinking prompt, greedy "
                "decoding), on a GPU.",
    needs_gpu=True,
)

_MODELS = ModelCache()
gpu_missing = cuda_missing(NEEDS_GPU)  # the registry's cheap check: loads no weights


def load_model() -> tuple[Any, Any]:
    """(model, processor) read from the Hugging Face cache in bf16, on the CPU."""
    import torch
    from transformers import AutoProcessor, Qwen2_5_VLForConditionalGeneration

    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(REPO_ID, dtype=torch.bfloat16)
    return model.eval(), AutoProcessor.from_pretrained(REPO_ID)


def conversation() -> list[dict[str, Any]]:
    """The card's single user turn: the image, then the question."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": PROMPT}]}]


@dataclass(frozen=True)
class RateJob:
    """One frame to rate: plain data, small enough to pickle across the GPU seam."""

    model_key: str
    image: Image.Image
    device: str
    max_new_tokens: int


def rate_seconds(max_new_tokens: int) -> float:
    """The estimated GPU seconds of rating one frame: ZeroGPU's booking and quota.py's."""
    # Prefill of one image plus a few tokens takes about a second on an H200; the margin covers
    # a ZeroGPU worker moving 17 GB onto the GPU.
    return 20 + 0.1 * max_new_tokens


def _booking_seconds(job: RateJob) -> float:
    return rate_seconds(job.max_new_tokens)


@gpu_task(_booking_seconds)
def answer(job: RateJob) -> str:
    """The GPU side of rating one frame: the model's reply, as text."""
    import torch

    loader = load_model if job.model_key == REPO_ID else None
    model, processor = _MODELS.get(job.model_key, loader)
    model.to(job.device)  # a no-op once there
    prompt = processor.apply_chat_template(conversation(), tokenize=False,
                                           add_generation_prompt=True, add_vision_id=True)
    inputs = processor(text=[prompt], images=[job.image], return_tensors="pt").to(job.device)
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=job.max_new_tokens, do_sample=False)
    reply = output[:, inputs["input_ids"].shape[1]:]
    return processor.batch_decode(reply, skip_special_tokens=True,
                                  clean_up_tokenization_spaces=False)[0]


class VisualQualityR1Judge:
    info = INFO

    def __init__(self, *, model: Any = None, processor: Any = None, device: str | None = None,
                 max_new_tokens: int = 64) -> None:
        if (model is None) != (processor is None):
            raise ValueError("hand in both model and processor, or neither")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        self.device = device or "cuda"
        self.max_new_tokens = int(max_new_tokens)
        self._handed_in = model is not None
        self._key = _MODELS.adopt((model, processor), self) if self._handed_in else REPO_ID

    def unavailable_reason(self) -> str | None:
        return device_refusal(self.device, self._handed_in, NEEDS_GPU)

    def booking_seconds(self) -> int:
        """The GPU seconds one rated frame books."""
        return booked_seconds(rate_seconds(self.max_new_tokens))

    def load(self, report: Report = report_nothing) -> Any:
        """The model on its device, read on first use in this process, outside any GPU call, so
        a forked ZeroGPU worker inherits it (see `DiffusersEditBackend.load`)."""
        if reason := self.unavailable_reason():
            raise BackendUnavailable(f"VisualQuality-R1 {reason}")
        if not _MODELS.holds(self._key):
            report(f"loading {REPO_ID} (first use in this process)…")
        model, _ = _MODELS.get(self._key, load_model)
        return model.to(self.device)

    def schedule(self, steps: int) -> frozenset[int] | None:
        return None  # every step the run judges

    def rate(self, image: Image.Image, report: Report = report_nothing) -> Rating:
        self.load(report)
        job = RateJob(self._key, image.convert("RGB"), self.device, self.max_new_tokens)
        text = run_on_gpu(answer, job)
        score, warning = parse_answer(text)
        return Rating(score, text.strip(), warning)


ENTRIES = (Entry(INFO, VisualQualityR1Judge, gpu_missing),)
