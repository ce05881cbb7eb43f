"""The diffusers editors, run on the CPU through their real pipeline classes with tiny random
weights (tests/tiny_models.py): the backend's own code path from image in to image out, the
seeding, the working size, the registry's GPU check, and the ZeroGPU seam off ZeroGPU."""

from __future__ import annotations

import gc
import math
import os
import pickle
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch
from conftest import REPO
from PIL import Image
from tiny_models import tiny_flux2_klein, tiny_flux_kontext, tiny_qwen_image_edit

from banana_space import gpu
from banana_space.backends import REGISTRY, BackendUnavailable, create_backend
from banana_space.backends import diffusers_edit as de
from banana_space.backends.diffusers_edit import EditJob
from banana_space.settings import EngineSettings

BUILDERS: dict[str, Callable[[], Any]] = {
    "qwen-image-edit": tiny_qwen_image_edit,
    "flux-kontext": tiny_flux_kontext,
    "flux2": tiny_flux2_klein,
}
PROMPT = "Produce an exact replica of the provided image, with no alterations."


@pytest.fixture(scope="module")
def pipelines() -> dict[str, Any]:
    return {name: build() for name, build in BUILDERS.items()}


@pytest.fixture()
def plain_runner() -> Iterator[None]:
    yield
    gpu.use_gpu_runner(None)


def picture(width: int, height: int) -> Image.Image:
    """A smooth colour ramp with a square in it: structure a copy can keep or lose."""
    x, y = np.meshgrid(np.linspace(0, 255, width), np.linspace(0, 255, height))
    pixels = np.stack([x, y, 255 - x], axis=-1)
    pixels[height // 4: height // 2, width // 4: width // 2] = (250, 240, 20)
    return Image.fromarray(pixels.astype(np.uint8), "RGB")


def tiny_backend(name: str, pipelines: dict[str, Any]) -> de.DiffusersEditBackend:
    return create_backend(name, pipeline=pipelines[name], device="cpu", num_inference_steps=2)


@pytest.mark.parametrize("name", BUILDERS)
def test_edit_runs_the_pipeline_and_is_seeded(name: str, pipelines: dict[str, Any]) -> None:
    backend = tiny_backend(name, pipelines)
    source = picture(64, 64)
    first = backend.edit(source, PROMPT, seed=7, step=1)
    again = backend.edit(source, PROMPT, seed=7, step=1)
    other_seed = backend.edit(source, PROMPT, seed=8, step=1)
    assert first.image.size == (64, 64) and first.image.mode == "RGB"
    assert first.extra["work_size"] == [64, 64]
    assert first.image.tobytes() != source.tobytes()  # random weights: the pipeline did run
    assert again.image.tobytes() == first.image.tobytes()
    assert other_seed.image.tobytes() != first.image.tobytes()


def test_each_step_draws_its_own_noise(pipelines: dict[str, Any]) -> None:
    assert de.step_seed(7, 1) == de.step_seed(7, 1)
    assert len({de.step_seed(7, 1), de.step_seed(7, 2), de.step_seed(8, 1)}) == 3
    backend, source = tiny_backend("flux2", pipelines), picture(64, 64)
    first = backend.edit(source, PROMPT, seed=7, step=1)
    second = backend.edit(source, PROMPT, seed=7, step=2)
    assert first.extra["step_seed"] == de.step_seed(7, 1)
    assert second.image.tobytes() != first.image.tobytes()


@pytest.mark.parametrize(("name", "work"), [
    ("qwen-image-edit", [64, 48]), ("flux-kontext", [64, 48]),
    ("flux2", [80, 64]),  # FLUX.2 refuses sides under 64 px: scaled up for the model
])
def test_odd_sizes_work_at_a_multiple_of_16_and_come_back_whole(
        name: str, work: list[int], pipelines: dict[str, Any]) -> None:
    edit = tiny_backend(name, pipelines).edit(picture(70, 50), PROMPT, seed=1, step=1)
    assert edit.extra["work_size"] == work
    assert edit.image.size == (70, 50)


@pytest.mark.parametrize(("size", "min_side", "expected"), [
    ((64, 64), 16, (64, 64)),
    ((70, 50), 16, (64, 48)),
    ((1024, 1024), 16, (1024, 1024)),
    ((2048, 1536), 16, (1168, 880)),  # scaled down to ~1 MP, aspect kept, never above it
    ((10, 300), 16, (16, 480)),  # scaled up to the minimum side
    ((70, 50), 64, (80, 64)),
])
def test_work_size(size: tuple[int, int], min_side: int, expected: tuple[int, int]) -> None:
    width, height = de.work_size(*size, 16, min_side)
    assert (width, height) == expected
    assert width * height <= de.MAX_WORK_AREA


def test_settings_name_the_model_and_its_knobs(pipelines: dict[str, Any]) -> None:
    tiny = tiny_backend("flux-kontext", pipelines).settings()
    assert tiny == {"model": "flux-kontext", "repo_id": "black-forest-labs/FLUX.1-Kontext-dev",
                    "pipeline": "FluxKontextPipeline", "guidance_scale": 2.5,
                    "num_inference_steps": 2, "dtype": "float32", "max_work_area": 1024 * 1024}
    hub = create_backend("qwen-image-edit").settings()
    assert (hub["repo_id"], hub["num_inference_steps"], hub["dtype"]) == (
        "Qwen/Qwen-Image-Edit-2509", 40, "bfloat16")
    dev = create_backend("flux2", variant="dev", guidance_scale=3.0).settings()
    assert (dev["repo_id"], dev["pipeline"], dev["guidance_scale"]) == (
        "black-forest-labs/FLUX.2-dev", "Flux2Pipeline", 3.0)
    assert create_backend("flux2").settings()["repo_id"] == "black-forest-labs/FLUX.2-klein-4B"
    with pytest.raises(ValueError, match="valid: klein-4b, dev"):
        create_backend("flux2", variant="pro")
    with pytest.raises(ValueError, match="valid: 2509"):
        create_backend("qwen-image-edit", variant="dev")


def test_registered_as_gpu_backends() -> None:
    for name in BUILDERS:
        info = REGISTRY[name].info
        assert info.needs_gpu and not info.needs_key
        assert {"guidance_scale", "num_inference_steps"} <= set(info.option_names)


@pytest.mark.skipif(gpu.cuda_available(), reason="this machine has CUDA")
def test_without_cuda_nothing_loads_and_the_user_is_told_why() -> None:
    for name in BUILDERS:
        assert REGISTRY[name].unavailable_reason() == de.NEEDS_GPU
    backend = create_backend("qwen-image-edit")
    assert backend.unavailable_reason() == de.NEEDS_GPU
    with pytest.raises(BackendUnavailable, match="needs a GPU"):
        backend.edit(picture(64, 64), PROMPT, seed=1, step=1)
    on_cpu = create_backend("flux2", device="cpu")  # hub weights on a CPU: refused as well
    with pytest.raises(BackendUnavailable, match="CUDA only"):
        on_cpu.edit(picture(64, 64), PROMPT, seed=1, step=1)
    assert not de._PIPELINES.holds("Qwen/Qwen-Image-Edit-2509")


def test_each_edit_books_the_zerogpu_size_its_weights_need(monkeypatch) -> None:
    """klein + the judge fit `large`'s 48 GB; Kontext and Qwen-Image-Edit + the judge need
    `xlarge`, which costs twice the quota; the runner sends each job to that size's trampoline."""
    from page import zerogpu

    jobs = {name: EditJob(model.name, "key", picture(64, 64), PROMPT, 0, 1, 1.0, "cuda")
            for name, model in de.MODELS.items()}
    sizes = {name: gpu.size_of(de.generate, job) for name, job in jobs.items()}
    assert sizes == {"qwen-image-edit": "xlarge", "flux-kontext": "xlarge",
                     "flux2-klein-4b": "large", "flux2-dev": "xlarge"}
    klein, qwen = create_backend("flux2"), create_backend("qwen-image-edit")
    assert klein.quota_seconds((1024, 1024)) == klein.booking_seconds((1024, 1024))
    assert qwen.quota_seconds((1024, 1024)) == 2 * qwen.booking_seconds((1024, 1024))
    called: list[str] = []
    monkeypatch.setattr(zerogpu, "run_on_zerogpu", lambda fn, *a: called.append("large"))
    monkeypatch.setattr(zerogpu, "run_on_zerogpu_xlarge", lambda fn, *a: called.append("xlarge"))
    zerogpu.run_sized(de.generate, jobs["flux2-klein-4b"])
    zerogpu.run_sized(de.generate, jobs["qwen-image-edit"])
    assert called == ["large", "xlarge"]
    with pytest.raises(ValueError, match="unknown ZeroGPU size"):
        gpu.size_of(gpu.gpu_task(lambda: 1, lambda: "huge")(lambda: None))


def test_zerogpu_places_the_cards_pair_on_cuda_at_start_up_unless_told_otherwise() -> None:
    from page import zerogpu

    def names(**env: str) -> list[str]:
        return zerogpu.preload_names(EngineSettings.from_env(env))

    assert names() == []
    assert names(SPACES_ZERO_GPU="true") == ["flux2", "judge_vqr1"]
    assert names(SPACES_ZERO_GPU="true", BANANA_PRELOAD="none") == []
    assert names(BANANA_PRELOAD=" flux2 , ") == ["flux2"]
    card = (REPO / "README.md").read_text().split("preload_from_hub:", 1)[1].split("---")[0]
    assert "black-forest-labs/FLUX.2-klein-4B" in card and "TianheWu/VisualQuality-R1-7B" in card


def test_the_zerogpu_seam_is_an_in_process_call_off_zerogpu(
        pipelines: dict[str, Any], plain_runner: None) -> None:
    import importlib

    from page import zerogpu

    # What importing it installs, whichever test imported it first and reset the runner since.
    zerogpu = importlib.reload(zerogpu)
    assert os.environ.get("SPACES_ZERO_GPU") is None
    # Off ZeroGPU, spaces.GPU hands back the function itself: no wrapper, no worker process.
    assert not hasattr(zerogpu.run_on_zerogpu, "zerogpu")
    # Installed with ZeroGPU's refusals named (quota, queue, aborted: gpu.GpuRefused), on the
    # runner that picks a trampoline per call by the size the job asks for.
    assert gpu.current_gpu_runner().__wrapped__ is zerogpu.run_sized
    crossings: list[tuple[int, Any, tuple[Any, ...]]] = []

    def watch(fn: Any, *args: Any) -> Any:
        crossings.append((os.getpid(), fn, args))
        return zerogpu.run_on_zerogpu(fn, *args)

    gpu.use_gpu_runner(watch)
    edit = tiny_backend("flux2", pipelines).edit(picture(64, 64), PROMPT, seed=3, step=1)
    assert edit.image.size == (64, 64)
    [(pid, fn, args)] = crossings
    assert pid == os.getpid() and fn is de.generate
    # What would cross to a ZeroGPU worker is a few kB of plain data, never the model.
    assert len(pickle.dumps((fn, args))) < 64_000
    # 2 steps x 0.4 s/step x 0.25 MP (the floor for small frames), rounded up to whole seconds
    assert gpu.estimated_seconds(fn, *args) == math.ceil(de.BOOKING_MARGIN_S + 2 * 0.4 * 0.25)


@pytest.mark.parametrize("name", BUILDERS)
def test_a_bf16_pipeline_runs_the_backends_path(name: str) -> None:
    """bf16, as `from_pretrained(torch_dtype=torch.bfloat16)` leaves the hub's weights and as
    they run on CUDA: the backend's own path (working size, seeding, the job across the seam)
    mixes no dtypes, and the weights stay bf16."""
    pipeline = BUILDERS[name]().to(torch.bfloat16)
    backend = create_backend(name, pipeline=pipeline, device="cpu", num_inference_steps=1)
    source = picture(64, 64)
    edit = backend.edit(source, PROMPT, seed=3, step=1)
    assert edit.image.size == (64, 64) and edit.image.tobytes() != source.tobytes()
    assert backend.settings()["dtype"] == "bfloat16"
    assert {p.dtype for m in pipeline.components.values() if isinstance(m, torch.nn.Module)
            for p in m.parameters()} == {torch.bfloat16}


def test_a_handed_in_pipeline_leaves_with_its_backend() -> None:
    """The process's cache keeps a handed-in pipeline while its backend lives, and no longer:
    kept for good, its weights would stay on the GPU once the backend is gone."""
    pipeline = tiny_flux2_klein()
    backend = create_backend("flux2", pipeline=pipeline, device="cpu", num_inference_steps=1)
    backend.edit(picture(64, 64), PROMPT, seed=1, step=1)
    key, watch = backend._key, weakref.ref(pipeline)
    assert de._PIPELINES.holds(key)
    del backend, pipeline
    gc.collect()
    assert watch() is None
    assert not de._PIPELINES.holds(key)


def test_a_model_cache_cleared_holds_nothing() -> None:
    cache, owner = gpu.ModelCache(keep_one=True), picture(8, 8)
    adopted = cache.adopt("handed in", owner)
    assert cache.get("loaded", lambda: "read") == "read"
    cache.clear()
    assert not cache.holds(adopted) and not cache.holds("loaded")
