"""What a visitor wrote is shown as text, never as markup (issue 18, item 6; issue 22, item 7):
a failure reason made of a zip's member names, in the run's own status and in a shared link;
and a shared link opens whatever its frame value says. The view's pure text first, then the
real app over gradio_client and raw HTTP (`visitors.public_app`). Each test failed before its
fix."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from app_server import RUN_DIR, STATUS, run_inputs
from gradio_client import Client, handle_file
from markdown_it import MarkdownIt
from raw_api import call
from visitors import chain_args, client, noise, public_app, run_args, small

from banana_space.events import Finished
from banana_space.markup import escape_markdown
from banana_space.verdict.history import StepRow
from banana_space.view import RunView


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    with public_app(tmp_path_factory.mktemp("markup") / "runs") as app:
        yield app


def test_markup_a_visitor_controls_is_shown_as_text() -> None:
    hostile = ('<a href=http://x style=font-size:40px>Session expired</a>'
               '<img src=http://host/x.png> [click](http://evil) ![i](http://evil/i.png)')
    view = RunView(run_dir=Path("runs/20260101-000000-abcdef"))
    view.ended = Finished("failed", 2, f"failed at step 3: frame {hostile}.png: damaged")
    view.notices.append(("warning", f"skipped {hostile}.txt"))
    view.history.steps[1] = StepRow(1, model_text=hostile)  # what the generator said
    for text in (view.status(), view.model_text(), escape_markdown(hostile)):
        assert "<a" not in text and "<img" not in text
        assert "](http" not in text and "[click]" not in text  # no link but the run's own


@pytest.mark.app
def test_a_member_name_with_newlines_makes_no_markup_in_a_shared_link(app, photo,
                                                                       tmp_path) -> None:
    archive = tmp_path / "chain.zip"
    hostile = "\n# Session expired\n[log in](http://evil.example) http://evil.example www.x.example"
    with zipfile.ZipFile(archive, "w") as zipped:
        for index in range(4):
            data = io.BytesIO()
            photo.resize((64, 48)).rotate(index).save(data, format="PNG")
            payload = data.getvalue()[:200] if index == 2 else data.getvalue()
            zipped.writestr(f"{index}{hostile if index == 2 else ''}.png", payload)
    final = client(app, "10.0.7.1").predict(
        *run_inputs(handle_file(str(archive)), 10, prompt="replica", backend="replay",
                    metrics=["entropy"]), api_name="/run")
    assert "Failed" in final[STATUS]
    stored = json.loads((app["runs"] / final[RUN_DIR] / "run.json").read_text())["reason"]
    assert "\n" not in stored
    shown = call(app["url"], app["index"]["on_load"], [], query=f"?run={final[RUN_DIR]}")
    assert shown.success
    html = MarkdownIt("commonmark").enable("table").render(shown.data[STATUS])
    assert "<h1" not in html and "<a " not in html and "Session expired" in html
    # GFM also links bare addresses (the page's renderer does): none is left bare.
    assert "http://evil" not in shown.data[STATUS] and "www.x" not in shown.data[STATUS]


@pytest.mark.app
def test_a_failure_reason_from_member_names_is_escaped(app, photo, tmp_path) -> None:
    archive = tmp_path / "chain.zip"
    hostile = "<img src=http:__host_x.png>[click](http:__evil)"
    with zipfile.ZipFile(archive, "w") as zipped:
        for index in range(4):
            data = io.BytesIO()
            small(photo).rotate(index).save(data, format="PNG")
            payload = data.getvalue()[:200] if index == 2 else data.getvalue()
            zipped.writestr(f"{index}{hostile if index == 2 else ''}.png", payload)
    client = Client(app["url"], verbose=False)
    final = client.predict(*run_args(archive, 10, backend="replay"), api_name="/run")
    assert "Failed" in final[STATUS] and "step 2" in final[STATUS]
    assert "<img" not in final[STATUS] and "](http" not in final[STATUS]


@pytest.mark.app
def test_a_shared_link_with_any_frame_value_opens(app, tmp_path) -> None:
    image = noise(tmp_path / "f.png", 64, 48)
    run_id = json.loads(client(app, "10.0.10.1").predict(*chain_args(image, 2),
                                                         api_name="/run_chain"))["run"]
    for frame in ["%C2%B2", "9" * 5000, "-1", "1.5", "1"]:
        opened = call(app["url"], app["index"]["on_load"], [],
                      query=f"?run={run_id}&frame={frame}")
        assert opened.success, (frame[:10], opened.error)
