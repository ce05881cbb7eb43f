"""Secrets from one definition (issue 42, item 5): `Option.secret` is the only list of secret
options. A backend whose secret option is called something other than `api_key` (a local
stand-in: the offline simulation behind a passphrase it checks at every step) keeps it out of
run.json, the zip, the CSVs and the log, and a resume that is given the key hands it back."""

from __future__ import annotations

from typing import Any

import pytest
from PIL import Image

from banana_space.backends import REGISTRY as BACKENDS
from banana_space.backends.base import BackendInfo, Edit, Entry, Option
from banana_space.backends.simulate import SimulateBackend
from banana_space.chain.runs import RunSpec, resume_run, start_run
from banana_space.chain.spec import keyed, secret_names
from banana_space.events import Finished, FrameScored
from banana_space.scores.pool import MetricPool
from banana_space.sources.images import load_image

PASSPHRASE = Option("passphrase", label="Your vault passphrase", secret=True, flag=False)
INFO = BackendInfo("vaulted", "Vaulted simulation", "the simulation, behind a passphrase",
                   needs_key=True, options=(PASSPHRASE,))
SECRET = "open-sesame-" + "9" * 20


class Vaulted:
    """The offline simulation, refusing to run without the passphrase it was made with."""

    info = INFO
    given: list[str | None] = []

    def __init__(self, passphrase: str | None = None) -> None:
        self.passphrase = passphrase
        self.given.append(passphrase)
        self.inner = SimulateBackend(strength=1.0)

    def unavailable_reason(self) -> str | None:
        return None if self.passphrase == SECRET else "needs a passphrase"

    def settings(self) -> dict[str, Any]:
        return self.inner.settings()

    def edit(self, image: Image.Image, prompt: str, *, seed: int, step: int, **extra: Any
             ) -> Edit:
        return self.inner.edit(image, prompt, seed=seed, step=step, **extra)


@pytest.fixture()
def vaulted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "vaulted", Entry(INFO, Vaulted))
    Vaulted.given.clear()


def test_a_secret_option_of_any_name_is_never_written_and_comes_back_on_resume(
        vaulted, photo, tmp_path, capfd) -> None:
    assert "passphrase" in secret_names()  # from Option.secret alone
    pool = MetricPool(device="cpu")
    spec = RunSpec.of_image(load_image_of(photo, tmp_path), 4, "vaulted",
                            backend_options={"passphrase": SECRET}, metrics=["entropy"])
    stop_after_two = _first_steps(start_run(spec, tmp_path / "runs", pool=pool), 2)
    run_dir = next(p for p in (tmp_path / "runs").iterdir())
    assert stop_after_two and not any(isinstance(e, Finished) and e.status == "completed"
                                      for e in stop_after_two)
    # Without the key the resumed backend cannot run: the key is not on disk to be found.
    with pytest.raises(Exception, match="needs a passphrase"):
        list(resume_run(run_dir, pool=pool))
    finished = [e for e in resume_run(run_dir, pool=pool, key=SECRET)
                if isinstance(e, Finished)]
    assert finished and finished[-1].status == "completed", finished
    assert Vaulted.given == [SECRET, None, SECRET]  # start, the keyless try, the resume
    written = b"".join(path.read_bytes() for path in run_dir.rglob("*") if path.is_file())
    assert SECRET.encode() not in written and b"passphrase" not in written
    logged = capfd.readouterr()
    assert SECRET not in logged.out + logged.err


def load_image_of(photo: Image.Image, tmp_path):
    path = tmp_path / "in.png"
    photo.resize((96, 64)).save(path)
    return load_image(path)


def _first_steps(events, steps: int):
    """The events up to the `steps`-th frame scored, then the run is closed (its reader went
    away: recorded as interrupted)."""
    seen = []
    for event in events:
        seen.append(event)
        if isinstance(event, FrameScored) and event.step >= steps:
            events.close()
            break
    return seen


def test_a_key_goes_to_every_secret_option_the_run_takes_whatever_its_name(vaulted) -> None:
    assert keyed("vaulted", [], SECRET) == ({"passphrase": SECRET}, {})
    assert keyed("simulate", ["judge_gemini"], SECRET) == ({}, {"api_key": SECRET})
    assert keyed("vaulted", [], "") == ({}, {})  # no key: nothing
