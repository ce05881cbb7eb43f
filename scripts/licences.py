"""The licence of every package the Space installs, read from the wheels installed here.

    .venv/bin/python scripts/licences.py           # rewrite the table in docs/licences.md
    .venv/bin/python scripts/licences.py --check   # exit 1 when the table is not what it reads

The packages are those `pip install -r requirements.txt` installs on the Space, at the pins the
tests ran on (`check_pins.space_packages`: requirements.txt applies constraints.txt). For each
installed distribution it reads the metadata's `License-Expression` (PEP 639), else a one-line
`License` field, else the `License ::` classifiers, and every licence file the wheel ships
(`License-File`, or a LICENSE / LICENCE / COPYING / NOTICE file in its .dist-info): each file
is named with its first line, and a file whose text grants use for non-commercial purposes
only marks the package. The table between the markers in docs/licences.md is written from
this, never by hand.
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib.metadata import Distribution
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_pins  # noqa: E402 (beside this script)

DOC = check_pins.REPO / "docs" / "licences.md"
START, END = "<!-- packages: scripts/licences.py -->", "<!-- /packages -->"
LICENCE_FILE = re.compile(r"(LICEN[CS]E|COPYING|NOTICE)[^/]*$", re.IGNORECASE)
# A grant limited to non-commercial use ("PolyForm Noncommercial License", "use for
# non-commercial purpose"), not a licence that merely mentions it ("free for commercial and
# non-commercial use"; the GPL's "occasionally and noncommercially").
NON_COMMERCIAL = re.compile(r"noncommercial license|use for non-?\s*commercial purpose|"
                            r"non-?\s*commercial (?:use|purposes?) only", re.IGNORECASE)
SHORT = 60  # a `License` field longer than this (or of several lines) is the licence's text


def declared(dist: Distribution) -> str:
    """What the metadata says the licence is."""
    meta = dist.metadata
    if meta.get("License-Expression"):
        return meta["License-Expression"]
    field = (meta.get("License") or "").strip()
    if field and "\n" not in field and len(field) <= SHORT:
        return field
    classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or []
                   if c.startswith("License ::")]
    return " / ".join(classifiers) or "not stated in its metadata"


def licence_files(dist: Distribution) -> dict[str, str]:
    """Each licence file the wheel ships, by its name, with its text."""
    found = {}
    for file in dist.files or []:
        parts = Path(str(file)).parts
        if parts and parts[0].endswith(".dist-info") and LICENCE_FILE.search(str(file)):
            text = (dist.locate_file(file).read_text(errors="replace")
                    if Path(dist.locate_file(file)).is_file() else "")
            found["/".join(parts[2:] if parts[1:2] == ("licenses",) else parts[1:])] = text
    return found


def first_line(text: str) -> str:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line[:50] + ("…" if len(line) > 50 else "")


def row(name: str, dist: Distribution) -> str:
    files = licence_files(dist)
    shown = [f"{path} ({first_line(text)})" if first_line(text) else path
             for path, text in sorted(files.items())[:4]]
    if len(files) > 4:
        shown.append(f"and {len(files) - 4} more")
    limited = sorted(path for path, text in files.items() if NON_COMMERCIAL.search(text))
    terms = f"**non-commercial** ({', '.join(limited)})" if limited else ""
    return (f"| {name} | {dist.version} | {declared(dist)} | "
            f"{'; '.join(shown) or 'none shipped'} | {terms} |")


def table(python: str) -> str:
    packages = check_pins.space_packages(python)
    missing = sorted(name for name, (dist, _) in packages.items() if dist is None)
    if missing:
        raise SystemExit(f"not installed here, so not read: {', '.join(missing)}")
    lines = ["| package | version | licence (its metadata) | licence files it ships (first line) "
             "| terms that limit use |", "| --- | --- | --- | --- | --- |"]
    lines += [row(name, dist) for name, (dist, _) in sorted(packages.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether it is current")
    args = parser.parse_args(argv)
    text = DOC.read_text()
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    written = f"{before}{START}\n{table(check_pins.card_python())}\n{END}{after}"
    if args.check:
        if written != text:
            print(f"{DOC} is not what the installed packages say: run scripts/licences.py")
            return 1
        return 0
    DOC.write_text(written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
