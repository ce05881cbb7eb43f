"""VisualQuality-R1 as a judge: the strict answer parser on real-looking replies, and the judge's
own code path end to end through a real Qwen2_5_VLForConditionalGeneration with tiny random
weights and a locally built processor (tests/tiny_models.py)."""

from __future__ import annotations

import gc
import math
import weakref
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from tiny_models import script_replies, tiny_qwen2_5_vl

from banana_space import gpu
from banana_space.judges import REGISTRY, create_judge
from banana_space.judges import visualquality_r1 as vq
from banana_space.judges.answer import parse_answer


@pytest.mark.parametrize(("reply", "score"), [
    ("<answer>3.42</answer>", 3.42),
    ("<think>Sharp edges, mild noise in the sky, natural colour.</think><answer>4.1</answer>", 4.1),
    ("<answer> 2.00 </answer>", 2.0),
    ("<think>first guess <answer>2.5</answer>, but the noise…</think>\n<answer>3.75</answer>",
     3.75),  # two answers: the last one counts
    ("4.25", 4.25),  # nothing but a number
    ("<answer>1</answer>", 1.0),
    ("<answer>5.00</answer>", 5.0),
])
def test_parse_answer_reads_the_last_answer(reply: str, score: float) -> None:
    assert parse_answer(reply) == (score, None)


@pytest.mark.parametrize(("reply", "why"), [
    ("The image looks fairly good, I would say 4.", "no <answer> tag"),
    ("ĊĠ!!ė\x1d1V", "no <answer> tag"),  # what a random model says
    ("<answer>good</answer>", "holds 'good'"),
    ("<answer>3.5/5</answer>", "holds '3.5/5'"),
    ("<answer>3.42", "no <answer> tag"),  # cut off by max_new_tokens
    ("<answer>7.5</answer>", "7.5 is outside 1-5"),
    ("<answer>-2</answer>", "-2 is outside 1-5"),
    ("<answer>0.99</answer>", "outside"),
    ("", "no <answer> tag"),
])
def test_parse_answer_refuses_rather_than_guess(reply: str, why: str) -> None:
    score, warning = parse_answer(reply)
    assert math.isnan(score)
    assert warning is not None and why in warning


def test_prompt_is_the_model_cards_non_thinking_prompt() -> None:
    assert vq.PROMPT == (
        "You are doing the image quality assessment task. Here is the question: What is your "
        "overall rating on the quality of this picture? The rating should be a float between 1 "
        "and 5, rounded to two decimal places, with 1 representing very poor quality and 5 "
        "representing excellent quality. Please only output the final answer with only one "
        "score in <answer> </answer> tags.")
    [turn] = vq.conversation()
    assert turn["role"] == "user"
    assert [item["type"] for item in turn["content"]] == ["image", "text"]


def photo() -> Image.Image:
    x, y = np.meshgrid(np.linspace(0, 255, 96), np.linspace(0, 255, 64))
    return Image.fromarray(np.stack([x, y, 255 - x], axis=-1).astype(np.uint8), "RGB")


@pytest.fixture(scope="module")
def random_vlm() -> tuple[Any, Any]:
    return tiny_qwen2_5_vl()


def test_a_random_model_gives_nan_and_a_warning_never_a_made_up_score(
        random_vlm: tuple[Any, Any]) -> None:
    model, processor = random_vlm
    judge = create_judge("judge_vqr1", model=model, processor=processor, device="cpu",
                         max_new_tokens=12)
    assert judge.unavailable_reason() is None
    first, again = judge.rate(photo()), judge.rate(photo())
    assert math.isnan(first.score) and "no <answer> tag" in (first.warning or "")
    assert first.text and again.text == first.text  # greedy: the same frame, the same words


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])  # bf16: as on CUDA
def test_the_judge_reads_a_score_through_the_real_model_and_processor(dtype) -> None:
    model, processor = tiny_qwen2_5_vl(extra_tokens=("<answer>", "</answer>"))
    # The prompt ends "<|im_start|>assistant\n"; from that newline the model is wired to say
    # <answer>3.42</answer> and stop.
    script_replies(model, processor.tokenizer,
                   ["Ċ", "<answer>", "3", ".", "4", "2", "</answer>", "<|im_end|>"])
    model.to(dtype)  # the processor's pixels stay float32, as they come on a GPU
    crossings: list[Any] = []

    def watch(fn: Any, *args: Any) -> Any:
        crossings.append(args)
        return fn(*args)

    gpu.use_gpu_runner(watch)
    try:
        verdict = create_judge("judge_vqr1", model=model, processor=processor,
                               device="cpu").rate(photo())
    finally:
        gpu.use_gpu_runner(None)
    assert (verdict.score, verdict.text, verdict.warning) == (3.42, "<answer>3.42</answer>", None)
    [(job,)] = crossings  # one frame, one GPU call
    assert job.image.size == (96, 64) and job.max_new_tokens == 64


def test_registered_as_a_gpu_judge() -> None:
    entry = REGISTRY["judge_vqr1"]
    assert entry.info.needs_gpu and not entry.info.needs_key
    with pytest.raises(ValueError, match="both model and processor"):
        create_judge("judge_vqr1", model=object())


@pytest.mark.skipif(gpu.cuda_available(), reason="this machine has CUDA")
def test_without_cuda_nothing_loads() -> None:
    assert REGISTRY["judge_vqr1"].unavailable_reason() == vq.NEEDS_GPU
    judge = create_judge("judge_vqr1")
    assert judge.unavailable_reason() == vq.NEEDS_GPU
    with pytest.raises(Exception, match="needs a GPU"):
        judge.rate(photo())
    assert not vq._MODELS.holds(vq.REPO_ID)


def test_a_handed_in_model_leaves_with_its_judge() -> None:
    """As a handed-in pipeline leaves with its backend (test_diffusers_backends.py)."""
    model, processor = tiny_qwen2_5_vl()
    judge = create_judge("judge_vqr1", model=model, processor=processor, device="cpu",
                         max_new_tokens=2)
    judge.rate(photo())
    key, watch = judge._key, weakref.ref(model)
    assert vq._MODELS.holds(key)
    del judge, model, processor
    gc.collect()
    assert watch() is None
    assert not vq._MODELS.holds(key)
