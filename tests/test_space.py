"""Publishing the Space: the card's Python and the pins, binaries in LFS, `banana-space deploy`.

The deploy runs the real `huggingface_hub` client in a subprocess against `FakeHubWrite`
(HF_ENDPOINT, HF_HUB_DISABLE_XET=1 set before the client is imported). The pin check asks the
real package index (CI reaches it); it is skipped only when the index cannot be reached, and
says so.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import REPO
from fake_hub_write import BINARY_REFUSAL, FakeHubWrite, is_binary
from PIL import Image
from test_packaging import front_matter

from banana_space.deploy import space_files

SPACE = "banana-lab/banana-space"


def test_card_python_is_one_zerogpu_runs_and_pyproject_admits_it_and_the_tests_python() -> None:
    card = str(front_matter()["python_version"])
    # Public ZeroGPU Spaces declare 3.12.12; on 3.10 (the ZeroGPU page's) 7 pins do not exist.
    assert card.startswith("3.12"), card
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    from packaging.specifiers import SpecifierSet

    assert card in SpecifierSet(requires)
    assert "3.11.7" in SpecifierSet(requires), "the Python the tests run on must stay installable"
    assert re.search(r"tests ran on Python 3\.11\.7", (REPO / "docs" / "publishing.md").read_text())


def test_every_pin_has_a_distribution_for_the_cards_python() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    import check_pins

    if not check_pins.reachable():
        pytest.skip(f"the package index ({check_pins.index_url()}) cannot be reached from here: "
                    "the pins were NOT checked (CI checks them)")
    done = subprocess.run([sys.executable, REPO / "scripts" / "check_pins.py"],
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    python = ".".join(str(front_matter()["python_version"]).split(".")[:2])
    assert f"Python {python}," in done.stdout and " 0 missing" in done.stdout
    assert "ZeroGPU: torch==" in done.stdout and "are on its list" in done.stdout
    torch = check_pins.pins()["torch"]
    for pin in (f"torch=={torch}", "numpy==2.4.6", "google-genai==3.6.1", "spaces==0.51.3"):
        line = next(line for line in done.stdout.splitlines() if line.startswith(pin))
        assert " wheel " in line, line
        assert "py3-none-any" in line or f"cp{python.replace('.', '')}" in line, line


def test_the_torch_pin_is_one_zerogpu_installs_and_the_check_says_when_it_is_not() -> None:
    """ZeroGPU installs its own torch and fails the build of a Space pinning another; the
    check reads its list from data (with source and date) and needs no network."""
    sys.path.insert(0, str(REPO / "scripts"))
    import json

    import check_pins

    supported = json.loads(check_pins.ZEROGPU.read_text())
    assert "spaces-zerogpu.md" in supported["source"] and supported["read_on"]
    wanted = check_pins.pins()
    card = check_pins.card_python()
    assert check_pins.zerogpu_problems(wanted, card, supported) == []
    assert wanted["torch"] in supported["torch"]
    # The requirements the Space installs pin the same torch as the tests' constraints.
    requirements = (REPO / "requirements.txt").read_text()
    assert f"torch=={wanted['torch']}\n" in requirements
    import torch

    assert torch.__version__.split("+")[0] == wanted["torch"], "the tests run on another torch"
    off_list = {**wanted, "torch": "2.14.1", "torchvision": "0.29.1"}
    assert check_pins.zerogpu_problems(off_list, card, supported) == [
        "torch==2.14.1 is not one ZeroGPU installs (2.8.0, 2.9.1, 2.10.0, 2.11.0)"]
    mismatched = {**wanted, "torchvision": "0.29.1"}
    assert "does not match" in check_pins.zerogpu_problems(mismatched, card, supported)[0]
    assert "python_version 3.11.7" in check_pins.zerogpu_problems(wanted, "3.11.7", supported)[0]


def test_the_space_installs_every_package_at_the_version_the_tests_ran_on(monkeypatch,
                                                                        tmp_path) -> None:
    """The Space installs requirements.txt only: it applies constraints.txt, which is
    uploaded beside it, and every package it pulls in (for the card's Python on Linux) is
    pinned there to what is installed here. The check names what is not."""
    sys.path.insert(0, str(REPO / "scripts"))
    import check_pins

    card = check_pins.card_python()
    assert check_pins.unpinned(card) == []
    assert {"requirements.txt", "constraints.txt"} <= {f.path for f in space_files(REPO)}
    assert (REPO / "requirements.txt").read_text().count("\n-c constraints.txt\n") == 1
    pinned = check_pins.pins()
    assert {"yapf", "ruff", "tensorboard", "pytest"} <= set(pinned)  # pyiqa's, pinned too
    monkeypatch.setattr(check_pins, "pins", lambda: {
        **{name: version for name, version in pinned.items() if name != "yapf"},
        "tqdm": "0.0.1"})
    assert check_pins.unpinned(card) == ["tqdm==0.0.1 is pinned, 4.70.1 was tested",
                                         "yapf (for pyiqa) is not pinned"]
    monkeypatch.undo()
    (tmp_path / "requirements.txt").write_text("pillow==12.3.0\n")  # no -c: all would float
    (tmp_path / "constraints.txt").write_text((REPO / "constraints.txt").read_text())
    monkeypatch.setattr(check_pins, "REPO", tmp_path)
    assert check_pins.unpinned(card) == [
        "requirements.txt does not apply the constraints (no line `-c constraints.txt`)"]


def test_every_tracked_binary_travels_through_lfs() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=True).stdout.decode().split("\0")
    binaries = [name for name in tracked if name and (REPO / name).is_file()
                and is_binary((REPO / name).read_bytes()[:8000])]
    assert len(binaries) > 100  # the examples, recordings and screenshots
    attributes = subprocess.run(["git", "check-attr", "filter", "--", *binaries], cwd=REPO,
                                capture_output=True, text=True, check=True).stdout
    outside = [line for line in attributes.splitlines() if not line.endswith(": filter: lfs")]
    assert not outside, outside
    assert "*.parquet filter=lfs" in (REPO / ".gitattributes").read_text()


def test_space_files_take_the_app_and_leave_venv_runs_caches_and_secrets(tmp_path: Path) -> None:
    for name in ("app.py", "page/run_tab/handlers.py", "README.md", "LICENSE", "requirements.txt",
                 "docs/licences.md", "docs/calibration/granular.md",
                 ".gitattributes", "banana_space/chain/loop.py", "banana_space/judges/base.py",
                 "assets/recorded/dunes/run.json", "docs/screenshots/wide.png",
                 "docs/screenshots/shown.png", "docs/smoothness_runs/a/run.json",
                 "docs/detection_runs/b/verdict.csv", "docs/detection_runs/verdicts.csv",
                 "docs/leaderboard/leaderboard.csv", "docs/leaderboard/chains/suite--a.png",
                 "docs/leaderboard/table/moss/verdict.csv",
                 ".env", ".venv/lib/x.py", "runs/abc/run.json", "tests/test_x.py",
                 "bench/load.py", "scripts/setup.sh", "banana_space/__pycache__/chain.pyc",
                 ".pytest_cache/v", "assets/.DS_Store", "constraints.txt", "notes.txt",
                 "requirements-test.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "README.md").write_text(
        "![shown](docs/screenshots/shown.png) [the table](docs/detection_runs/verdicts.csv)"
        " [licences](docs/licences.md#terms) [paper](https://arxiv.org/abs/2604.03400)\n")
    assert [f.path for f in space_files(tmp_path)] == [
        ".gitattributes", "LICENSE", "README.md", "app.py", "assets/recorded/dunes/run.json",
        "banana_space/chain/loop.py", "banana_space/judges/base.py", "constraints.txt",
        "docs/calibration/granular.md", "docs/detection_runs/verdicts.csv",
        "docs/leaderboard/chains/suite--a.png", "docs/leaderboard/leaderboard.csv",
        "docs/licences.md", "docs/screenshots/shown.png",
        "page/run_tab/handlers.py", "requirements.txt"]


def test_the_space_gets_what_the_card_links_and_the_app_reads_and_no_run_archives() -> None:
    """From this checkout: every file the card links or shows and every result the
    Leaderboard tab reads ships; the run archives and the screenshots the card does not show
    stay home."""
    from page.leaderboard_tab import CARDS, RESULTS

    shipped = {f.path for f in space_files(REPO)}
    card = (REPO / "README.md").read_text()
    linked = {target for target in re.findall(r"\]\(([^)#]+)", card)
              if (REPO / target).is_file()}
    assert "docs/screenshots/mid-run.png" in linked and linked <= shipped
    read = [*RESULTS.glob("*.csv"), *CARDS.iterdir()]
    assert len(read) > 10 and {p.relative_to(REPO).as_posix() for p in read} <= shipped
    stay = [p for p in shipped if p.startswith(("docs/smoothness_runs/", "docs/leaderboard/table/"))
            or p.startswith("docs/detection_runs/") and p not in linked
            or p.startswith("docs/screenshots/") and p not in linked]
    assert stay == []


def _deploy(hub_url: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "HF_ENDPOINT": hub_url, "HF_HUB_DISABLE_XET": "1",
                   "HF_HUB_DISABLE_TELEMETRY": "1", "HF_TOKEN": "hf_fake_token_for_tests_0001",
                   **env}
    environment.pop("HF_HUB_OFFLINE", None)
    return subprocess.run([sys.executable, "-m", "banana_space", "deploy", SPACE, "--source",
                           str(REPO), *args], capture_output=True, text=True, env=environment,
                          timeout=600)


def test_dry_run_lists_the_files_with_sizes_and_sends_nothing() -> None:
    with FakeHubWrite() as hub:
        done = _deploy(hub.url, "--dry-run", "--hardware", "zero-a10g", "--secrets")
    assert done.returncode == 0, done.stderr
    assert hub.requests == []
    listed = re.findall(r"^\s*[\d.]+ [KM]?B\s+(\S+)$", done.stdout, re.MULTILINE)
    expected = space_files(REPO)
    assert listed == [f.path for f in expected]
    assert "app.py" in listed and "banana_space/deploy.py" in listed
    assert not any(p.startswith(("tests/", ".venv/", "runs/", "bench/")) for p in listed)
    assert f"{len(expected)} files" in done.stdout
    assert "zero-a10g" in done.stdout and "HF_TOKEN" in done.stdout
    assert "hf_fake_token_for_tests_0001" not in done.stdout + done.stderr


def test_deploy_publishes_the_space_binaries_in_lfs_and_secrets_unprinted() -> None:
    gemini = "gm-fake-key-for-the-deploy-test-42"
    with FakeHubWrite() as hub:
        done = _deploy(hub.url, "--hardware", "zero-a10g", "--secrets", GEMINI_API_KEY=gemini)
        drawn = dict(hub.secrets.get(SPACE, {})).get("BANANA_OWNER_KEY")
        # Files an older checkout published, gone from this one (handlers.py moved to page/).
        hub.spaces[SPACE] |= {"handlers.py": b"old", "old/mcp_tools.py": b"old"}
        again = _deploy(hub.url)  # an existing Space: updated, not an error
    assert done.returncode == 0, done.stdout + done.stderr
    assert again.returncode == 0, again.stdout + again.stderr
    asked = hub.repos[f"space/{SPACE}"]
    assert (asked["type"], asked["sdk"]) == ("space", "gradio")
    published = hub.spaces[SPACE]
    expected = space_files(REPO)
    assert set(published) == {f.path for f in expected}  # the old files are gone
    assert hub.commits[-1]["deleted"] == ["handlers.py", "old/mcp_tools.py"]
    assert ".gitattributes" in published
    for file in expected:
        assert published[file.path] == (REPO / file.path).read_bytes(), file.path
    first = hub.commits[0]
    binaries = {p for p in published if is_binary(published[p])}
    assert binaries and set(first["lfs"]) == binaries  # every binary went through LFS
    assert hub.hardware[SPACE] == "zero-a10g"
    owner_key = hub.secrets[SPACE].pop("BANANA_OWNER_KEY")  # drawn for the new Space, kept
    assert owner_key == drawn and re.fullmatch(r"[0-9a-f]{64}", owner_key)
    assert hub.secrets[SPACE] == {"GEMINI_API_KEY": gemini,
                                  "HF_TOKEN": "hf_fake_token_for_tests_0001"}
    for output in (done.stdout + done.stderr, again.stdout + again.stderr):
        assert gemini not in output and "hf_fake_token_for_tests_0001" not in output
        assert owner_key not in output
    assert f"spaces/{SPACE}" in done.stdout


def test_deploy_asks_for_zerogpu_by_default_and_mounts_the_runs_bucket() -> None:
    """With no --hardware a new Space asks for ZeroGPU, the one hardware a free account may
    use (2026); --bucket creates a private bucket, mounts it read-write and puts the runs in
    it. A second deploy finds both there, and an explicit --hardware is asked for."""
    with FakeHubWrite() as hub:
        done = _deploy(hub.url, "--bucket", "banana-runs")
        again = _deploy(hub.url, "--bucket", "banana-lab/banana-runs", "--hardware", "cpu-basic")
    assert done.returncode == 0, done.stdout + done.stderr
    assert again.returncode == 0, again.stdout + again.stderr
    assert hub.repos[f"space/{SPACE}"]["hardware"] == "zero-a10g"
    assert "up to 2 Gradio Spaces on ZeroGPU" in done.stdout and "--flavor zero-a10g" in done.stdout
    assert "cpu-basic and every other hardware need a PRO or Team plan" in done.stdout
    assert hub.hardware[SPACE] == "cpu-basic"  # asked by name: the existing Space moves
    assert hub.buckets == {"banana-lab/banana-runs": {"visibility": "private"}}
    assert hub.volumes[SPACE] == [{"type": "bucket", "source": "banana-lab/banana-runs",
                                   "mountPath": "/data", "readOnly": False}]
    assert hub.variables[SPACE] == {"BANANA_RUNS_DIR": "/data/runs"}
    assert "runs on the bucket banana-lab/banana-runs mounted at /data" in done.stdout


@pytest.mark.parametrize("secret", ["GEMINI_API_KEY", "BANANA_OWNER_KEY"])
def test_deploy_refuses_a_checkout_holding_a_secret(tmp_path: Path, secret: str) -> None:
    source = tmp_path / "checkout"
    source.mkdir()
    (source / "app.py").write_text("KEY = 'gm-leaked-key-value-123456'\n")
    environment = {**os.environ, secret: "gm-leaked-key-value-123456"}
    with FakeHubWrite() as hub:
        environment["HF_ENDPOINT"] = hub.url
        done = subprocess.run([sys.executable, "-m", "banana_space", "deploy", SPACE,
                               "--source", str(source)], capture_output=True, text=True,
                              env=environment, cwd=REPO, timeout=300)
    assert done.returncode == 1
    assert f"app.py holds the value of {secret}" in done.stdout
    assert "gm-leaked-key-value-123456" not in done.stdout + done.stderr
    assert hub.spaces == {}


def test_the_stand_in_refuses_a_binary_sent_as_a_regular_file(monkeypatch) -> None:
    import huggingface_hub
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)  # LFS here
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "green").save(buffer, format="PNG")
    with FakeHubWrite() as hub:
        api = HfApi(endpoint=hub.url, token="hf_fake")
        api.create_repo(SPACE, repo_type="space", space_sdk="gradio")
        forced = CommitOperationAdd("picture.png", buffer.getvalue())
        forced._upload_mode = "regular"  # what a client that skips preupload would send
        with pytest.raises(HfHubHTTPError, match="contains binary files"):
            api.create_commit(SPACE, [forced], commit_message="x", repo_type="space")
        assert hub.spaces[SPACE] == {}
        # Asked properly, the same picture goes through LFS and is accepted.
        api.create_commit(SPACE, [CommitOperationAdd("picture.png", buffer.getvalue())],
                          commit_message="y", repo_type="space")
    assert hub.commits[-1]["lfs"] == ["picture.png"]
    assert BINARY_REFUSAL.startswith("Your push was rejected")
