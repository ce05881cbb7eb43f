"""The registry of reference judges (VLMs that rate a frame 1-5), one plain table like the
backends' registry, refusing a name registered twice. Importing it loads no model.

`base` is a judge's interface (`Judge`, `Rating`); `answer` reads a score out of a model's
answer; `schedule` says which steps are rated (a run's choice, then each judge's own); one file
per judge: `visualquality_r1` (VisualQuality-R1), `qrealign` (Q-ReAlign),
`gemini_judge` (Gemini as a judge).
"""

from __future__ import annotations

from typing import Any

from ..registry import unique_table
from . import gemini_judge, qrealign, visualquality_r1
from .base import Entry, Judge, JudgeInfo, Rating

_MODULES: list[Any] = [qrealign, gemini_judge, visualquality_r1]

REGISTRY: dict[str, Entry] = unique_table(
    "judge", ((entry.info.name, entry) for module in _MODULES for entry in module.ENTRIES))


def create_judge(name: str, **options: Any) -> Judge:
    if name not in REGISTRY:
        valid = ", ".join(REGISTRY) or "none"
        raise ValueError(f"unknown judge {name!r}; valid judges: {valid}")
    return REGISTRY[name].create(**options)


def create_judges(names: list[str], options: dict[str, Any]) -> list[Judge]:
    """Judges for a run: each takes, of the run's judge options, those its info names."""
    return [create_judge(name, **{k: v for k, v in options.items()
                                  if k in REGISTRY[name].info.option_names}) for name in names]


__all__ = ["REGISTRY", "Entry", "Judge", "JudgeInfo", "Rating", "create_judge", "create_judges"]
