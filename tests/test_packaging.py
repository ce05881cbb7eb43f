"""Shipping: the Space card matches the code's model tables, and `pip install .` gives a working
`banana-space` command.

The card (README front matter) is what the Hub reads: `models` links the Space to every
checkpoint it can load, `preload_from_hub` bakes the default editor's and judges' weights into
the image. Both are checked against the tables in the code, in both directions, so they never
drift. The install test builds the package from this checkout into a fresh venv with
`--no-deps` (offline), and lends it this venv's dependencies through a `.pth` file; the set-up
test runs scripts/setup.sh on a copy of the checkout the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from PIL import Image

from banana_space.backends.diffusers_edit import MODELS, VARIANTS
from banana_space.judges.qrealign import REPO_ID as CPU_JUDGE_REPO
from banana_space.judges.visualquality_r1 import REPO_ID as JUDGE_REPO


def front_matter() -> dict:
    text = (REPO / "README.md").read_text()
    assert text.startswith("---\n"), "README.md must open with the Space card's front matter"
    return yaml.safe_load(text.split("---\n", 2)[1])


def code_models() -> set[str]:
    """Every Hub checkpoint the code can load: the open editors' table and the judges."""
    return {model.repo_id for model in MODELS.values()} | {JUDGE_REPO, CPU_JUDGE_REPO}


def test_card_lists_exactly_the_models_the_code_loads() -> None:
    card = front_matter()
    assert set(card["models"]) == code_models()
    assert len(card["models"]) == len(set(card["models"])), "a model is listed twice"


def test_card_preloads_the_default_open_editor_and_the_judges() -> None:
    card = front_matter()
    preload = {entry.split()[0] for entry in card["preload_from_hub"]}
    default_editor = MODELS[next(iter(VARIANTS["flux2"].values()))].repo_id
    assert preload == {default_editor, JUDGE_REPO, CPU_JUDGE_REPO}
    assert preload <= set(card["models"])


def test_card_names_licence_dataset_tags_and_hardware() -> None:
    card = front_matter()
    assert card["license"] == "apache-2.0"  # the code's own; docs/licences.md has the rest
    assert (REPO / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert card["datasets"] == ["kenantang/Banana100"]
    assert {"image-quality-assessment", "mcp-server"} <= set(card["tags"])
    assert card["suggested_hardware"] == "zero-a10g"
    assert card["app_file"] == "app.py" and card["sdk"] == "gradio"


def test_the_licences_page_has_the_table_and_the_page_links_to_it() -> None:
    licences = (REPO / "docs" / "licences.md").read_text()
    for thing in ("PolyForm Noncommercial", "CC BY-NC-SA 4.0", "FLUX.1 [dev] Non-Commercial"):
        assert thing in licences, thing
    assert "#licences-and-terms" in (REPO / "page" / "content.py").read_text()


NON_COMMERCIAL = ("**for non-commercial use**, because every metric comes from pyiqa "
                  "(PolyForm Noncommercial 1.0.0 and NTU S-Lab License 1.0)")


def test_the_card_and_the_page_say_the_same_about_non_commercial_use() -> None:
    """The card's `license: apache-2.0` is the code's; near its top the card says, in the
    page footer's words, that the Space as a whole is for non-commercial use."""
    from page.content import FOOTER as footer

    card = (REPO / "README.md").read_text().split("---\n", 2)[2]
    near_top = " ".join(card[:card.index("## Start the app")].split())
    assert NON_COMMERCIAL in footer and NON_COMMERCIAL in near_top
    assert NON_COMMERCIAL in " ".join(card[card.index("## Licences and terms"):].split())


def test_the_licence_table_is_read_from_every_installed_wheel() -> None:
    """docs/licences.md's package table is what scripts/licences.py reads from each wheel the
    Space installs (metadata and shipped licence files): current, and right where a hand-typed
    table was wrong (pyiqa's second licence, tqdm's two, mcp and pyarrow missing)."""
    done = subprocess.run([sys.executable, REPO / "scripts" / "licences.py", "--check"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    text = (REPO / "docs" / "licences.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in text.split("<!-- packages")[1]
            .splitlines() if line.startswith("| ")}
    assert "LICENSE-S-Lab (S-Lab License 1.0)" in rows["pyiqa"]
    assert rows["pyiqa"].endswith("**non-commercial** (LICENSE, LICENSE-S-Lab) |")
    assert "| MPL-2.0 AND MIT |" in rows["tqdm"] and "| MIT |" in rows["mcp"]
    assert "| Apache-2.0 |" in rows["pyarrow"] and "torch" in rows and "gradio" in rows
    limited = [name for name, line in rows.items() if "**non-commercial**" in line]
    assert limited == ["pyiqa"]


def lending_venv(target: Path) -> Path:
    """A fresh venv at `target` whose dependencies (pip included) come from the test venv
    through a .pth file; its python."""
    venv.create(target, with_pip=False)
    python = target / "bin" / "python"
    purelib = subprocess.check_output(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True)
    Path(purelib.strip(), "lend-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def copy_package(source: Path, *extra: str) -> None:
    """What the package is made of, and `extra` files, copied to `source`: setuptools writes
    build/ and *.egg-info beside the sources, and the checkout is no place for them."""
    for name in ("pyproject.toml", "README.md", "LICENSE", *extra):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "banana_space", source / "banana_space",
                    ignore=shutil.ignore_patterns("__pycache__"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with this checkout installed as a package (no network, no build
    isolation)."""
    target = tmp_path_factory.mktemp("install") / "venv"
    python = lending_venv(target)
    source = tmp_path_factory.mktemp("source")
    copy_package(source)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", str(source)],
                   check=True, cwd=source, env={**os.environ, "PIP_NO_INPUT": "1"})
    return target


def test_pip_install_gives_the_banana_space_command(installed: Path, tmp_path: Path) -> None:
    command = installed / "bin" / "banana-space"
    assert command.is_file()
    shown = subprocess.run([command, "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: banana-space ")
    for subcommand in ("run", "score", "resume"):
        assert subcommand in shown.stdout
    # The command runs the installed copy, not this checkout.
    where = subprocess.check_output(
        [installed / "bin" / "python", "-c", "import banana_space; print(banana_space.__file__)"],
        text=True, cwd=tmp_path)
    assert not where.startswith(str(REPO)), where


def test_the_readme_set_up_puts_an_editable_banana_space_command_in_the_venv(
        tmp_path: Path) -> None:
    """scripts/setup.sh (which start.sh and test.sh run first) installs the checkout itself
    into .venv, editable: .venv/bin/banana-space works from any folder and runs the checkout's
    code as it stands. The requirements are lent and the index is off, so the set-up's pip
    steps run for real, offline."""
    checkout = tmp_path / "checkout"
    copy_package(checkout, "scripts/setup.sh", "requirements.txt", "constraints.txt")
    lending_venv(checkout / ".venv")
    setup = ["bash", str(checkout / "scripts" / "setup.sh")]
    offline = {**os.environ, "PIP_NO_INDEX": "1", "PYTHONPATH": ""}
    done = subprocess.run(setup, capture_output=True, text=True, env=offline, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = checkout / ".venv" / "bin" / "banana-space"
    assert command.is_file(), "the set-up left no banana-space command in .venv/bin"
    shown = subprocess.run([command, "--help"],
                           capture_output=True, text=True, cwd=elsewhere, env=offline)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: banana-space ")
    where = subprocess.check_output(
        [checkout / ".venv" / "bin" / "python", "-c",
         "import banana_space; print(banana_space.__file__)"], text=True, cwd=elsewhere,
        env=offline)
    assert Path(where.strip()) == checkout / "banana_space" / "__init__.py"
    again = subprocess.run(setup, capture_output=True, text=True, env=offline, timeout=600)
    assert again.returncode == 0 and again.stdout + again.stderr == "", "set-up is not a no-op"


def test_installed_command_scores_a_tiny_chain(installed: Path, tmp_path: Path) -> None:
    frames = tmp_path / "frames"
    frames.mkdir()
    base = Image.linear_gradient("L").resize((64, 64)).convert("RGB")
    for step in range(3):
        base.point(lambda v, s=step: min(255, v + 9 * s)).save(frames / f"{step}.png")
    scored = subprocess.run(
        [installed / "bin" / "banana-space", "score", str(frames), "--metrics", "piqe",
         "--out", str(tmp_path / "scored")], capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ""}, timeout=600)
    assert scored.returncode == 0, scored.stderr[-2000:]
    assert (tmp_path / "scored" / "verdict.csv").read_text().splitlines()[0].startswith("metric")
    assert "piqe" in scored.stdout


def test_extras_exist_and_every_pin_matches_the_constraints() -> None:
    """`pip install .[gpu|ray|mcp|test]` resolve to what the Space and CI install."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert {"gpu", "ray", "mcp", "test"} <= set(project["optional-dependencies"])
    def normal(name: str) -> str:
        return name.split("[")[0].strip().lower().replace("_", "-")

    lines = [line.split("#")[0].strip() for file in ("constraints.txt", "requirements.txt")
             for line in (REPO / file).read_text().splitlines()]
    pinned = {normal(line.split("==")[0]): line.split("==")[1].strip()
              for line in lines if "==" in line}
    wanted = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values()
                                          for d in extra)]
    for requirement in wanted:
        name, version = requirement.split("==")
        assert pinned.get(normal(name)) == version.strip(), (requirement, pinned.get(normal(name)))
