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


# Only DEFAULT_PROMPT is the paper's wording as published; the exact text of its other prompt
# variants was not in any source we could search, so the rows below are our own wording of
# the same ideas. Each row's ideal output is predictable, which is what makes drift measurable.
PRESETS: dict[str, PromptPreset] = {
    "replicate": PromptPreset("Exact replica (paper default)", DEFAULT_PROMPT),
    "replicate_reworded": PromptPreset(
        "Exact replica (reworded)",
        "Make an identical copy of this image. Change nothing: same content, colours, framing "
        "and resolution."),
    # Mirroring twice per step is the identity, so any change is the generator's own doing.
    "mirror_twice": PromptPreset(
        "Mirror it (applied twice per step)",
        "Mirror this image horizontally, left to right. Change nothing else.", repeats=2),
    # A controlled, countable change: after k steps there should be exactly k more apples.
    "add_apple": PromptPreset(
        "Add one apple to the table each step",
        "Add one apple to the table. Change nothing else."),
    "replicate_denoise": PromptPreset(
        "Exact replica, remove noise",
        "Produce an exact replica of the provided image, with no alterations, and remove any "
        "noise."),
}


def repeats_for(prompt: str) -> int:
    """Calls per step for a prompt: a preset's own count, 1 for free text."""
    return next((p.repeats for p in PRESETS.values() if p.text == prompt), 1)
