"""Does the Space build from the tested pins? Every package it installs pinned, every pin
installable on the Space's Python: one answer per pin, from the package index.

    .venv/bin/python scripts/check_pins.py [--python 3.12] [--glibc 36]

A Space installs `requirements.txt` only, so that file applies `constraints.txt` (its first
line, `-c constraints.txt`; `banana-space deploy` uploads the constraints beside it). Without
them every package the pins pull in would float (pyiqa alone pulls in about 40). The first
check needs no network: from requirements.txt it follows every dependency, as this
environment's installed metadata declares it, with markers read for the card's Python on
Linux x86-64, and names each package that constraints.txt does not pin, and each pin that is
not the version installed here, on which the tests ran (`unpinned`).

The Space builds on the Python its card names (README front matter, `python_version`), on Linux
x86-64, while this repository's tests run on whatever Python the machine has. A pin without a
distribution for the card's Python fails only when the Space builds, so this asks the index
first, without installing or downloading anything heavy:

1. one `pip install --dry-run --no-deps --only-binary=:all: --python-version … --platform …
   --report` over every pin of requirements.txt and constraints.txt: pip's own resolver picks a
   wheel per pin and reads only its metadata (PyPI serves it apart from the wheel, PEP 658), so
   torch's multi-GB wheel is never fetched;
2. each pin pip finds no wheel for is named in its error: it is set aside and the rest resolved
   again;
3. for the pins set aside, the index's file list (PEP 691 JSON) says whether an sdist exists:
   pip would build it on the Space ("sdist only"); a pin with neither is "missing".

Answers are cached per (pin, Python, glibc) in ~/.cache/banana-space/pins.json, so a rerun
asks only about new pins.

Before the index is asked, the torch pin (with its torchvision) and the card's Python are held
against the versions ZeroGPU installs, kept as data in `scripts/zerogpu_supported.json` with its
source and date: ZeroGPU installs its own torch build, and a Space pinning another version fails
to build ("No candidate PyTorch version found for ZeroGPU"). This needs no network.

Exit 0: every package is pinned to what the tests ran on, every pin has a wheel or an sdist
and ZeroGPU runs the torch pin; 1: a package is unpinned or pinned to another version, a pin is
missing, or ZeroGPU does not list the torch pin or the card's Python; 3: the index could not
be reached (only the checks without network were made).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PIN_FILES = ("requirements.txt", "constraints.txt")
# A Gradio Space runs on Debian bookworm: glibc 2.36 on x86-64. pip takes a platform tag
# literally, so every manylinux tag that glibc runs is named (2_17 is manylinux2014).
GLIBC_MINOR = 36
OLDEST_MINOR = 17
CACHE = (Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
         / "banana-space" / "pins.json")
UNREACHABLE = 3
SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2")
ZEROGPU = REPO / "scripts" / "zerogpu_supported.json"


def card_python() -> str:
    """The card's `python_version` (README front matter)."""
    header = (REPO / "README.md").read_text().split("---\n", 2)[1]
    found = re.search(r'^python_version:\s*"?([0-9.]+)"?\s*$', header, re.MULTILINE)
    if not found:
        raise SystemExit("README.md's card names no python_version")
    return found.group(1)


def pins() -> dict[str, str]:
    """name (normalised) -> version, from every `name==version` line of the pin files."""
    found: dict[str, str] = {}
    for file in PIN_FILES:
        for line in (REPO / file).read_text().splitlines():
            requirement = line.split("#")[0].split(";")[0].strip()
            if "==" in requirement:
                name, version = (part.strip() for part in requirement.split("==", 1))
                found[normalise(name.split("[")[0])] = version
    return found


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def space_environment(python: str) -> dict[str, str]:
    """Marker values of the Space: CPython `python` on Linux x86-64."""
    from packaging.markers import default_environment

    short = ".".join(python.split(".")[:2])
    return {**default_environment(), "python_version": short,
            "python_full_version": python if python.count(".") == 2 else f"{short}.0",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "os_name": "posix", "implementation_name": "cpython",
            "platform_python_implementation": "CPython"}


def unpinned(python: str) -> list[str]:
    """What the Space's `pip install -r requirements.txt` would not take from the tested pins:
    requirements.txt not applying constraints.txt, a package it installs with no pin, a pin
    that is not the version installed here. Empty when it builds from the tested pins."""
    text = (REPO / "requirements.txt").read_text()
    problems = [] if re.search(r"^-c constraints\.txt\s*$", text, re.MULTILINE) else [
        "requirements.txt does not apply the constraints (no line `-c constraints.txt`)"]
    wanted = pins()
    for name, (installed, needed_by) in space_packages(python).items():
        if installed is None:
            problems.append(f"{name} (for {needed_by}) is not installed here: not tested")
        elif name not in wanted:
            problems.append(f"{name} (for {needed_by}) is not pinned")
        elif wanted[name] != installed.version:
            problems.append(f"{name}=={wanted[name]} is pinned, {installed.version} was tested")
    return sorted(problems)


def space_packages(python: str) -> dict[str, tuple[Distribution | None, str]]:
    """Every package `pip install -r requirements.txt` installs on the Space: name ->
    (its distribution installed here, or None; what needs it), following each installed
    package's declared dependencies with markers read for the card's Python on Linux."""
    from packaging.requirements import Requirement

    text = (REPO / "requirements.txt").read_text()
    environment = space_environment(python)
    todo = [(Requirement(line.split("#")[0].strip()), "requirements.txt")
            for line in text.splitlines() if line.split("#")[0].strip()[:1].isalnum()]
    found: dict[str, tuple[Distribution | None, str]] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        requirement, needed_by = todo.pop()
        name, extras = normalise(requirement.name), frozenset(requirement.extras)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            installed = distribution(name)
        except PackageNotFoundError:
            found.setdefault(name, (None, needed_by))
            continue
        found.setdefault(name, (installed, needed_by))
        for line in installed.requires or []:
            dependency = Requirement(line)
            if dependency.marker is None or any(
                    dependency.marker.evaluate({**environment, "extra": extra})
                    for extra in extras | {""}):
                todo.append((dependency, name))
    return found


def index_url() -> str:
    return (os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple").rstrip("/")


def reachable() -> bool:
    try:
        with urllib.request.urlopen(f"{index_url()}/pip/", timeout=20):
            return True
    except (urllib.error.URLError, OSError):
        return False


def platforms(glibc_minor: int) -> list[str]:
    """The manylinux tags a Linux x86-64 with glibc 2.`glibc_minor` installs, newest first."""
    tags = [f"manylinux_2_{minor}_x86_64" for minor in range(glibc_minor, OLDEST_MINOR - 1, -1)]
    return [*tags, "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]


def dry_run(requirements: list[str], python: str, platform: list[str]
            ) -> tuple[dict[str, str], str | None]:
    """({name: the wheel pip picked}, None), or ({}, the first pin pip found no wheel for)."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps",
                   "--ignore-installed", "--only-binary=:all:", "--python-version", python,
                   "--implementation", "cp", *(f"--platform={tag}" for tag in platform),
                   "--target", str(Path(scratch) / "target"), "--report", str(report),
                   *requirements]
        # Not the machine's constraint file (it caps pins to what lies on this disk).
        env = {**os.environ, "PIP_CONSTRAINT": "", "PIP_NO_INPUT": "1"}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0 or not report.is_file():
            # No file for this Python and platform, or a file whose Requires-Python excludes it.
            refused = re.search(r"No matching distribution found for (\S+)|Package '([^']+)' "
                                r"requires a different Python", done.stderr)
            if not refused:
                raise RuntimeError(f"pip failed:\n{done.stderr[-2000:]}")
            return {}, refused.group(1) or refused.group(2)
        installs = json.loads(report.read_text())["install"]
    return {normalise(item["metadata"]["name"]):
            item["download_info"]["url"].rsplit("/", 1)[-1] for item in installs}, None


def sdist_of(name: str, version: str, python: str) -> str | None:
    """The pin's sdist file name on the index (PEP 691 JSON) whose Requires-Python admits
    `python`, or None."""
    from packaging.specifiers import SpecifierSet

    request = urllib.request.Request(f"{index_url()}/{name}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        files = json.load(answer)["files"]
    stem = f"{name}-{version}".replace("-", "_").lower()
    for file in files:
        filename = file["filename"]
        admits = python in SpecifierSet(file.get("requires-python") or "")
        if filename.endswith(SDIST_SUFFIXES) and admits and \
                filename.lower().replace("-", "_").startswith(stem + "."):
            return filename
    return None


def check(wanted: dict[str, str], python: str, platform: list[str]) -> dict[str, str]:
    """pin -> "wheel FILE" | "sdist only FILE" | "missing", for each `name==version`: one pip
    resolve over all of them, again without each pin it finds no wheel for."""
    requirements = [f"{name}=={version}" for name, version in wanted.items()]
    wheels: dict[str, str] = {}
    while requirements:
        wheels, refused = dry_run(requirements, python, platform)
        if refused is None:
            break
        requirements = [r for r in requirements if normalise(r.split("==")[0]) !=
                        normalise(refused.split("==")[0])]
    answers = {}
    for name, version in wanted.items():
        if name in wheels:
            answers[f"{name}=={version}"] = f"wheel {wheels[name]}"
        else:
            sdist = sdist_of(name, version, python)
            answers[f"{name}=={version}"] = f"sdist only {sdist}" if sdist else "missing"
    return answers


def zerogpu_problems(wanted: dict[str, str], card: str, supported: dict) -> list[str]:
    """What ZeroGPU would refuse: a torch pin off its list, a torchvision that is not that
    torch's, a card Python it does not run. Empty when it runs all three."""
    problems = []
    torch, vision = wanted.get("torch"), wanted.get("torchvision")
    if torch not in supported["torch"]:
        problems.append(f"torch=={torch} is not one ZeroGPU installs "
                        f"({', '.join(supported['torch'])})")
    elif vision != supported["torchvision_of_torch"][torch]:
        problems.append(f"torchvision=={vision} does not match torch {torch} "
                        f"(torchvision {supported['torchvision_of_torch'][torch]})")
    if card not in supported["python"]:
        problems.append(f"the card's python_version {card} is not one ZeroGPU runs "
                        f"({', '.join(supported['python'])})")
    return problems


def report_zerogpu(wanted: dict[str, str]) -> bool:
    """Print the ZeroGPU check; True when ZeroGPU runs the pins."""
    supported = json.loads(ZEROGPU.read_text())
    problems = zerogpu_problems(wanted, card_python(), supported)
    for problem in problems:
        print(f"ZeroGPU: {problem}")
    if not problems:
        print(f"ZeroGPU: torch=={wanted['torch']}, torchvision=={wanted['torchvision']} and "
              f"Python {card_python()} are on its list ({', '.join(supported['torch'])})")
    print(f"  (list: {supported['source']}; read {supported['read_on']})")
    return not problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=None, help="default: the card's python_version")
    parser.add_argument("--glibc", type=int, default=GLIBC_MINOR,
                        help="the Space's glibc minor version (2.N); default %(default)s")
    args = parser.parse_args(argv)
    python = ".".join((args.python or card_python()).split(".")[:2])
    wanted = pins()
    runs_on_zerogpu = report_zerogpu(wanted)
    loose = unpinned(args.python or card_python())
    for problem in loose:
        print(f"pins: {problem}")
    if not loose:
        print("pins: every package requirements.txt installs is pinned to the version tested")
    runs_on_zerogpu = runs_on_zerogpu and not loose
    if not reachable():
        print(f"the package index ({index_url()}) cannot be reached: no pin's files checked")
        return UNREACHABLE if runs_on_zerogpu else 1
    cache = json.loads(CACHE.read_text()) if CACHE.is_file() else {}
    key = f"cp{python} glibc 2.{args.glibc} x86_64"
    known = cache.setdefault(key, {})
    todo = {n: v for n, v in wanted.items() if f"{n}=={v}" not in known}
    known.update(check(todo, python, platforms(args.glibc)))
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.write_text(json.dumps(cache, indent=1, sort_keys=True))
    answers = {f"{n}=={v}": known[f"{n}=={v}"] for n, v in sorted(wanted.items())}
    for pin, answer in answers.items():
        print(f"{pin:<45} {answer}")
    missing = [pin for pin, answer in answers.items() if answer == "missing"]
    sdists = [pin for pin, answer in answers.items() if answer.startswith("sdist")]
    print(f"\nPython {python}, Linux x86-64 (glibc 2.{args.glibc}): {len(answers)} pins, "
          f"{len(answers) - len(missing) - len(sdists)} wheels, {len(sdists)} sdist only "
          f"({', '.join(sdists) or 'none'}), {len(missing)} missing "
          f"({', '.join(missing) or 'none'}); {len(todo)} asked now, the rest cached")
    return 1 if missing or not runs_on_zerogpu else 0


if __name__ == "__main__":
    sys.exit(main())
