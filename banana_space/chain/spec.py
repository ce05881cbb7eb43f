"""A run's settings, typed: `RunSpec`, its builders, its checks, and its round trip through
run.json (`to_settings` / `from_settings`), so that a resumed run reads back the spec it was
started with.

Every front door builds its spec here: the page (`page/run_tab/form.py`), the API and MCP tools
(`page/api.py`), the CLI and the scripts. The paper's protocol is the default (§3: the fixed
prompt, every frame scored); nothing here loads a model.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from ..backends import REGISTRY as BACKENDS
from ..judges import REGISTRY as JUDGES
from ..prompts import DEFAULT_PROMPT
from ..scores.catalog import CPU_DEFAULTS, check_metric_names
from ..scores.pool import MAX_METRICS_PER_RUN
from ..sources.images import LoadedImage
from .quota import judged_steps

MAX_STEPS = 100
MAX_PROMPT_CHARS = 4000  # the paper's prompt is 72; run.json and the zip copy it
MAX_SEED = 2**32 - 1  # numpy's and torch's generators take 0 .. 2**32 - 1


@dataclass(frozen=True)
class RunSpec:
    """What a run is asked to do. Build one with `of_image` or `replay` (or by keyword)."""

    image: Image.Image | None  # frame 0 (None for a backend that brings its own, e.g. replay)
    steps: int
    backend: str = "simulate"
    backend_options: dict[str, Any] = field(default_factory=dict)
    prompt: str = DEFAULT_PROMPT
    seed: int = 0
    metrics: Sequence[str] = CPU_DEFAULTS
    judges: Sequence[str] = ()
    judge_options: dict[str, Any] = field(default_factory=dict)
    image_notes: list[str] = field(default_factory=list)
    judge_at: str = "every"  # or "checkpoints" (quota.py: the ZeroGPU default)

    @classmethod
    def of_image(cls, loaded: LoadedImage, steps: int, backend: str = "simulate",
                 **settings: Any) -> RunSpec:
        """A chain from an input image (`images.load_image`'s answer, whose notes it keeps).

        Args:
            loaded: the checked input image.
            steps: how many times the output is fed back in (1 .. MAX_STEPS).
            backend: a generator's registry name.
            **settings: any other field of `RunSpec` by name.
        Returns:
            The spec; `check_spec` (called by `start_run`) says what is wrong with it.
        """
        return cls(loaded.image, steps, backend, image_notes=list(loaded.notes), **settings)

    def checked_sides(self) -> dict[str, RunSpec]:
        """A chain of one side: this spec as side "A", checked (`check_spec`)."""
        check_spec(self)
        return {"A": self}

    def record(self) -> None:
        """A lone run is no comparison: it has no pair's record."""
        return None

    @classmethod
    def replay(cls, source: str, steps: int = MAX_STEPS, **settings: Any) -> RunSpec:
        """A recorded chain played back and scored (`backends/replay.py`): `source` is a
        folder, zip, animated GIF/WebP, run directory or hf://datasets/… path, and `steps` is
        at most how many of its frames are scored."""
        return cls(None, steps, "replay", {"source": source}, **settings)


def check_spec(spec: RunSpec) -> None:
    """Raise ValueError with a message that lists what is valid."""
    if not _is_whole(spec.steps) or not 1 <= spec.steps <= MAX_STEPS:
        raise ValueError(f"steps must be a whole number between 1 and {MAX_STEPS}, got "
                         f"{spec.steps!r}")
    if not _is_whole(spec.seed) or not 0 <= spec.seed <= MAX_SEED:
        raise ValueError(f"the seed must be a whole number between 0 and {MAX_SEED}, got "
                         f"{spec.seed!r}")
    if spec.backend not in BACKENDS:
        raise ValueError(f"unknown backend {spec.backend!r}; valid backends: "
                         f"{', '.join(BACKENDS)}")
    unknown = [j for j in spec.judges if j not in JUDGES]
    if unknown:
        raise ValueError(f"unknown judge(s) {', '.join(unknown)}; valid judges: "
                         f"{', '.join(JUDGES) or 'none'}")
    takes = BACKENDS[spec.backend].info.option_names
    extra = sorted(set(spec.backend_options) - set(takes))
    if extra:
        raise ValueError(f"backend {spec.backend!r} takes no option(s) {', '.join(extra)}; it "
                         f"takes: {', '.join(takes) or 'none'}")
    if len(set(spec.metrics)) > MAX_METRICS_PER_RUN:
        raise ValueError(f"{len(set(spec.metrics))} metrics asked for; one run may score with "
                         f"at most {MAX_METRICS_PER_RUN}")
    check_metric_names(list(spec.metrics))
    judged_steps(spec.steps, spec.judge_at)  # a ValueError names the valid choices
    if not spec.prompt.strip():
        raise ValueError("the prompt is empty")
    if len(spec.prompt) > MAX_PROMPT_CHARS:
        raise ValueError(f"the prompt is {len(spec.prompt)} characters long; at most "
                         f"{MAX_PROMPT_CHARS} are taken")


def _is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def secret_names() -> set[str]:
    """Every option any backend or judge marks secret (`Option.secret`: the one definition),
    read from the registries when asked (never written, logged or shown back)."""
    infos = [entry.info for entry in (*BACKENDS.values(), *JUDGES.values())]
    return {option.name for info in infos for option in info.options if option.secret}


def keyed(backend: str, judges: Iterable[str], key: str | None
          ) -> tuple[dict[str, str], dict[str, str]]:
    """(backend options, judge options) that give a visitor's `key` to every secret option the
    backend and the judges take, whatever each calls it; nothing without a key."""
    if not key:
        return {}, {}
    entry = BACKENDS.get(backend)
    infos = [JUDGES[name].info for name in judges if name in JUDGES]
    return ({option.name: key for option in entry.info.options if option.secret}
            if entry is not None else {},
            {option.name: key for info in infos for option in info.options if option.secret})


def public_options(options: dict[str, Any]) -> dict[str, Any]:
    """The options that may be recorded: plain values, never a secret, never a path on this
    server (a replayed file is recorded by its name)."""
    secret = secret_names()
    return {k: Path(v).name if isinstance(v, str) and os.path.isabs(v) else v
            for k, v in options.items()
            if k not in secret and isinstance(v, (str, int, float, bool, type(None)))}


def to_settings(spec: RunSpec, *, steps: int, backend_settings: dict[str, Any],
                input_size: tuple[int, int], input_notes: list[str]) -> dict[str, Any]:
    """The spec as run.json records it: no image, no secret, no server path.

    Args:
        spec: the checked spec.
        steps: the steps the run will make (a replay: at most its frames).
        backend_settings: the backend's own `settings()` (what shapes its output).
        input_size: frame 0's (width, height).
        input_notes: what loading frame 0 changed (an EXIF turn, a downscale…).
    Returns:
        A JSON-able dict; `from_settings` reads it back.
    """
    return {"backend": spec.backend, "backend_options": public_options(spec.backend_options),
            "backend_settings": backend_settings, "prompt": spec.prompt, "steps": steps,
            "seed": spec.seed, "metrics": list(spec.metrics), "judges": list(spec.judges),
            "judge_options": public_options(spec.judge_options),
            "input_size": list(input_size), "input_notes": input_notes,
            "judge_at": spec.judge_at}


def from_settings(settings: dict[str, Any], key: str | None = None) -> RunSpec:
    """The spec a run was started with, from its run.json `settings` (frame 0 is the run's
    own, so `image` is None). Secrets are never recorded: `key` goes to every secret option
    the backend and the judges take (`keyed`). A run recorded before `judge_at` existed judged
    every frame."""
    backend, judges = settings["backend"], list(settings["judges"])
    backend_secrets, judge_secrets = keyed(backend, judges, key)
    return RunSpec(None, settings["steps"], backend,
                   {**settings.get("backend_options", {}), **backend_secrets},
                   settings["prompt"], settings["seed"], list(settings["metrics"]), judges,
                   {**settings.get("judge_options", {}), **judge_secrets},
                   list(settings.get("input_notes", [])), settings.get("judge_at", "every"))
