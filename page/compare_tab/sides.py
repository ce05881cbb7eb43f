"""A comparison's two sides from what a visitor sends, for the Compare tab and the API's
`compare_chains` alike: form values (`side_of`) or the API's JSON (`side_from_json`), each
refusal naming the side.
"""

from __future__ import annotations

import json
from typing import Any

from banana_space.chain.sides import Side
from banana_space.prompts import DEFAULT_PROMPT
from page.door.access import (
    Refusal,
    generator_of,
    whole_number,
)

SIDE_FIELDS = ("generator", "profile", "smoothed", "prompt", "seed")


# ---- sides from what a visitor sends ----------------------------------------------------------

def side_of(generator: str, profile: str, smoothed: Any, prompt: str, seed: Any,
            name: str) -> Side:
    """A side's settings from a visitor's values, or a `Refusal` naming the side."""
    generator, options = generator_of(generator or "simulate", profile, name)
    if not isinstance(smoothed, bool):
        raise Refusal(f"Side {name}: smoothed is true or false.")
    return Side(generator, options, smoothed, prompt or DEFAULT_PROMPT,
                whole_number(seed, f"Side {name}'s seed"))


def side_from_json(text: str, name: str) -> Side:
    """A side from the API's JSON object (every key optional: `SIDE_FIELDS`)."""
    try:
        given = json.loads(text or "{}")
    except json.JSONDecodeError:
        raise Refusal(f"Side {name} is not JSON: give an object such as "
                       '{"profile": "white-noise"}.') from None
    if not isinstance(given, dict):
        raise Refusal(f"Side {name} must be a JSON object.")
    unknown = sorted(set(given) - set(SIDE_FIELDS))
    if unknown:
        raise Refusal(f"Side {name} takes no {', '.join(unknown)}; it takes "
                       f"{', '.join(SIDE_FIELDS)}.")
    return side_of(given.get("generator", "simulate"), given.get("profile", ""),
                   given.get("smoothed", False), given.get("prompt", ""), given.get("seed", 0),
                   name)
