"""Name tables that refuse a duplicate name: the backends', the judges' and the rulers'.

lm-evaluation-harness's `Registry` refuses a second entry under a taken name; so do these. A
duplicate in a built-in table is a programming error: it raises at import, with both the kind
and the name, and never silently replaces the first entry (a dict literal or comprehension
would). Plug-ins are someone else's package and are refused with a warning instead
(`plugins.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


class DuplicateName(ValueError):
    """Two entries of one registry under one name."""


def unique_table(kind: str, rows: Iterable[tuple[str, T]]) -> dict[str, T]:
    """A registry's table from its rows, refusing a name that comes twice.

    Args:
        kind: what the table holds, for the error ("backend", "judge", "ruler").
        rows: (name, entry) pairs in the table's order (the UI's order, for backends).

    Returns:
        name -> entry, in the rows' order.

    Raises:
        DuplicateName: a name comes twice; the message names it.
    """
    table: dict[str, T] = {}
    for name, entry in rows:
        if name in table:
            raise DuplicateName(f"two {kind}s are registered as {name!r}; each needs a name "
                                "of its own")
        table[name] = entry
    return table
