"""One test over every entry of every registry, as pyiqa's general test runs over every metric
(the rulers' table has its own in test_rulers.py): each backend and judge takes the options it
declares, records no secret, and answers "can it run here?" without loading a model. And every
registry refuses a name registered twice."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from PIL import Image

from banana_space.backends import REGISTRY as BACKENDS
from banana_space.backends.simulate import DEFAULT_PROFILE
from banana_space.judges import REGISTRY as JUDGES
from banana_space.judges.gemini_judge import DEFAULT_MODEL as JUDGE_MODEL
from banana_space.registry import DuplicateName, unique_table

# A key-shaped secret (real Gemini keys are 39 characters, long enough to be scrubbed).
SECRET = "AIzaSyTEST-not-a-real-key-0123456789abc"
ENTRIES = [*(("backend", name, entry) for name, entry in BACKENDS.items()),
           *(("judge", name, entry) for name, entry in JUDGES.items())]
IDS = [f"{kind}:{name}" for kind, name, _ in ENTRIES]
# Heavy model libraries: asking whether an entry can run must import none of them.
MODEL_LIBRARIES = ("diffusers", "transformers", "google.genai", "pyiqa")


def declared_options(info: Any) -> tuple[str, ...]:
    """The option names an entry declares. Today `BackendInfo.options` and `JudgeInfo.options`
    are tuples of names; an option object with a `name` (typed options) reads the same."""
    return tuple(getattr(option, "name", option) for option in info.options)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """A two-frame chain for the replay backend's `source`."""
    folder = tmp_path_factory.mktemp("recording")
    for step in range(2):
        Image.new("RGB", (32, 24), (10 * step, 20, 30)).save(folder / f"step_{step:03d}.png")
    return folder


def sample_options(info: Any, recording: Path) -> dict[str, Any]:
    """A valid value for every option the entry declares (None: the entry's own default)."""
    samples: dict[str, Any] = {
        "strength": 1.0, "profile": DEFAULT_PROFILE, "source": str(recording),
        "api_key": SECRET, "temperature": 0.0, "resolution": None, "model": JUDGE_MODEL,
        "variant": None, "guidance_scale": 2.5, "num_inference_steps": 2}
    missing = [o for o in declared_options(info) if o not in samples]
    assert not missing, f"{info.name} declares {missing}: add a sample value to this test"
    return {option: samples[option] for option in declared_options(info)}


@pytest.mark.parametrize(("kind", "name", "entry"), ENTRIES, ids=IDS)
def test_every_entry_takes_its_options_and_records_no_secret(
        kind: str, name: str, entry: Any, recording: Path) -> None:
    assert entry.info.name == name
    options = sample_options(entry.info, recording)
    # The factory's signature names every declared option...
    inspect.signature(entry.create).bind_partial(**options)
    # ...and it builds with them, loading nothing (weights load on first use).
    made = entry.create(**options)
    assert made.info.name == name
    reason = made.unavailable_reason()
    assert reason is None or (reason.strip() and "\n" not in reason and SECRET not in reason)
    recorded = made.settings() if hasattr(made, "settings") else {}
    assert SECRET not in json.dumps(recorded, default=str)
    if "api_key" in options:
        assert "api_key" not in recorded


def test_asking_whether_entries_can_run_loads_no_model() -> None:
    """In a fresh process (this one may have imported anything), every entry's cheap check
    answers, offline and with no key, without importing a model library."""
    script = f"""
import json, sys
from banana_space.backends import REGISTRY as BACKENDS
from banana_space.judges import REGISTRY as JUDGES
answers = {{name: entry.unavailable_reason() for table in (BACKENDS, JUDGES)
           for name, entry in table.items()}}
print(json.dumps({{"answers": answers,
                  "loaded": [m for m in {MODEL_LIBRARIES!r} if m in sys.modules]}}))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["loaded"] == []
    assert set(said["answers"]) == {*BACKENDS, *JUDGES}
    for answer in said["answers"].values():
        assert answer is None or (answer.strip() and "\n" not in answer)
    # No key in the tests' environment: the keyed entries say how to get one.
    keyed = [n for n, e in {**BACKENDS, **JUDGES}.items() if e.info.needs_key]
    assert keyed and all("key" in said["answers"][n].lower() for n in keyed)


def test_a_registry_refuses_a_name_registered_twice() -> None:
    backend = next(iter(BACKENDS.values()))
    with pytest.raises(DuplicateName, match="two backends are registered as 'simulate'"):
        unique_table("backend", [*((n, e) for n, e in BACKENDS.items()), ("simulate", backend)])
    assert unique_table("judge", JUDGES.items()) == JUDGES
