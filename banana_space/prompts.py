"""Prompt presets: one table, as in Banana100 (arXiv 2604.03400), Sec. 3.

The default is the paper's replication prompt, verbatim. `repeats` is how many times the
generator is called per step with that prompt (e.g. "mirror it" twice, so the ideal output of a
step equals its input). Free text is always allowed beside the presets.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PROMPT = "Produce an exact replica of the provided image, with no alterations."


@dataclass(frozen=True)
class PromptPreset:
    label: str
    text: str
    repeats: int = 1  # generator calls per chain step


PRESETS: dict[str, PromptPreset] = {
    "replicate": PromptPreset("Exact replica (paper default)", DEFAULT_PROMPT),
}


def repeats_for(prompt: str) -> int:
    """Calls per step for a prompt: a preset's own count, 1 for free text."""
    return next((p.repeats for p in PRESETS.values() if p.text == prompt), 1)
