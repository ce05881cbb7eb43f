"""Shared set-up for the benchmarks: offline, on real parts, as tests/conftest.py does.

Import it first (`import _setup`): before anything imports pyiqa it points TORCH_HOME at a fresh
temporary folder, which the engine seeds from ../shared/weights (BANANA_WEIGHTS_DIR), and puts
the repository on sys.path. The helpers print the machine and a small table, so every number
in docs/performance.md says where it came from.
"""

from __future__ import annotations

import atexit
import math
import os
import platform
import resource
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
WEIGHTS = Path(os.environ.get("BANANA_WEIGHTS_DIR", REPO.parent / "shared" / "weights"))
PHOTO = REPO / "assets" / "examples" / "astronaut.png"
if not (WEIGHTS / "brisque_svm_weights.pth").is_file():
    sys.exit(f"BRISQUE/NIQE weights not found in {WEIGHTS}: set BANANA_WEIGHTS_DIR")

_TORCH_HOME = tempfile.mkdtemp(prefix="banana-bench-torch-home-")
atexit.register(shutil.rmtree, _TORCH_HOME, ignore_errors=True)
os.environ["TORCH_HOME"] = _TORCH_HOME
os.environ["BANANA_WEIGHTS_DIR"] = str(WEIGHTS)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
sys.path.insert(0, str(REPO))


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def describe_machine() -> str:
    """CPU model, cores, torch threads and versions: printed above every table."""
    import torch

    return (f"{cpu_model()} · {os.cpu_count()} cores · torch {torch.__version__} with "
            f"{torch.get_num_threads()} threads · Python {platform.python_version()} · "
            f"THP_MEM_ALLOC_ENABLE={os.environ.get('THP_MEM_ALLOC_ENABLE', 'unset')}")


def photo(size: int) -> Any:
    """A real photo (public domain, scikit-image's 'astronaut') resized to size x size."""
    from PIL import Image

    with Image.open(PHOTO) as image:
        return image.convert("RGB").resize((size, size), Image.Resampling.BICUBIC)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak() -> None:
    """Restart the kernel's high-water mark (VmHWM), to measure one stage's own peak."""
    Path("/proc/self/clear_refs").write_text("5")


def rss_mb() -> float:
    """VmRSS: this process's resident memory now."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def peak_since_reset_mb() -> float:
    """VmHWM: the peak resident memory since `reset_peak` (or since the start)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return math.nan


def child_result(script: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run `script` again in a fresh process with `args` (and `env` added to this process's
    environment), and return the JSON its last line of output prints: each way of a benchmark
    measured in a process of its own. A child that fails raises with the end of its stderr."""
    import json
    import subprocess

    done = subprocess.run([sys.executable, script, *args], env={**os.environ, **(env or {})},
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{Path(script).name} {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    print(f"\n{title}")
    for i, row in enumerate(cells):
        print("  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in
                        enumerate(zip(row, widths, strict=True))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def equivalents_before_issue_35() -> dict[str, Any]:
    """The engine's exact equivalents as they were before issue 35, for the benchmarks' "before"
    way: entropy's bincount, and ssim as pyiqa's own `ssim` over 128² tiles (issue 12); brisque
    and niqe pyiqa's own way."""
    import torch
    from pyiqa.archs.ssim_arch import ssim

    from banana_space.scores import equivalents

    def tiled(x: torch.Tensor, y: torch.Tensor, data_range: float) -> torch.Tensor:
        margin, side = 10, 128
        out_h, out_w = x.shape[-2] - margin, x.shape[-1] - margin
        if out_h <= side and out_w <= side:
            return ssim(x, y, data_range=data_range)
        rows = [torch.cat([ssim(x[..., top:top + side + margin, left:left + side + margin],
                                y[..., top:top + side + margin, left:left + side + margin],
                                get_ssim_map=True, data_range=data_range)
                           for left in range(0, out_w, side)], dim=3)
                for top in range(0, out_h, side)]
        return torch.cat(rows, dim=2).mean([1, 2, 3])

    class TiledBefore(equivalents.TiledSSIM):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            x, y = (self._luma(t).to(torch.float64) for t in (x, y))
            return tiled(x, y, self.data_range)

    def tiled_network(original: Any) -> Any:
        return TiledBefore(downsample=False, test_y_channel=original.test_y_channel,
                           color_space=original.color_space).eval()

    return {"entropy": equivalents.EQUIVALENTS["entropy"], "ssim": tiled_network}


def use_equivalents_before_issue_35() -> None:
    """In this process (a benchmark's child), the engine builds metrics as before issue 35."""
    from banana_space.scores import equivalents

    before = equivalents_before_issue_35()
    equivalents.EQUIVALENTS.clear()
    equivalents.EQUIVALENTS.update(before)
