"""`judge_qrealign`: Q-ReAlign Mini rates frames through pyiqa's own `QReAlign`, with no key and
no GPU.

Q-ReAlign (pyiqa 0.1.16, `pyiqa/archs/qrealign_arch.py`; https://github.com/Q-Future/Q-ReAlign)
is the Q-Align recipe (Wu et al., "Q-Align: Teaching LMMs for Visual Scoring via Discrete
Text-Defined Levels", arXiv 2312.17090) on a Qwen3.5-VL backbone: asked "Can you rate the quality
of this picture?" with its answer begun as "The quality of the image is", the model's
probabilities for the next word excellent / good / fair / poor / bad, weighted 1, 0.75, 0.5,
0.25, 0, give one score in [0, 1], higher is better, from one forward pass (no generation). The
score is pyiqa's number as it comes, on its own 0-1 scale (not rescaled to 1-5). The checkpoint
is `q-future/Q-ReAlign-Mini-0.8B`, pyiqa's `qrealign-mini`.

**What it sees: native pixels of one fixed window.** Much of a replication chain's damage is fine
static that a thumbnail hides (Banana100, arXiv 2604.03400: noise, colour drift and lost detail
within 5-10 steps), and a downscale averages static away, so a judge shown a downscaled frame
(the processor's own max-pixels cap) cannot see it. A whole 2048 x 1280 frame at native
resolution is 2560 visual tokens (16-pixel patches, merged 2 x 2): by our estimate a minute or
more a frame on a 2-vCPU machine (bench/judge_cpu.py). So the judge is shown one `WINDOW` x
`WINDOW` window of native pixels, 256 visual tokens:
- the centre of the frame, placed by geometry, never by content, so no frame, damaged or not,
  moves it: every step is seen through the same window (a frame of another size, as some
  editors return, through the window at its own centre);
- the centre, because a photograph's subject usually is, and the chain's damage is not local
  (an editor re-renders the whole frame at each step), so a window of native pixels shows it;
- a multiple of 32 (patch 16 x merge 2), so the processor's `smart_resize` leaves it as it is;
  loading checks that the checkpoint's pixel limits would not resize it, and refuses otherwise.
  A frame smaller than the window is shown whole (rounded by the processor to a multiple of 32).
`bench/judge_cpu.py` counts the tokens and measures the seconds.

**Where it runs.** On a CPU it rates the checkpoints (0, 1, 5, 10, 20 and the last step: what
the verdict reads), one model shared by all runs and one frame at a time, on a thread beside the
chain (`chain.py`), so it never holds the stream back. On a CUDA machine of one's own it rates
every frame there. On ZeroGPU it stays on the CPU: a GPU call would spend the visitor's daily
quota, and this judge exists for the visitor who has none to spend.

**Which weights.** The Hugging Face cache's copy of the checkpoint (the Space card preloads it);
a run never downloads it: without it the judge is listed unavailable with the reason.
`BANANA_QREALIGN_MODEL` names a local folder holding a Q-ReAlign Mini checkpoint instead (the
operator's; the tests point it at a tiny random one). A visitor chooses only whether it rates,
never which checkpoint, so no visitor can make the server load Q-ReAlign Pro or Q-Align.
"""

from __future__ import annotations

import math
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

from PIL import Image

from ..backends.base import BackendUnavailable, Report, report_nothing
from ..gpu import ModelCache, cuda_available
from ..settings import engine_settings
from .base import Entry, JudgeInfo, Rating

REPO_ID = "q-future/Q-ReAlign-Mini-0.8B"
MODEL_VAR = "BANANA_QREALIGN_MODEL"  # a local folder with a Q-ReAlign Mini checkpoint
WINDOW = 512  # pixels a side: 256 visual tokens of native pixels (see the docstring)
CPU_CHECKPOINTS = (0, 1, 5, 10, 20)  # and the last step
PYIQA_SINCE = (0, 1, 16)  # the first pyiqa with QReAlign
WEIGHTS_MISSING = (f"its weights are not on this machine: `hf download {REPO_ID}` (0.8B "
                   "parameters, ~1.6 GB in bf16; the Space's card preloads them), or set "
                   f"{MODEL_VAR} to a local copy")

INFO = JudgeInfo(
    name="judge_qrealign",
    label="VLM judge: Q-ReAlign Mini, via pyiqa",
    description=f"{REPO_ID} (pyiqa's QReAlign) rates a {WINDOW} x {WINDOW} window of native "
                "pixels at the frame's centre, 0-1, in one forward pass; on a CPU at the "
                "checkpoints.",
    score_range=(0.0, 1.0),
)

_MODELS = ModelCache()
_ONE_AT_A_TIME = threading.Lock()  # one forward pass at a time: the CPU has few cores


def _pyiqa_too_old() -> str | None:
    try:
        version = metadata.version("pyiqa")
    except metadata.PackageNotFoundError:
        return "needs pyiqa (pip install pyiqa)"
    numbers = tuple(int(part) for part in version.split(".")[:3] if part.isdigit())
    if numbers < PYIQA_SINCE:
        return f"needs pyiqa 0.1.16 or later for its QReAlign class (found {version})"
    return None


def checkpoint_folder() -> Path | None:
    """The local folder holding the checkpoint, or None; never downloads anything."""
    if chosen := engine_settings().qrealign_model:
        folder = Path(chosen)
        return folder if (folder / "config.json").is_file() else None
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = Path(snapshot_download(REPO_ID, local_files_only=True))
    except LocalEntryNotFoundError:
        return None
    has_weights = any(folder.glob("*.safetensors"))
    return folder if has_weights and (folder / "config.json").is_file() else None


def unavailable() -> str | None:
    """The registry's cheap check: loads no weights (and does not import pyiqa)."""
    if reason := _pyiqa_too_old():
        return reason
    if checkpoint_folder() is None:
        chosen = engine_settings().qrealign_model
        return (f"{MODEL_VAR}={chosen!r} holds no checkpoint (no config.json)" if chosen
                else WEIGHTS_MISSING)
    return None


def default_device() -> str:
    """CUDA where this machine has its own GPU; the CPU elsewhere, ZeroGPU included."""
    return "cuda" if not engine_settings().zero_gpu and cuda_available() else "cpu"


def centre_window(image: Image.Image, side: int = WINDOW) -> Image.Image:
    """The `side` x `side` window of native pixels at the image's centre (the whole image along
    a dimension shorter than `side`)."""
    width, height = image.size
    box_w, box_h = min(side, width), min(side, height)
    left, top = (width - box_w) // 2, (height - box_h) // 2
    return image.crop((left, top, left + box_w, top + box_h))


def visual_tokens(processor: Any, width: int, height: int) -> int:
    """How many visual tokens `processor` makes of a `width` x `height` image."""
    images = processor.image_processor
    return images.get_number_of_image_patches(height, width, {}) // images.merge_size ** 2


def load_metric(folder: Path, device: str) -> Any:
    """pyiqa's `QReAlign` on `device`: float32 on a CPU (the dtype PyTorch's CPU kernels are
    made for), the checkpoint's own (bf16) on CUDA."""
    import torch
    from pyiqa.archs.qrealign_arch import QReAlign

    dtype = "auto" if device.startswith("cuda") else torch.float32
    metric = QReAlign(model=str(folder), dtype=dtype).to(device).eval()
    images = metric.processor.image_processor
    native = (WINDOW // images.patch_size) ** 2 // images.merge_size ** 2
    if visual_tokens(metric.processor, WINDOW, WINDOW) != native:
        raise BackendUnavailable(
            f"the checkpoint's processor would resize a {WINDOW} x {WINDOW} window (its pixel "
            f"limits are {dict(images.size)}): the judge must see native pixels")
    return metric


def _tensor(image: Image.Image) -> Any:
    """(1, 3, H, W) in [0, 1], as every pyiqa metric takes it: `catalog.to_tensor`'s numbers
    (the catalog imports the judges' registry, so a judge may not import it)."""
    from torchvision.transforms.functional import to_tensor

    return to_tensor(image).unsqueeze(0)


class QReAlignJudge:
    info = INFO

    def __init__(self, *, device: str | None = None) -> None:
        self.device = device or default_device()

    def __repr__(self) -> str:
        return f"QReAlignJudge(device={self.device!r})"

    def unavailable_reason(self) -> str | None:
        return unavailable()

    def schedule(self, steps: int) -> frozenset[int] | None:
        if self.device.startswith("cuda"):
            return None
        return frozenset(step for step in CPU_CHECKPOINTS if step <= steps) | {steps}

    def load(self, report: Report = report_nothing) -> Any:
        """The metric, read on first use in this process (outside any GPU call)."""
        if reason := self.unavailable_reason():
            raise BackendUnavailable(f"Q-ReAlign {reason}")
        folder = checkpoint_folder()
        assert folder is not None  # unavailable_reason said it is there
        key = f"{folder.resolve()}@{self.device}"
        if not _MODELS.holds(key):
            report(f"loading {folder.name} (first use in this process)…")
        return _MODELS.get(key, lambda: load_metric(folder, self.device))

    def rate(self, image: Image.Image, report: Report = report_nothing) -> Rating:
        metric = self.load(report)
        window = _tensor(centre_window(image.convert("RGB"))).to(self.device)
        with _ONE_AT_A_TIME:
            score = float(metric(window)[0])
        if not math.isfinite(score):
            return Rating(math.nan, "", "no score: the model gave no finite probabilities")
        return Rating(score)


ENTRIES = (Entry(INFO, QReAlignJudge, unavailable),)
