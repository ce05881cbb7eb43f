"""Text a visitor controls, made safe to place in Markdown (and the HTML it becomes).

Run reasons quote zip member names, notices quote file names, and a model's words are whatever
the model (or whoever built the recording) wrote: shown raw, `<img src=http://…>` would load a
remote image and `[Session expired](http://…)` would render a convincing link on a page anyone
can be sent to (`?run=`). `plain` makes such text render as exactly its characters.
"""

from __future__ import annotations

import html
import re

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones that make markup
# in the middle of a line (links, images, emphasis, code, tables, gradio's $…$ LaTeX). Tags and
# autolinks (<…>) are escaped as HTML first.
_MARKDOWN = re.compile(r"([\\`*_\[\]()!|~$])")


def plain(text: str) -> str:
    """`text` as Markdown that renders as exactly its characters: no tag, link or image."""
    return _MARKDOWN.sub(r"\\\1", html.escape(text, quote=False))
