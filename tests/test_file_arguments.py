"""A file argument is a file the visitor sent (issue 22, items 1, 5 and 12): never a folder,
another visitor's upload named by its server path, nor a URL for the server to fetch; and no
answer, stored setting or failure reason names a server path (issue 18). Through raw HTTP on
gradio's upload and queue routes and gradio_client, on the app as a Space runs it
(`visitors.public_app`). Each test failed before its fix."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path

import pytest
from gradio_client import Client, handle_file
from raw_api import call
from visitors import client, file_data, join, noise, public_app, run_args, run_ids, upload

from banana_space.events import Started

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    with public_app(tmp_path_factory.mktemp("file-arguments") / "runs") as app:
        yield app


def test_a_folder_or_a_named_server_path_is_no_file_argument(app, tmp_path) -> None:
    victim = upload(app, noise(tmp_path / "victims-photo.png", 64, 48), "10.0.1.1").json()[0]
    preview = call(app["url"], app["index"]["preview"], [file_data(victim)])
    assert preview.success and (app["runs"] / ".previews").is_dir()
    before = run_ids(app["runs"])
    for folder in (str(Path(victim).parent.parent), str(Path(victim).parent),
                   str(app["runs"] / ".previews")):
        answer_ = call(app["url"], app["index"]["score_chain"], [file_data(folder), "", ""])
        assert not answer_.success, folder
        assert "file you sent" in answer_.error or "folder" in answer_.error
        assert "/tmp" not in answer_.error and str(app["runs"]) not in answer_.error
    assert run_ids(app["runs"]) == before  # nobody's photo became a frame of a public run


def test_a_url_as_a_file_argument_is_refused_before_anything_is_fetched(app) -> None:
    """gradio never fetches a URL given as a file; page/door/url_inputs.py fetches https URLs to a
    public host (tests/test_url_inputs.py) and refuses any other before connecting."""
    url = "http://127.0.0.1:9/chain.zip"
    refused = join(app, "score_chain", [{"path": url, "url": url, "meta": {
        "_type": "gradio.FileData"}}, "", ""], "10.0.5.3")
    assert refused.status_code == 400 and "an upload or an https URL (not http URL)" in \
        refused.text
    for url in ("https://127.0.0.1:9/photo.png", "https://169.254.169.254/latest/meta-data",
                "https://[::1]:9/photo.png", "https://10.0.0.7/photo.png"):
        refused = join(app, "run_chain", [{"path": url, "url": url, "meta": {
            "_type": "gradio.FileData"}}, 1, "simulate", "entropy", 0, "", ""], "10.0.5.3")
        assert refused.status_code == 400 and "private, loopback or link-local" in \
            refused.text, url


def test_a_replay_run_names_no_server_path(app, photo, tmp_path) -> None:
    archive = tmp_path / "chain.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for index in range(3):
            data = io.BytesIO()
            photo.resize((64, 48)).rotate(index * 5).save(data, format="PNG")
            zipped.writestr(f"{index}.png", data.getvalue())
    verdict = json.loads(client(app, "10.0.1.2").predict(
        handle_file(str(archive)), "entropy", "", api_name="/score_chain"))
    run = app["runs"] / verdict["run"]
    stored = (run / "run.json").read_text()
    assert json.loads(stored)["settings"]["backend_options"] == {"source": "chain.zip"}
    with zipfile.ZipFile(run / f"banana-{run.name}.zip") as zipped:
        zipped_meta = zipped.read(f"{run.name}/run.json").decode()
    for text in (stored, zipped_meta):
        assert tempfile.gettempdir() not in text and str(app["runs"]) not in text


def test_a_stored_failure_reason_names_no_server_path(app, photo, tmp_path) -> None:
    from banana_space.chain.runs import RunSpec, start_run

    folder = tmp_path / "frames"
    folder.mkdir()
    for index in range(4):
        photo.resize((64, 48)).rotate(index).save(folder / f"step_{index:03d}.png")
    events = start_run(RunSpec(None, 10, "replay", {"source": str(folder)},
                               metrics=["entropy"]), app["runs"])
    for event in events:
        if isinstance(event, Started):
            run_id = event.run_dir.name
            (folder / "step_002.png").unlink()  # gone before the replay reads it
    opened = json.loads(client(app, "10.0.12.1").predict(run_id, api_name="/open_run"))
    assert opened["status"] == "failed" and "step_002.png" in opened["reason"]
    assert str(tmp_path) not in opened["reason"] and "/" not in opened["reason"]


def test_errors_quote_no_server_path(app, tmp_path) -> None:
    notes = tmp_path / "notes.png"
    notes.write_text("not an image")
    recording = tmp_path / "frames.zip"
    recording.write_text("not a recording")
    client = Client(app["url"], verbose=False)
    for path, backend in [(notes, "simulate"), (recording, "replay")]:
        with pytest.raises(Exception) as refused:
            client.predict(*run_args(path, 2, backend=backend), api_name="/run")
        assert path.name in str(refused.value) and "/tmp/" not in str(refused.value)
