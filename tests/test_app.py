"""App tests: the real app in a subprocess on a local port, driven with gradio_client. The
run endpoint streams; every update is checked, in order."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from app_server import running_app
from gradio_client import Client, handle_file

from banana_space.prompts import DEFAULT_PROMPT

pytestmark = pytest.mark.app

# The order of the run endpoint's outputs (app.OUTPUTS).
STATUS, FRAME, STRIP, PLOT, TABLE, TEXT, ZIP, RUN_DIR = range(8)


@pytest.fixture(scope="module")
def app_url(tmp_path_factory) -> str:
    runs = tmp_path_factory.mktemp("app") / "runs"
    with running_app(runs) as url:
        yield url


def run_args(image: Path, steps: int, seed: int = 0, backend: str = "simulate") -> list:
    return [handle_file(str(image)), steps, DEFAULT_PROMPT, backend,
            ["brisque", "niqe", "piqe", "entropy"], [], seed, 1.0, "", 1.0, None, None, None,
            False]


def test_frames_stream_in_one_by_one_with_plot_and_table(app_url, photo_path) -> None:
    client = Client(app_url, verbose=False)
    steps = 5
    job = client.submit(*run_args(photo_path, steps), api_name="/run")
    job.result(timeout=300)
    updates = job.outputs()
    strip_sizes = [len(u[STRIP] or []) for u in updates]
    # Frames arrive one at a time: the strip starts empty and grows by exactly one to N+1.
    grown = [b - a for a, b in zip(strip_sizes, strip_sizes[1:], strict=False) if b != a]
    assert strip_sizes[0] == 0 and grown == [1] * (steps + 1)
    with_frames = [u for u in updates if u[STRIP]]
    for update in with_frames:
        assert update[PLOT] is not None and update[FRAME]
        metrics_in_table = {row[0] for row in update[TABLE]["data"]}
        assert {"brisque", "niqe", "piqe", "entropy", "psnr (reference)"} <= metrics_in_table
    final = updates[-1]
    assert "Completed" in final[STATUS]
    assert final[ZIP] and final[ZIP].endswith(".zip")

    # The run directory holds what the UI showed.
    run_dir = Path(final[RUN_DIR])
    assert len(list((run_dir / "frames").glob("step_*.png"))) == steps + 1
    with (run_dir / "verdict.csv").open(newline="") as handle:
        on_disk = {row["metric"]: row["detects"] for row in csv.DictReader(handle)}
    shown = {row[0].replace(" (reference)", ""): row[5] for row in final[TABLE]["data"]}
    words = {"yes": "✅ detects", "no": "❌ fooled", "undecided": "… undecided"}
    assert {m: words[v] for m, v in on_disk.items()} == shown


def test_bad_upload_gets_a_clear_message(app_url, tmp_path) -> None:
    fake = tmp_path / "photo.png"
    fake.write_text("this is text, not a PNG")
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match="not an image"):
        client.predict(*run_args(fake, 2), api_name="/run")


def test_reopen_a_past_run(app_url, photo_path) -> None:
    client = Client(app_url, verbose=False)
    final = client.predict(*run_args(photo_path, 1, seed=3), api_name="/run")
    run_id = Path(final[RUN_DIR]).name
    reopened = client.predict(run_id, False, api_name="/open")
    assert reopened[RUN_DIR] == final[RUN_DIR]
    assert len(reopened[STRIP]) == 2 and "Completed" in reopened[STATUS]
