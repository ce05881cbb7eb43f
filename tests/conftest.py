"""Shared set-up for every test: offline, on real parts.

pyiqa reads its weights from $TORCH_HOME/hub/pyiqa. Before anything imports pyiqa, point
TORCH_HOME at a fresh temporary folder that the engine seeds from ../shared/weights (BRISQUE and
NIQE, checked against pyiqa's calibration values; see PROVENANCE.md there). Deep metrics find
no weights and no network, so they must be reported unavailable.

This folder is deliberately not a package: pyiqa's wheel installs a top-level `tests` package.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WEIGHTS = Path(os.environ.get("BANANA_WEIGHTS_DIR", REPO.parent / "shared" / "weights"))
EXAMPLES = REPO / "assets" / "examples"

_TORCH_HOME = tempfile.mkdtemp(prefix="banana-torch-home-")
os.environ["TORCH_HOME"] = _TORCH_HOME
os.environ["BANANA_WEIGHTS_DIR"] = str(WEIGHTS)
os.environ["HF_HUB_OFFLINE"] = "1"
for secret in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):  # tests bring their own fake keys
    os.environ.pop(secret, None)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_TORCH_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def weights_dir() -> Path:
    if not (WEIGHTS / "brisque_svm_weights.pth").is_file():
        pytest.fail(f"BRISQUE/NIQE weights not found in {WEIGHTS}: set BANANA_WEIGHTS_DIR")
    return WEIGHTS


@pytest.fixture()
def engine_env(monkeypatch: pytest.MonkeyPatch):
    """`engine_env(NAME=value, OTHER=None)`: the engine's settings for this test, read from
    this process's environment with these variables set (None: unset), as a process started
    with them would read them once (the engine reads its environment only at start)."""
    from banana_space import settings

    def use(**changes: str | None) -> None:
        env = {name: value for name, value in {**os.environ, **changes}.items()
               if value is not None}
        monkeypatch.setattr(settings, "SETTINGS", settings.EngineSettings.from_env(env))

    return use


@pytest.fixture()
def photo_path() -> Path:
    """A real photo (CC0, scikit-image's 'chelsea'), 451 x 300."""
    return EXAMPLES / "chelsea.png"


@pytest.fixture()
def photo(photo_path: Path):
    from PIL import Image

    with Image.open(photo_path) as image:
        return image.convert("RGB")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# Debian's Chromium (not Playwright's download), started as the machine's notes say: without the
# background-networking flags it keeps trying hosts this closed network refuses.
CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for a browser test module; in CI a missing Chromium fails, elsewhere
    it skips with how to install it. Per module, not per session: Playwright's sync API keeps an
    event loop running while it is open, and other tests (the MCP client) run their own."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.is_file():
        message = (f"{CHROMIUM} not found: install Debian's Chromium "
                   "(`apt-get install -y chromium`; scripts/test.sh does it as root)")
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                              args=LAUNCH_ARGS)
        yield launched
        launched.close()
