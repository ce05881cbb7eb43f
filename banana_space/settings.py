"""The engine's settings: every variable the engine reads, read once, into one frozen value.

`SETTINGS` is made when this module is first imported; nothing else in `banana_space/` reads
the environment for a setting. Code reads it through `engine_settings()` (so a test can swap
the value: `monkeypatch.setattr(banana_space.settings, "SETTINGS", replace(...))`), and a
worker process is handed what it must differ in as an argument, never through the environment.
The page's own variables are `page.settings.Settings`'s. Secrets (GEMINI_API_KEY,
GOOGLE_API_KEY, HF_TOKEN) are not settings: they are looked up where they are used and never
held in a value that could be printed. Another library's own variable (HF_ENDPOINT,
TORCH_HOME) is read where that library would read it, so the two always agree.

It imports nothing of ours: every layer may read it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EngineSettings:
    """How large, how long and how many, where the weights and runs go, and where we run."""

    max_side: int  # BANANA_MAX_SIDE: larger inputs are downscaled to this side (images.py)
    metric_load_s: float  # BANANA_METRIC_LOAD_S: a run's wait for its metrics (pool.py)
    scoring_threads: int  # BANANA_SCORING_THREADS: one frame's metrics side by side (scoring)
    memory_gb: float | None  # BANANA_MEMORY_GB: the memory budget (None: half the limit)
    real_chains: str  # BANANA_REAL_CHAINS: "a,b" picks Banana100's chains, "off" none
    runs_repo: str | None  # BANANA_RUNS_REPO: the hub dataset that keeps finished runs
    weights_dir: Path | None  # BANANA_WEIGHTS_DIR: weight files to seed pyiqa's cache from
    qrealign_model: str | None  # BANANA_QREALIGN_MODEL: a local Q-ReAlign Mini checkpoint
    gemini_base_url: str | None  # BANANA_GEMINI_BASE_URL: the Gemini API's address (tests)
    preload: str | None  # BANANA_PRELOAD: models page/zerogpu.py loads at start (None: unset)
    zero_gpu: bool  # SPACES_ZERO_GPU: set by Hugging Face on a ZeroGPU Space
    runs_commit_s: float = 300.0  # BANANA_RUNS_COMMIT_S: finished runs are committed this often

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> EngineSettings:
        """The settings from `env` (the process's environment by default), with the engine's
        defaults; a malformed number raises ValueError naming the variable."""
        return cls(
            max_side=number(env, "BANANA_MAX_SIDE", "2048", int),
            metric_load_s=number(env, "BANANA_METRIC_LOAD_S", "30", float),
            scoring_threads=number(env, "BANANA_SCORING_THREADS", str(os.cpu_count() or 1), int),
            memory_gb=number(env, "BANANA_MEMORY_GB", "", float) if env.get(
                "BANANA_MEMORY_GB") else None,
            real_chains=env.get("BANANA_REAL_CHAINS", "").strip(),
            runs_repo=env.get("BANANA_RUNS_REPO", "").strip() or None,
            runs_commit_s=number(env, "BANANA_RUNS_COMMIT_S", "300", float),
            weights_dir=Path(env["BANANA_WEIGHTS_DIR"]) if env.get("BANANA_WEIGHTS_DIR")
            else None,
            qrealign_model=env.get("BANANA_QREALIGN_MODEL") or None,
            gemini_base_url=env.get("BANANA_GEMINI_BASE_URL") or None,
            preload=env.get("BANANA_PRELOAD"),
            zero_gpu=bool(env.get("SPACES_ZERO_GPU")),
        )


def number(env: Mapping[str, str], name: str, default: str, kind: type) -> int | float:
    """`env[name]` (else `default`) as `kind`; ValueError naming the variable otherwise."""
    text = env.get(name, default)
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{name} must be a {'whole ' if kind is int else ''}number, "
                         f"not {text!r}") from None


def engine_settings() -> EngineSettings:
    """This process's settings (read once, at first import)."""
    return SETTINGS


SETTINGS = EngineSettings.from_env()
