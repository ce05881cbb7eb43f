"""The registry of generator backends: one plain table, name -> how to make one.

Each backend module exports `ENTRIES`; importing a module is cheap (heavy SDKs load lazily inside
the backend), so listing backends never loads a model or needs a key. A name registered twice
is refused at import (`registry.unique_table`).

`base` is a backend's interface (`Backend`, `BackendInfo`, `Option`); one file per generator:
`simulate` (the offline models of an editor's damage, whose step functions are `artifacts`,
`mi_ripple` and `controls`, their arithmetic made the same bits on any x86 CPU by
`portable`), `replay` (a recorded chain), `gemini` (Nano Banana, through
`gemini_client`, the Gemini API connection it shares with the Gemini judge), `diffusers_edit`
(the open editors on a GPU).
"""

from __future__ import annotations

from typing import Any

from ..registry import unique_table
from . import diffusers_edit, gemini, replay, simulate
from .base import Backend, BackendInfo, BackendUnavailable, Entry, Option, options_of

# Order is the UI's order: offline first, so the default works on any laptop.
_MODULES = [simulate, replay, gemini, diffusers_edit]

REGISTRY: dict[str, Entry] = unique_table(
    "backend", ((entry.info.name, entry) for module in _MODULES for entry in module.ENTRIES))
# Every backend option by name: the CLI's flags and the page's controls are made from these.
OPTIONS: dict[str, Option] = options_of([entry.info for entry in REGISTRY.values()])


def backend_names() -> list[str]:
    return list(REGISTRY)


def create_backend(name: str, **options: Any) -> Backend:
    """Make the backend called `name`; a clear error lists the valid names."""
    if name not in REGISTRY:
        raise ValueError(f"unknown backend {name!r}; valid backends: {', '.join(REGISTRY)}")
    return REGISTRY[name].create(**options)


__all__ = ["OPTIONS", "REGISTRY", "Entry", "Backend", "BackendInfo", "BackendUnavailable", "Option",
           "backend_names", "create_backend"]
