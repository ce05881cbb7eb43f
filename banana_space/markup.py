"""Text a visitor controls, made safe to place in Markdown (and the HTML it becomes).

Run reasons quote zip member names, notices quote file names, and a model's words are whatever
the model (or whoever built the recording) wrote: shown raw, `<img src=http://…>` would load a
remote image, `[Session expired](http://…)` would render a convincing link, and a member name
holding a newline and `# …` a heading, on a page anyone can be sent to (`?run=`).
`escape_markdown` makes such text render as exactly its characters, on one line;
`without_paths` keeps a server path out of what is stored and shown; `error_line` says an
exception in one line a person can read.
"""

from __future__ import annotations

import html
import re

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones that make markup
# in the middle of a line (links, images, emphasis, code, tables, gradio's $…$ LaTeX). Tags and
# autolinks (<…>) are escaped as HTML first. GFM also links bare addresses: `scheme://`,
# `www.` and `name@host`, so their `:`, `.` and `@` are escaped too; and a first character
# that would start a heading or a list where the text begins a line.
_MARKDOWN = re.compile(r"([\\`*_\[\]()!|~$@])|(?<=[A-Za-z]):(?=//)|(?<=\b[wW]{3})\.|^[#+=-]")
# Line breaks and other control characters: a new line could start a heading, a list or a
# block quote, so visitor text always stays on the line it was placed on.
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
# An absolute path of two or more parts (not the `//host/…` of a URL): its last part is kept.
_PATH = re.compile(r"(?<![\w.:/~-])/(?:[^/\s'\"]+/)+([^/\s'\"]+)")


def one_line(text: str) -> str:
    """`text` with every run of control characters (newlines included) made one space."""
    return _CONTROL.sub(" ", text)


def escape_markdown(text: str) -> str:
    """`text` as Markdown that renders as exactly its characters, on one line: no tag, link,
    image, heading or list."""
    return _MARKDOWN.sub(lambda m: "\\" + m.group(0), html.escape(one_line(text), quote=False))


def without_paths(text: str) -> str:
    """`text` with each absolute path reduced to its file's name."""
    return _PATH.sub(r"\1", text)


def error_line(error: BaseException, limit: int | None = None) -> str:
    """`error` as one line a person can read: its type and the first line of its message (at
    most `limit` characters), never a traceback fragment."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:limit]}" if lines else type(error).__name__
