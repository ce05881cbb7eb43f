"""GPU check: the CUDA paths of the editors, the judges and pyiqa, in one run.

Four parts, each printed as a section and written to `--out` (JSON) beside a markdown summary:

1. **Chains.** The open editors (qwen-image-edit, flux-kontext, flux2) and both model judges
   (VisualQuality-R1, Q-ReAlign) on `--device` in bf16, through the real seam: `page/zerogpu.py`
   installs its `spaces.GPU` trampolines, as app.py does (off ZeroGPU `spaces.GPU` returns the
   function unchanged). A `--steps`-step chain per editor, every frame rated by both judges.
   Per step: seconds, the allocated and reserved GPU memory after it, its peak; whether any
   weight moved (every parameter's address and dtype, read after each step against the load).
   After the chains, the models are dropped and what is left on the GPU is read.
   By default the models are the tests' tiny random ones (tests/tiny_models.py: the hub's
   classes, hidden sizes of 16), cast to bf16 as `from_pretrained(torch_dtype=bfloat16)` leaves
   the real ones; `--hub` reads the real checkpoints from the Hugging Face cache instead.
2. **pyiqa's CPU classics on the GPU.** brisque, niqe, piqe, entropy, psnr and ssim on real
   photos (`--photos`, centre squares scaled to each `--sides`), pyiqa's own way on the CPU (the
   reference), and on the GPU both pyiqa's own way and the engine's (its exact equivalents,
   scores/equivalents.py, through `MetricPool.score`, as a run scores): each GPU score against
   the CPU one (relative 1e-4), and the seconds per frame.
3. **Deep metrics' speed.** Every pyiqa no-reference metric of the Banana100 preset at
   `--deep-side`: built with `pretrained=False` (or `None`, as each arch takes it); where that
   still reads a backbone's ImageNet weights (timm, torchvision), with the backbone left at its
   random initialisation instead: the same layers and the same arithmetic, so the same seconds,
   and no score is kept. What cannot be built without downloading (CLIP, .mat tables, a
   regressor checkpoint) is listed with why.
4. **Booking.** Every GPU call of part 1 through the seam: its measured seconds against what
   `gpu.estimated_seconds` books for it (ZeroGPU's `duration`) and the size it asks for.

Nothing here may reach the network: sockets are refused, so a download fails at once.

    .venv/bin/python bench/gpu_check.py [--device cpu] [--steps 3] [--sides 1024,2048]
        [--deep-side 1024] [--photos assets/examples/photo-moss.png,...] [--hub]
        [--parts chains,classics,deep] [--out gpu_check.json]

On a machine without CUDA it runs every part on the CPU (small sizes help: `--sides 128
--deep-side 224`), a dry run of everything but CUDA itself. docs/performance.md, "GPU check",
holds the numbers of the run on a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import inspect
import json
import math
import os
import platform
import socket
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

import _setup  # noqa: F401  (offline, TORCH_HOME seeded with BRISQUE/NIQE, repo on sys.path)

REPO = _setup.REPO
sys.path.insert(0, str(REPO / "tests"))  # tiny_models.py: the tests' tiny random models

from banana_space import gpu  # noqa: E402
from banana_space.prompts import DEFAULT_PROMPT  # noqa: E402
from page import zerogpu  # noqa: E402  (first of ours, as in app.py: it installs the GPU seam)

EDITORS = ("qwen-image-edit", "flux-kontext", "flux2")
CLASSICS_NR = ("brisque", "niqe", "piqe", "entropy")
CLASSICS_FR = ("psnr", "ssim")
PHOTOS = ("photo-moss.png", "photo-nuthatch.png")
AGREE = 1e-4  # relative: the bound asked of a GPU score against the CPU one
VERSIONS = ("torch", "transformers", "diffusers", "pyiqa", "spaces", "timm", "torchvision",
            "accelerate", "huggingface_hub", "tokenizers", "safetensors", "numpy", "pillow",
            "scipy")


# ---------------------------------------------------------------- the machine and its clocks

def refuse_network() -> None:
    """No socket may connect: a download fails at once (an offline box may wait on DNS), and
    one made through urllib (torch.hub's, pyiqa's, CLIP's) says which file it wanted."""
    import urllib.request

    import torch.hub

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise OSError("no network here")

    def wanted(url: Any, *args: Any, **kwargs: Any) -> Any:
        address = getattr(url, "full_url", url)
        raise OSError(f"needs {str(address).rsplit('/', 1)[-1]}, a download ({address})")

    socket.socket.connect = refused  # type: ignore[method-assign]
    socket.getaddrinfo = refused  # type: ignore[assignment]
    urllib.request.urlopen = wanted  # type: ignore[assignment]
    torch.hub.urlopen = wanted  # type: ignore[attr-defined]


def is_cuda(device: str) -> bool:
    return device.startswith("cuda")


def sync(device: str) -> None:
    if is_cuda(device):
        import torch

        torch.cuda.synchronize()


def memory(device: str) -> dict[str, float | None]:
    """Allocated, reserved and peak-since-reset GPU memory in MiB (None on a CPU)."""
    if not is_cuda(device):
        return {"allocated_mib": None, "reserved_mib": None, "peak_mib": None}
    import torch

    mib = 2**20
    return {"allocated_mib": torch.cuda.memory_allocated() / mib,
            "reserved_mib": torch.cuda.memory_reserved() / mib,
            "peak_mib": torch.cuda.max_memory_allocated() / mib}


def reset_peak(device: str) -> None:
    if is_cuda(device):
        import torch

        torch.cuda.reset_peak_memory_stats()


def release(device: str) -> None:
    gc.collect()
    if is_cuda(device):
        import torch

        torch.cuda.empty_cache()


def timed(device: str, call: Callable[..., Any], /, *args: Any,
          **kwargs: Any) -> tuple[Any, float]:
    """`call(*args, **kwargs)` and its seconds, the device's queue drained on both sides."""
    sync(device)
    started = time.perf_counter()
    result = call(*args, **kwargs)
    sync(device)
    return result, time.perf_counter() - started


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"


def machine(device: str) -> dict[str, Any]:
    import torch

    facts: dict[str, Any] = {
        "device": device, "python": platform.python_version(), "cpu": _setup.cpu_model(),
        "cores": os.cpu_count(), "cuda_available": torch.cuda.is_available(),
        "cudnn_tf32_default": torch.backends.cudnn.allow_tf32,
        "versions": {name: version(name) for name in VERSIONS},
        "zerogpu": {"spaces_gpu_passthrough": not hasattr(zerogpu.run_on_zerogpu, "__wrapped__"),
                    "runner": getattr(gpu.current_gpu_runner(), "__name__", "?"),
                    "zero_gpu_env": bool(os.environ.get("SPACES_ZERO_GPU"))}}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        facts.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                     cuda=torch.version.cuda, capability=f"{props.major}.{props.minor}")
    return facts


def error_text(error: BaseException) -> str:
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {first[:240]}"


# ------------------------------------------------------------------------------ the photos

def square(path: Path, side: int) -> Any:
    """The photo's centre square scaled to `side` x `side` (Lanczos): a real photo's texture."""
    from PIL import Image

    with Image.open(path) as image:
        photo = image.convert("RGB")
    edge = min(photo.size)
    left, top = (photo.width - edge) // 2, (photo.height - edge) // 2
    photo = photo.crop((left, top, left + edge, top + edge))
    return photo.resize((side, side), Image.Resampling.LANCZOS)


# ----------------------------------------------------------------- part 1 and 4: the chains

class Seam:
    """The installed GPU runner (zerogpu's), with every call through it written down: what
    `gpu.estimated_seconds` books for it, the size it asks for, and how long it took."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.inner = gpu.current_gpu_runner()
        self.calls: list[dict[str, Any]] = []

    def __call__(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        booked = gpu.estimated_seconds(fn, *args, **kwargs)
        size = gpu.size_of(fn, *args, **kwargs)
        result, seconds = timed(self.device, self.inner, fn, *args, **kwargs)
        job = args[0] if args else None
        model = getattr(job, "model", None) or fn.__module__.rsplit(".", 1)[-1]
        self.calls.append({"fn": fn.__name__, "model": model, "booked_s": booked, "size": size,
                           "seconds": seconds})
        return result


def modules_of(model: Any) -> list[Any]:
    """The torch modules that hold a model's weights (a pipeline's components, a judge's
    network, a pyiqa metric)."""
    import torch

    if isinstance(model, torch.nn.Module):
        return [model]
    if isinstance(model, tuple):
        return [part for part in model if isinstance(part, torch.nn.Module)]
    components = getattr(model, "components", {})
    return [part for part in components.values() if isinstance(part, torch.nn.Module)]


def placement(model: Any) -> dict[str, Any]:
    """Where a model's weights are: every parameter's address, the devices and the dtypes."""
    tensors = [t for module in modules_of(model) for t in
               (*module.parameters(), *module.buffers())]
    return {"pointers": tuple(t.data_ptr() for t in tensors),
            "devices": sorted({str(t.device) for t in tensors}),
            "dtypes": sorted({str(t.dtype).split(".")[-1] for t in tensors
                              if t.is_floating_point()}),
            "bytes": sum(t.numel() * t.element_size() for t in tensors)}


def in_bf16(model: Any) -> Any:
    """A tiny model as `from_pretrained(torch_dtype=torch.bfloat16)` leaves a real one."""
    import torch

    return model.to(torch.bfloat16)


def make_editor(name: str, device: str, hub: bool) -> tuple[Any, Any]:
    """(backend, the object holding its weights) for editor `name`."""
    from tiny_models import tiny_flux2_klein, tiny_flux_kontext, tiny_qwen_image_edit

    from banana_space.backends import create_backend
    from banana_space.backends import diffusers_edit as de

    if hub:
        backend = create_backend(name, device=device)
        return backend, backend.load()
    builders = {"qwen-image-edit": tiny_qwen_image_edit, "flux-kontext": tiny_flux_kontext,
                "flux2": tiny_flux2_klein}
    pipeline = in_bf16(builders[name]())
    backend = create_backend(name, pipeline=pipeline, device=device)
    assert isinstance(backend, de.DiffusersEditBackend)
    return backend, pipeline


def make_judges(device: str, hub: bool, folder: Path) -> dict[str, tuple[Any, Any]]:
    """judge name -> (judge, the object holding its weights), loaded."""
    import torch

    import banana_space.settings as settings
    from banana_space.judges import create_judge

    judges: dict[str, tuple[Any, Any]] = {}
    if hub:
        vqr1 = create_judge("judge_vqr1", device=device)
    else:
        from tiny_models import tiny_qwen2_5_vl

        model, processor = tiny_qwen2_5_vl()
        vqr1 = create_judge("judge_vqr1", model=in_bf16(model), processor=processor,
                            device=device)
        # The tiny Q-ReAlign checkpoint, saved in bf16 as Mini is: pyiqa loads it with
        # dtype="auto" on CUDA, float32 on a CPU (judges/qrealign.py).
        from tiny_models import tiny_qwen3_5_vl

        tiny_qwen3_5_vl(folder, dtype=torch.bfloat16)
        settings.SETTINGS = replace(settings.engine_settings(), qrealign_model=str(folder))
    judges["judge_vqr1"] = (vqr1, vqr1.load())
    qrealign = create_judge("judge_qrealign", device=device)
    judges["judge_qrealign"] = (qrealign, qrealign.load())
    return judges


def chains(device: str, steps: int, side: int, photo: Path, hub: bool,
           folder: Path) -> dict[str, Any]:
    seam = Seam(device)
    gpu.use_gpu_runner(seam)
    result: dict[str, Any] = {"side": side, "photo": photo.name, "steps": steps, "editors": {},
                              "judges": {}, "calls": seam.calls}
    try:
        release(device)
        start = memory(device)
        judges = make_judges(device, hub, folder)
        loaded = {name: placement(weights) for name, (_, weights) in judges.items()}
        for name, where in loaded.items():
            result["judges"][name] = {"devices": where["devices"], "dtypes": where["dtypes"],
                                      "weights_mib": where["bytes"] / 2**20, "rates": []}
        for name in EDITORS:
            result["editors"][name] = one_chain(name, device, steps, side, photo, hub, judges,
                                                loaded, result["judges"])
            release(device)
        for name, (_, weights) in judges.items():
            result["judges"][name]["weights_moved"] = (
                placement(weights)["pointers"] != loaded[name]["pointers"])
        del judges, weights
        result["left_on_gpu"] = left_on_gpu(device, start)
    finally:
        gpu.use_gpu_runner(seam.inner)
    return result


def one_chain(name: str, device: str, steps: int, side: int, photo: Path, hub: bool,
              judges: dict[str, tuple[Any, Any]], loaded: dict[str, Any],
              judged: dict[str, Any]) -> dict[str, Any]:
    """A `steps`-step chain of editor `name`, each frame rated by every judge."""
    try:
        backend, pipeline = make_editor(name, device, hub)
        weights, load_s = timed(device, backend.load)
    except Exception as error:
        traceback.print_exc()
        return {"error": error_text(error)}
    where = placement(weights)
    report: dict[str, Any] = {"load_s": load_s, "devices": where["devices"],
                              "dtypes": where["dtypes"], "weights_mib": where["bytes"] / 2**20,
                              "num_inference_steps": backend.steps, "after_load": memory(device),
                              "steps": []}
    print(f"\n{name}: weights on {where['devices']} in {where['dtypes']}, "
          f"{report['weights_mib']:.1f} MiB, {backend.steps} inference steps")
    frame = square(photo, side)
    try:
        for step in range(1, steps + 1):
            reset_peak(device)
            edit, seconds = timed(device, backend.edit, frame, DEFAULT_PROMPT, seed=0,
                                  step=step)
            frame = edit.image
            row = {"step": step, "seconds": seconds, **memory(device),
                   "weights_moved": placement(weights)["pointers"] != where["pointers"],
                   "size": list(frame.size), "work_size": edit.extra["work_size"]}
            for judge_name, (judge, judge_weights) in judges.items():
                reset_peak(device)
                rating, judge_s = timed(device, judge.rate, frame)
                moved = placement(judge_weights)["pointers"] != loaded[judge_name]["pointers"]
                judged[judge_name]["rates"].append({
                    "editor": name, "step": step, "seconds": judge_s, "score": rating.score,
                    "warning": rating.warning, "weights_moved": moved, **memory(device)})
            report["steps"].append(row)
            print(f"  step {step}: {seconds:.3f} s, allocated {_mib(row['allocated_mib'])}, "
                  f"reserved {_mib(row['reserved_mib'])}, peak {_mib(row['peak_mib'])}, "
                  f"weights moved: {row['weights_moved']}")
    except Exception as error:
        traceback.print_exc()
        report["error"] = error_text(error)
    del backend, pipeline, weights
    return report


def left_on_gpu(device: str, start: dict[str, Any]) -> dict[str, Any]:
    """What the GPU holds once the chains' backends and judges are dropped: with the process's
    model caches as they are (a handed-in model leaves with its backend or judge; a model read
    from disk stays for the next run, by design), then with those caches emptied, then without
    cuBLAS's workspaces (kept by torch per stream, not by us)."""
    from banana_space.backends import diffusers_edit
    from banana_space.judges import qrealign, visualquality_r1

    release(device)
    left = {"before_chains": start, "backends_and_judges_dropped": memory(device)}
    for cache in (diffusers_edit._PIPELINES, visualquality_r1._MODELS, qrealign._MODELS):
        cache.clear()
    release(device)
    left["model_caches_emptied"] = memory(device)
    if is_cuda(device):
        left["live_cuda_tensors"] = live_cuda_tensors()
    clear_workspaces = getattr(__import__("torch")._C, "_cuda_clearCublasWorkspaces", None)
    if is_cuda(device) and clear_workspaces is not None:
        clear_workspaces()
        release(device)
        left["cublas_workspaces_cleared"] = memory(device)
    return left


def live_cuda_tensors(most: int = 12) -> list[str]:
    """The CUDA tensors Python still reaches, largest first: shape, dtype, bytes, and the
    types of what holds them (two steps up)."""
    import torch

    tensors = []
    for obj in gc.get_objects():
        with contextlib.suppress(Exception):
            if isinstance(obj, torch.Tensor) and obj.is_cuda:
                tensors.append(obj)
    tensors.sort(key=lambda t: -t.numel() * t.element_size())
    described = [f"{len(tensors)} tensors, "
                 f"{sum(t.numel() * t.element_size() for t in tensors) / 2**20:.2f} MiB"]
    for tensor in tensors[:most]:
        holders = {type(up).__qualname__ for near in gc.get_referrers(tensor)
                   if near is not tensors for up in (near, *gc.get_referrers(near)[:3])
                   if up is not tensors}
        described.append(f"{tuple(tensor.shape)} {str(tensor.dtype)[6:]} "
                         f"{tensor.numel() * tensor.element_size()} B, held by "
                         f"{', '.join(sorted(holders)[:6])}")
    del tensors
    return described


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} MiB"


# ------------------------------------------------------------- part 2: the classics on a GPU

def fidelity_frame(reference: Any) -> Any:
    """One `simulate` step of the photo, at the photo's size as fidelity sees it: the frame
    scored, and compared with the photo by psnr and ssim."""
    from banana_space.backends.simulate import SimulateBackend
    from banana_space.scores.scoring import at_input_size

    return at_input_size(SimulateBackend().edit(reference, "", seed=0, step=1).image, reference)


def classics(device: str, sides: list[int], photos: list[Path], repeats: int) -> dict[str, Any]:
    import pyiqa

    from banana_space.scores.catalog import to_tensor
    from banana_space.scores.pool import MetricPool

    names = (*CLASSICS_NR, *CLASSICS_FR)
    engine = MetricPool(device=device)
    bare = {name: pyiqa.create_metric(name, device=device) for name in names}
    on_cpu = {name: pyiqa.create_metric(name, device="cpu") for name in names}
    engine_metrics = {name: engine.get(name) for name in names}
    rows: list[dict[str, Any]] = []
    for side in sides:
        for path in photos:
            reference = square(path, side)
            frame_t, reference_t = to_tensor(fidelity_frame(reference)), to_tensor(reference)
            for name in names:
                tensors = (frame_t,) if name in CLASSICS_NR else (frame_t, reference_t)
                row: dict[str, Any] = {"side": side, "photo": path.name, "metric": name}
                for key, float64 in (("cpu", False), ("cpu_f64", True)):
                    row.update(score_on(key, on_cpu[name], tensors, "cpu", 1, float64=float64))
                for way, (flags, float64) in WAYS.items():
                    metric = engine_metrics[name] if way == "engine" else bare[name]
                    with flags():
                        row.update(score_on(way, metric, tensors, device, repeats,
                                            float64=float64, against=row.get(
                                                "cpu_f64" if float64 else "cpu", math.nan)))
                rows.append(row)
                print(f"  {side}² {path.name} {name}: " + ", ".join(
                    f"{way} {row.get(way, row.get(f'{way}_error'))}"
                    for way in ("cpu", "cpu_f64", *WAYS)), flush=True)
            release(device)
    del bare, on_cpu, engine_metrics, engine
    release(device)
    return {"rows": rows, "agree": AGREE, "repeats": repeats}


@contextlib.contextmanager
def cudnn(tf32: bool = False, enabled: bool = True) -> Iterator[None]:
    """cuDNN on or off, its float32 convolutions in TF32 (torch's default) or not."""
    import torch

    before = torch.backends.cudnn.allow_tf32, torch.backends.cudnn.enabled
    torch.backends.cudnn.allow_tf32, torch.backends.cudnn.enabled = tf32, enabled
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cudnn.enabled = before


# Part 2's ways on the GPU: (flags, in float64). The engine's in the process's setting.
WAYS: dict[str, tuple[Callable[[], Any], bool]] = {
    "pyiqa_tf32": (functools.partial(cudnn, tf32=True), False),
    "pyiqa": (cudnn, False),
    "pyiqa_no_cudnn": (functools.partial(cudnn, enabled=False), False),
    "pyiqa_f64": (cudnn, True),
    "engine": (contextlib.nullcontext, False),
}


def score_on(way: str, metric: Any, tensors: tuple[Any, ...], device: str, repeats: int,
             float64: bool = False, against: float = math.nan) -> dict[str, Any]:
    """`way`'s score of one frame on `device` (the metric called as `MetricPool.score` calls
    it: pyiqa's object takes CPU tensors and moves them), in float64 if asked, the median
    seconds of `repeats` calls after one warm-up, and its distance to `against`."""
    if float64:
        tensors = tuple(t.double() for t in tensors)

    try:
        value = first_score(metric, *tensors)  # warm-up: cuDNN's plans, the first kernels
        seconds = [timed(device, first_score, metric, *tensors)[1] for _ in range(repeats)]
    except Exception as error:
        traceback.print_exc()
        return {f"{way}_error": error_text(error)}
    relative = abs(value - against) / max(abs(against), 1e-12)
    return {way: value, f"{way}_s": statistics.median(seconds), f"{way}_relative": relative,
            f"{way}_agrees": relative <= AGREE}


# ------------------------------------------------------------------ part 3: the deep metrics

def no_weights_options(name: str) -> dict[str, Any]:
    """The keyword arguments that keep `name`'s own checkpoint unread: `pretrained=False` (or
    None, where pyiqa takes a checkpoint's key there), `backbone_pretrain=False`."""
    from pyiqa.archs import _lazy_import_arch
    from pyiqa.default_model_configs import DEFAULT_CONFIGS
    from pyiqa.utils.registry import ARCH_REGISTRY

    arch = DEFAULT_CONFIGS[name]["metric_opts"]["type"]
    _lazy_import_arch(arch)
    parameters = inspect.signature(ARCH_REGISTRY.get(arch).__init__).parameters
    options: dict[str, Any] = {}
    if "pretrained" in parameters:
        options["pretrained"] = None if isinstance(parameters["pretrained"].default, str) else False
    if "backbone_pretrain" in parameters:
        options["backbone_pretrain"] = False
    return options


@contextlib.contextmanager
def random_backbones() -> Iterator[None]:
    """timm and torchvision build their backbones without reading ImageNet weights: the same
    layers at their random initialisation (timm's `pretrained` forced False, torchvision's
    `weights` resolved to None)."""
    import timm
    from torchvision.models import _api

    create, verify = timm.create_model, _api.WeightsEnum.__dict__["verify"]

    def unweighted(*args: Any, **kwargs: Any) -> Any:
        return create(*args, **{**kwargs, "pretrained": False})

    timm.create_model = unweighted
    _api.WeightsEnum.verify = classmethod(lambda cls, obj: None)  # type: ignore[assignment]
    try:
        yield
    finally:
        timm.create_model = create
        _api.WeightsEnum.verify = verify  # type: ignore[assignment]


def build_deep(name: str, device: str) -> tuple[Any, str]:
    """(metric, how it was built), or raises with why it cannot be built here."""
    from banana_space.scores.catalog import build_metric

    if name in CLASSICS_NR:  # its weights are seeded (brisque, niqe) or it has none
        from banana_space.scores.catalog import ON_CPU

        where = ", on the CPU" if name in ON_CPU else ""
        return build_metric(name, device), f"the engine's, real weights{where}"
    import pyiqa

    options = no_weights_options(name)
    try:
        return pyiqa.create_metric(name, device=device, **options), f"{_options(options)}"
    except Exception as first:
        try:
            with random_backbones():
                metric = pyiqa.create_metric(name, device=device, **options)
        except Exception:
            raise first from None
        return metric, f"{_options(options)}, random backbone"


def first_score(metric: Any, *tensors: Any) -> float:
    """The metric's score of one frame (the first, for a metric that returns several)."""
    import torch

    with torch.inference_mode():
        return float(torch.as_tensor(metric(*tensors)).flatten()[0])


def _options(options: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in options.items()) or "no options"


def deep(device: str, side: int, photo: Path, repeats: int,
         names: list[str] | None = None) -> dict[str, Any]:

    from banana_space.scores.catalog import PRESETS, to_tensor

    frame = to_tensor(square(photo, side))
    rows: list[dict[str, Any]] = []
    for name in names or PRESETS["Banana100 (21 metrics)"]:
        row: dict[str, Any] = {"metric": name}
        release(device)
        before = memory(device)["allocated_mib"]
        try:
            metric, row["built"] = build_deep(name, device)
        except Exception as error:
            row["needs"] = error_text(error)
            rows.append(row)
            print(f"  {name}: not built: {row['needs']}", flush=True)
            continue

        try:
            first_score(metric, frame)  # warm-up
            reset_peak(device)
            row["seconds"] = statistics.median(timed(device, first_score, metric, frame)[1]
                                               for _ in range(repeats))
            peak = memory(device)["peak_mib"]
            row["peak_mib"] = None if peak is None else peak - (before or 0.0)
        except Exception as error:
            traceback.print_exc()
            row["error"] = error_text(error)
        rows.append(row)
        print(f"  {name}: {row.get('seconds', row.get('error'))} ({row['built']})", flush=True)
        del metric
    release(device)
    measured = [row["seconds"] for row in rows if "seconds" in row]
    return {"side": side, "photo": photo.name, "repeats": repeats, "rows": rows,
            "measured": len(measured), "total_s": sum(measured)}


# ------------------------------------------------------------------------------- the summary

def summary(result: dict[str, Any]) -> str:
    """The run as markdown: the machine, then one table per part."""
    facts = result["machine"]
    lines = [f"# GPU check ({facts['device']})", "",
             f"{facts.get('gpu', facts['cpu'])} · CUDA {facts.get('cuda', '-')} · Python "
             f"{facts['python']} · " + ", ".join(f"{k} {v}" for k, v in facts["versions"].items()),
             f"seam: runner {facts['zerogpu']['runner']}, spaces.GPU pass-through "
             f"{facts['zerogpu']['spaces_gpu_passthrough']}", ""]
    for part, body in result["parts"].items():
        if "error" in body and len(body) == 1:
            lines += [f"## {part}: failed", "", f"    {body['error']}", ""]
            continue
        lines += [f"## {part}", ""] + PARTS_MD[part](body) + [""]
    return "\n".join(lines)


def _chains_md(body: dict[str, Any]) -> list[str]:
    lines = [f"{body['steps']}-step chains on {body['photo']} at {body['side']}², every frame "
             "rated by both judges.", "",
             "| editor | weights | step | s | allocated MiB | reserved MiB | peak MiB | moved |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, report in body["editors"].items():
        if "steps" not in report:
            lines.append(f"| {name} | failed: {report['error']} | | | | | | |")
            continue
        weights = f"{'/'.join(report['devices'])} {'/'.join(report['dtypes'])}"
        lines.append(f"| {name} | {weights}, loaded | 0 | {report['load_s']:.3f} | "
                     + " | ".join(_num(report["after_load"][k]) for k in
                                  ("allocated_mib", "reserved_mib", "peak_mib")) + " | |")
        for row in report["steps"]:
            lines.append(f"| {name} | | {row['step']} | {row['seconds']:.3f} | "
                         + " | ".join(_num(row[k]) for k in ("allocated_mib", "reserved_mib",
                                                            "peak_mib"))
                         + f" | {row['weights_moved']} |")
        if "error" in report:
            lines.append(f"| {name} | failed: {report['error']} | | | | | | |")
    lines += ["", "| judge | weights | frames | s per frame (median) | moved | scores |",
              "| --- | --- | --- | --- | --- | --- |"]
    for name, report in body["judges"].items():
        rates = report["rates"]
        seconds = statistics.median(r["seconds"] for r in rates) if rates else math.nan
        scores = sorted({f"{r['score']:.3g}" for r in rates})
        lines.append(f"| {name} | {'/'.join(report['devices'])} {'/'.join(report['dtypes'])} | "
                     f"{len(rates)} | {seconds:.3f} | {report.get('weights_moved')} | "
                     f"{', '.join(scores[:4])} |")
    left = dict(body.get("left_on_gpu", {}))
    live = left.pop("live_cuda_tensors", [])
    lines += ["", "Left on the GPU (MiB allocated / reserved): " + "; ".join(
        f"{stage} {_num(m['allocated_mib'])} / {_num(m['reserved_mib'])}"
        for stage, m in left.items())]
    lines += [f"- live CUDA tensors: {line}" for line in live]
    return lines


def _classics_md(body: dict[str, Any]) -> list[str]:
    lines = ["Seconds per frame on the GPU and, under each, the relative distance to pyiqa's "
             "CPU score (float64 ways: to its CPU score in float64). pyiqa TF32: torch's "
             "default (cuDNN's float32 convolutions in TF32); pyiqa: TF32 off; no cuDNN: "
             "PyTorch's own CUDA convolutions; f64: the frame in float64; engine: its exact "
             "equivalents, as a run scores.", "",
             "| side | photo | metric | CPU | CPU f64 | " + " | ".join(WAY_LABELS.values())
             + " |", "| --- " * (5 + len(WAY_LABELS)) + "|"]
    for row in body["rows"]:
        cells = [str(row["side"]), row["photo"], row["metric"],
                 _num(row.get("cpu"), 4), _num(row.get("cpu_f64"), 4)]
        for way in WAY_LABELS:
            if f"{way}_error" in row:
                cells.append(row[f"{way}_error"][:60])
            else:
                cells.append(f"{row[f'{way}_s']:.4f} ({row[f'{way}_relative']:.1e})")
        lines.append("| " + " | ".join(cells) + " |")
    totals: dict[tuple[int, str], float] = {}
    for row in body["rows"]:
        for way in ("cpu", *WAY_LABELS):
            if f"{way}_s" in row and row["photo"] == body["rows"][0]["photo"]:
                totals[row["side"], way] = totals.get((row["side"], way), 0.0) + row[f"{way}_s"]
    lines += ["", f"Six metrics, one frame ({body['rows'][0]['photo']}), seconds: " + "; ".join(
        f"{side}² {way} {seconds:.3f}" for (side, way), seconds in sorted(totals.items()))]
    return lines


WAY_LABELS = {"pyiqa_tf32": "pyiqa TF32", "pyiqa": "pyiqa", "pyiqa_no_cudnn": "no cuDNN",
              "pyiqa_f64": "pyiqa f64", "engine": "engine"}


def _deep_md(body: dict[str, Any]) -> list[str]:
    lines = [f"Banana100's 21 metrics at {body['side']}² ({body['photo']}), median of "
             f"{body['repeats']} after a warm-up: {body['measured']} measured, "
             f"{body['total_s']:.3f} s a frame for those.", "",
             "| metric | s per frame | peak MiB | built as, or why not |",
             "| --- | --- | --- | --- |"]
    for row in body["rows"]:
        if "seconds" in row:
            lines.append(f"| {row['metric']} | {row['seconds']:.4f} | {_num(row['peak_mib'])} | "
                         f"{row['built']} |")
        else:
            lines.append(f"| {row['metric']} | - | - | "
                         f"{row.get('needs') or row.get('error')} |")
    return lines


def _booking_md(body: dict[str, Any]) -> list[str]:
    lines = ["| GPU call | model | size | booked s | measured s (first, then median) |",
             "| --- | --- | --- | --- | --- |"]
    for key, row in body.items():
        lines.append(f"| {row['fn']} | {key} | {row['size']} | {row['booked_s']} | "
                     f"{row['first_s']:.3f}, {row['median_s']:.3f} |")
    return lines


def booking(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Per model: what the seam booked for one call against what the calls took."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        grouped.setdefault(str(call["model"]), []).append(call)
    return {model: {"fn": rows[0]["fn"], "size": rows[0]["size"],
                    "booked_s": rows[0]["booked_s"], "calls": len(rows),
                    "first_s": rows[0]["seconds"],
                    "median_s": statistics.median(r["seconds"] for r in rows)}
            for model, rows in grouped.items()}


def _num(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if abs(value) >= 0.01 or value == 0 else f"{value:.3g}"


PARTS_MD = {"chains": _chains_md, "classics": _classics_md, "deep": _deep_md,
            "booking": _booking_md}


# ---------------------------------------------------------------------------------- the run

def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--sides", default="1024,2048", help="part 2's frame sides")
    parser.add_argument("--chain-side", type=int, default=1024)
    parser.add_argument("--deep-side", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--photos", default=",".join(
        str(REPO / "assets" / "examples" / name) for name in PHOTOS))
    parser.add_argument("--parts", default="chains,classics,deep")
    parser.add_argument("--deep-metrics", default="", help="part 3's metrics (default: all)")
    parser.add_argument("--hub", action="store_true",
                        help="the real checkpoints from the Hugging Face cache, not tiny ones")
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    args = parser.parse_args()
    refuse_network()
    device, photos = args.device, [Path(p) for p in args.photos.split(",")]
    if is_cuda(device) and not torch.cuda.is_available():
        print("gpu_check: --device cuda, but torch sees no CUDA here")
        return 2
    from banana_space.settings import engine_settings

    weights = engine_settings().weights_dir
    if weights:
        from banana_space.scores.catalog import seed_weights

        seed_weights(weights)  # bare pyiqa reads brisque's and niqe's from its cache too
    result: dict[str, Any] = {"machine": machine(device), "parts": {}}
    print(json.dumps(result["machine"], indent=1))
    parts = args.parts.split(",")
    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "chains": lambda: chains(device, args.steps, args.chain_side, photos[0], args.hub,
                                 Path(tempfile.mkdtemp(prefix="tiny-qrealign-"))),
        "classics": lambda: classics(device, [int(s) for s in args.sides.split(",")], photos,
                                     args.repeats),
        "deep": lambda: deep(device, args.deep_side, photos[0], args.repeats,
                             [n for n in args.deep_metrics.split(",") if n])}
    for part in (p for p in runs if p in parts):
        print(f"\n=== {part} ===", flush=True)
        started = time.perf_counter()
        try:
            result["parts"][part] = runs[part]()
        except Exception as error:  # one part's failure must not hide the others' numbers
            traceback.print_exc()
            result["parts"][part] = {"error": error_text(error)}
        print(f"=== {part}: {time.perf_counter() - started:.1f} s", flush=True)
        if part == "chains" and "calls" in result["parts"][part]:
            result["parts"]["booking"] = booking(result["parts"][part]["calls"])
        args.out.write_text(json.dumps(result, indent=1, default=str))
    text = summary(result)
    args.out.with_suffix(".md").write_text(text)
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
