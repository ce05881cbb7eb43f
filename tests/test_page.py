"""The page as a package: its settings read once, the Run form as the one list of /run's inputs,
the output contract, and a run's settings typed from the form to run.json and back."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from pathlib import Path

import gradio as gr
import pytest
from PIL import Image

from banana_space.backends import OPTIONS
from banana_space.backends import REGISTRY as BACKENDS
from banana_space.backends.base import BackendInfo, Option, options_of
from banana_space.chain.spec import RunSpec, from_settings, to_settings
from banana_space.cli import BACKEND_FLAGS
from banana_space.sources.images import load_image
from page.run_tab.form import FORM_OPTIONS, RunForm, field_names, form_event, inputs_of, spec_of
from page.run_tab.outputs import PageOutputs
from page.settings import Settings


def test_settings_are_read_once_from_the_environment_with_named_errors(tmp_path: Path) -> None:
    settings = Settings.from_env({"BANANA_RUNS_DIR": str(tmp_path), "BANANA_KEEP_GB": "0.2",
                                  "BANANA_KEEP_RUNS": "8", "SPACE_ID": "me/space"})
    assert settings.runs_root == tmp_path.resolve() and settings.keep_runs == 8
    assert settings.runs_per_visitor == 1  # a tenth of the runs kept, at least one
    assert settings.uploads_bytes == 50_000_000 and settings.previews_bytes == 2_000_000
    assert settings.hub_bytes == 20_000_000
    assert (settings.runs_bytes + settings.uploads_bytes + settings.previews_bytes
            + settings.hub_bytes) == 200_000_000
    assert settings.trust_proxy  # on a Space, the proxy names the visitor
    assert str(tmp_path.resolve()) not in str(Settings.from_env({}).uploads)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.keep_runs = 1  # type: ignore[misc]
    with pytest.raises(ValueError, match="BANANA_CHAINS_PER_VISITOR must be a whole number"):
        Settings.from_env({"BANANA_CHAINS_PER_VISITOR": "two"})


def test_every_page_setting_is_read_in_settings_only() -> None:
    page = Path(__file__).resolve().parent.parent / "page"
    reads = re.compile(r"""environ(?:\.get\(|\[)\s*["']BANANA_""")
    readers = sorted(path.name for path in page.glob("*.py")
                     if reads.search(path.read_text()) and path.name != "settings.py")
    assert reads.search((page / "settings.py").read_text()) is None  # it reads a mapping given
    assert readers == [], readers


def test_the_run_event_takes_the_forms_fields_in_order() -> None:
    import app

    demo = app.build()
    run = next(fn for fn in demo.fns.values() if fn.api_name == "run")
    # One input per field, named as the field is: the handler's signature says so to gradio.
    assert len(run.inputs) == len(field_names())
    names = list(inspect.signature(run.fn).parameters)
    assert names == [*field_names(), "request"]
    controls = {name: control for name, control in zip(field_names(), run.inputs, strict=True)}
    assert controls["upload"].elem_id == "upload" and controls["backend"].elem_id == "backend"
    assert controls["profile"].elem_id == "profile" and controls["steps"].elem_id == "steps"
    # Every output of a run is a PageOutputs field, in its order.
    assert [c.elem_id for c in run.outputs][:3] == ["status", "frame", "strip"]
    assert len(run.outputs) == len(PageOutputs._fields)

def test_no_html_component_keeps_a_template_prop_of_its_own() -> None:
    """Gradio 6.31's page drops an HTML component's own template props (`gr.HTML(...,
    animation="")`) on any update that does not name them, a gr.skip() included, and its
    template then fails in the browser ("animation is not defined"). So every HTML component
    of the page is drawn from its value alone."""
    import app

    demo = app.build()
    htmls = [block for block in demo.blocks.values() if isinstance(block, gr.HTML)]
    assert {"share", "compare-share", "animation"} <= {block.elem_id for block in htmls}
    assert {block.elem_id: block.props for block in htmls if block.props} == {}



def test_a_control_missing_from_the_form_or_left_over_stops_the_page() -> None:
    controls = {name: object() for name in field_names()}
    assert inputs_of(controls) == list(controls.values())
    with pytest.raises(ValueError, match="missing \\['seed'\\]"):
        inputs_of({k: v for k, v in controls.items() if k != "seed"})
    with pytest.raises(ValueError, match="not fields \\['colour'\\]"):
        inputs_of({**controls, "colour": object()})


def test_the_form_event_hands_the_handler_one_form_and_the_request() -> None:
    seen = []
    event = form_event(lambda form, request: seen.append((form, request)) or "ok")
    values = [f"value of {name}" for name in field_names()]
    assert event(*values, "the request") == "ok"
    form, request = seen[0]
    assert request == "the request" and form.upload == "value of upload"
    assert form.options["strength"] == "value of strength"
    assert form.key == "value of api_key"


def test_a_form_by_name_gives_run_its_inputs_and_reads_back_the_same() -> None:
    form = RunForm.named(upload="in.png", steps=3, api_key="k" * 20, strength=2.0)
    assert RunForm.from_values(form.inputs()) == form
    assert form.options["temperature"] == OPTIONS["temperature"].default  # left out: its start
    assert RunForm.named().options["api_key"] == ""  # a password box starts empty
    with pytest.raises(TypeError, match="colour"):
        RunForm.named(colour="green")


def test_backend_options_make_the_cli_flags_and_the_page_controls() -> None:
    every = {name for entry in BACKENDS.values() for name in entry.info.option_names}
    assert set(OPTIONS) == every
    # Flags: every option but a secret (keys come from the environment) and the internal ones.
    assert set(BACKEND_FLAGS) == {"strength", "profile", "temperature", "resolution",
                                  "guidance_scale", "num_inference_steps"}
    assert {o.name for o in FORM_OPTIONS} == set(BACKEND_FLAGS) | {"api_key"}
    assert not OPTIONS["api_key"].flag and OPTIONS["api_key"].secret
    # Two backends share an option only by sharing its one definition.
    clash = [BackendInfo("a", "A", "", options=(Option("x", float),)),
             BackendInfo("b", "B", "", options=(Option("x", int),))]
    with pytest.raises(ValueError, match="option 'x' of backend 'b'"):
        options_of(clash)


def test_the_form_becomes_a_typed_spec(tmp_path: Path) -> None:
    picture = tmp_path / "in.png"
    Image.new("RGB", (64, 48), "teal").save(picture)
    options = {o.name: o.default for o in FORM_OPTIONS} | {"strength": 2.5, "api_key": "k" * 20,
                                                           "num_inference_steps": 8.0}
    form = RunForm(str(picture), 3.0, "copy it", "simulate", ["entropy"], [], 7.0, False,
                   "every", options)
    spec = spec_of(form, str(picture))
    assert spec.steps == 3 and spec.seed == 7 and spec.image.size == (64, 48)
    # Only the options the chosen backend takes, each as its kind.
    assert spec.backend_options == {"strength": 2.5, "profile": OPTIONS["profile"].default}
    assert spec.judge_options == {"api_key": "k" * 20}
    flux = spec_of(dataclasses.replace(form, backend="flux2"), str(picture))
    assert flux.backend_options == {"num_inference_steps": 8}
    assert isinstance(flux.backend_options["num_inference_steps"], int)
    replay = spec_of(dataclasses.replace(form, backend="replay"), "hf://datasets/a/b/c")
    assert replay.image is None and replay.backend_options == {"source": "hf://datasets/a/b/c"}


def test_a_spec_goes_to_run_json_and_back_without_its_secret(tmp_path: Path) -> None:
    picture = tmp_path / "in.png"
    Image.new("RGB", (64, 48), "teal").save(picture)
    spec = RunSpec.of_image(load_image(picture), 4, "nano-banana-pro",
                            backend_options={"api_key": "secret-key-0123456789",
                                             "temperature": 0.5},
                            judges=["judge_gemini"],
                            judge_options={"api_key": "secret-key-0123456789"},
                            judge_at="checkpoints", seed=9, metrics=["piqe"])
    settings = to_settings(spec, steps=4, backend_settings={"model": "x"},
                           input_size=(64, 48), input_notes=[])
    assert "secret-key" not in repr(settings)
    back = from_settings(settings, key="another-key-0123456789")
    assert back.backend_options == {"temperature": 0.5, "api_key": "another-key-0123456789"}
    assert back.judge_options == {"api_key": "another-key-0123456789"}
    assert (back.steps, back.seed, list(back.metrics), list(back.judges), back.judge_at) == (
        4, 9, ["piqe"], ["judge_gemini"], "checkpoints")
    without = from_settings(settings)
    assert "api_key" not in without.backend_options and without.judge_options == {}


def test_a_link_goes_through_the_spaces_hub_page_on_a_space(tmp_path: Path, monkeypatch) -> None:
    """On a Space the app is a frame of its Hub page, whose query string reaches the app: the
    link to share is the Hub page's; elsewhere it is the app's own address."""
    from banana_space.store.run import Run
    from page import api
    from page.run_tab import outputs

    run = Run(tmp_path / "20260101-000000-abcdef")
    assert outputs.share_link(run, 3) == "?run=20260101-000000-abcdef&frame=3"
    monkeypatch.setattr(outputs, "SETTINGS", Settings.from_env({"SPACE_ID": "me/space"}))
    assert outputs.share_link(run, 3) == (
        "https://huggingface.co/spaces/me/space?run=20260101-000000-abcdef&frame=3")
    assert api.link(None, run.id) == (
        "https://huggingface.co/spaces/me/space?run=20260101-000000-abcdef")


def test_the_first_screen_shows_the_first_recording_of_the_damage_not_a_control() -> None:
    """The decay before any click (`first_look`): the damage a generator leaves, never the
    blur control; its input and its latest kept full frame, magnified where they differ; its
    headline; its curves short, each named by its verdict."""
    from banana_space.view import simulates_damage
    from page.run_tab.first_look import FIGURE_HEIGHT, PICTURE_HEIGHT, first_look
    from page.settings import RECORDED

    look = first_look()
    assert look is not None and look.name == "dunes-simulated-30"
    settings = json.loads((RECORDED / look.name / "run.json").read_text())["settings"]
    assert simulates_damage(settings) and "control" not in look.label
    assert "the input | step 30 |" in look.caption and look.picture.height == PICTURE_HEIGHT
    assert look.headline.startswith("**After 30 steps**, PSNR to the input fell ")
    assert len(look.headline.split()) <= 30
    assert look.figure["layout"]["height"] == FIGURE_HEIGHT
    names = [trace["name"] for trace in look.figure["data"]]
    assert names[0] == "psnr · reference" and "brisque · fooled" in names, names
    assert all(len(trace["y"]) == 31 for trace in look.figure["data"])


def test_past_runs_say_when_what_how_far_and_how_it_ended_newest_first(tmp_path: Path) -> None:
    from banana_space.store.run import runs_in
    from banana_space.store.runids import copy_in
    from page.run_tab.past import newest_first
    from page.settings import RECORDED

    older = copy_in(RECORDED / "dunes-blur-30", tmp_path)
    newer = copy_in(RECORDED / "moss-simulated-30", tmp_path)
    meta = json.loads(newer.meta_file.read_text())
    meta.update(started_at="2026-12-05T08:15:00+0100", status="stopped", last_step=12)
    newer.meta_file.write_text(json.dumps(meta))
    broken = tmp_path / "broken-run"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")
    listed = newest_first(runs_in(tmp_path))
    assert [run.id for run in listed] == [newer.id, older.id, "broken-run"]
    assert listed[0].caption == ("5 Dec 2026 07:15 UTC · Simulated (offline) (nano-banana-pro) "
                                 "· 12 of 30 steps · ⏹ stopped")
    assert listed[1].caption.endswith(" UTC · Simulated (offline) (blur) · 30 steps · "
                                      "✅ completed"), listed[1].caption
    assert listed[0].thumb.endswith("step_012.png") and Path(listed[0].thumb).is_file()
    assert listed[2].caption == "broken-run · its run.json cannot be read"
    assert listed[2].thumb is None


@pytest.mark.parametrize("space_id", [None, "me/banana"])
def test_a_space_offers_its_duplicate_and_a_local_page_says_where_sign_in_is(
        monkeypatch, space_id: str | None) -> None:
    """Without OAuth the sign-in button is absent, and the About panel says where it is
    offered; on a Space, gradio's Duplicate button (only there: it does nothing elsewhere)."""
    import gradio as gr

    import app
    from page.content import SIGN_IN_ON_A_SPACE
    from page.run_tab import tab
    from page.settings import SETTINGS

    monkeypatch.setattr(tab, "SETTINGS", dataclasses.replace(SETTINGS, space_id=space_id,
                                                             sign_in=False))
    blocks = list(app.build().blocks.values())
    duplicates = [b for b in blocks if isinstance(b, gr.DuplicateButton)]
    assert len(duplicates) == (1 if space_id else 0)
    assert not any(isinstance(b, gr.LoginButton) for b in blocks)
    about = next(b for b in blocks if getattr(b, "elem_id", None) == "about")
    assert about.value.endswith(SIGN_IN_ON_A_SPACE) and "hf_oauth: true" in about.value
