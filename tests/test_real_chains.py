"""Real chains first (`banana_space.chain.real_chains`): a Banana100-like dataset on a local
stand-in of the hub, in both layouts (loose files, parquet shards), read by the real
`huggingface_hub` client. Only the frames at the chosen steps are fetched, scored once and kept at
their true step numbers, with their licence; offline, nothing but one line in the log. The app then
lists the real chains first, and offline only the recordings, labelled "simulated"."""

from __future__ import annotations

import json
import logging
import math
import threading
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from chains import METRICS, noisy_chain
from fake_hub import COMMIT, FakeHub
from PIL import Image
from shard_data import parquet_shards

from banana_space.chain.offered import dataset_starts, examples
from banana_space.chain.real_chains import FOLDER, LABEL, Plan, prepare, start_preparing
from banana_space.files import png_bytes
from banana_space.markup import escape_markdown
from banana_space.store.run import Run
from banana_space.view import RunView

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / "assets" / "recorded"
DATASET = "kenantang/Banana100"
CARD = b"---\nlicense: cc-by-nc-sa-4.0\npretty_name: Banana100\n---\n# Banana100\n"
FRAMES = 21  # steps 0-20: the paper's checkpoints 5, 10 and 20 exist
SAMPLED = [0, 1, 2, 3, 5, 10, 20]  # the plan's steps that such a chain has


@pytest.fixture(scope="module")
def chains() -> dict[str, list[Image.Image]]:
    with Image.open(REPO / "assets" / "examples" / "chelsea.png") as photo:
        photo = photo.convert("RGB")
    return {"0001": noisy_chain(photo, 1, FRAMES), "0002": noisy_chain(photo, 2, FRAMES)}


def layout(kind: str, chains: dict[str, list[Image.Image]]) -> dict[str, bytes]:
    if kind == "files":
        return {"README.md": CARD, **{f"chains/{name}/{step}.png": png_bytes(frame)
                                      for name, frames in chains.items()
                                      for step, frame in enumerate(frames)}}
    return {"README.md": CARD, **parquet_shards(chains, rows_per_group=4)}


@pytest.fixture(params=["files", "parquet"])
def hub(request, chains, tmp_path, monkeypatch):
    import huggingface_hub.constants

    with FakeHub({DATASET: layout(request.param, chains)}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE",
                            str(tmp_path / "hf-home" / "hub"))
        server.kind = request.param
        yield server


def test_a_real_chain_is_fetched_at_its_steps_scored_once_and_listed_first(
        hub, chains, tmp_path) -> None:
    plan = Plan(chains=("not/on/the/hub",), count=1, metrics=tuple(METRICS))
    [run] = prepare(tmp_path / "runs", plan)  # the name does not match: the first chain found
    saved = Run(run).load()
    assert saved.last_step == 20
    assert sorted(int(p.stem[5:]) for p in (run / "frames").glob("step_*.png")) == SAMPLED
    with Image.open(run / "frames" / "step_010.png") as frame:
        assert frame.convert("RGB").tobytes() == chains["0001"][10].tobytes()
    # The steps keep their numbers: Δ10 is step 10's, and step 4 was never fetched.
    brisque = saved.history.scores["brisque"]
    assert [step for step, v in enumerate(brisque) if not math.isnan(v)] == SAMPLED
    assert saved.history.deltas("brisque")[10] == pytest.approx(brisque[1] - brisque[10])
    if hub.kind == "files":  # only the sampled frames were downloaded, and the card
        assert sorted(hub.fetched()) == sorted(
            ["README.md", *(f"chains/0001/{s}.png" for s in SAMPLED)])
    shown = examples(tmp_path / "runs", RECORDED)
    assert shown[0].real and shown[0].label.startswith(LABEL)
    assert "licence: CC BY-NC-SA 4.0" in shown[0].credit and DATASET in shown[0].credit
    assert [e.real for e in shown] == [True] + [False] * (len(shown) - 1)
    assert all("simulated" in e.label for e in shown[1:])
    requests = len(hub.requests)
    assert prepare(tmp_path / "runs", plan) == [run]  # cached: the hub is not asked again
    assert hub.requests[requests:] == []


def test_chains_named_in_the_plan_are_the_ones_prepared(hub, tmp_path) -> None:
    plan = Plan(chains=("0002",) if hub.kind == "parquet" else ("chains/0002",),
                metrics=("entropy",))
    [run] = prepare(tmp_path / "runs", plan)
    assert run.name.startswith("banana100-") and run.name.endswith("0002")


HELD_OUT = 31  # copies 1-30 and a start: the audit's held-out layout
HELD_OUT_SAMPLED = [0, 1, 2, 3, 5, 10, 20, 30]


@pytest.fixture(scope="module")
def held_out() -> dict[str, list[Image.Image]]:
    """Two chains from two different photos: index k is copy k, index 0 the start."""
    def opened(name: str) -> Image.Image:
        with Image.open(REPO / "assets" / "examples" / name) as photo:
            return photo.convert("RGB")

    return {"0001": noisy_chain(opened("chelsea.png"), 1, HELD_OUT),
            "0002": noisy_chain(opened("coffee.png"), 2, HELD_OUT)}


def one_based(chains: dict[str, list[Image.Image]], starts: bool = True) -> dict[str, bytes]:
    """The audit's held-out layout: each chain numbered `1.png … 30.png` (copies only), its
    start in a folder of its own named after the chain (`starts/0001.png`)."""
    files = {"README.md": CARD}
    for name, frames in chains.items():
        files.update({f"chains/{name}/{k}.png": png_bytes(frames[k])
                      for k in range(1, len(frames))})
        if starts:
            files[f"starts/{name}.png"] = png_bytes(frames[0])
    return files


@pytest.fixture()
def on_hub(tmp_path, monkeypatch):
    """`on_hub(files)`: the stand-in hub serving `files` as the dataset, for one test."""
    import contextlib

    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE",
                        str(tmp_path / "hf-home" / "hub"))
    with contextlib.ExitStack() as stack:
        def serve(files: dict[str, bytes]) -> FakeHub:
            server = stack.enter_context(FakeHub({DATASET: files}))
            monkeypatch.setenv("HF_ENDPOINT", server.url)
            return server

        yield serve


def frame_bytes(run: Path, step: int) -> bytes:
    with Image.open(run / "frames" / f"step_{step:03d}.png") as frame:
        return frame.convert("RGB").tobytes()


def test_a_chain_numbered_from_1_has_copy_k_at_step_k_and_its_start_found_by_name(
        on_hub, held_out, tmp_path, caplog) -> None:
    """The held-out layout (1-based, with a starts folder): copy k is step k, step 0 is the
    chain's own start, and the folder of starts is never taken for a chain."""
    files = one_based(held_out)
    # The dataset's own metadata (the hub's imagefolder convention) names 0001's model and
    # prompt, relative to its folder; it says nothing of 0002.
    files["chains/0001/metadata.jsonl"] = "\n".join(json.dumps(
        {"file_name": f"{k}.png", "model": "Editor X", "prompt": "replicate it"})
        for k in range(1, HELD_OUT)).encode()
    server = on_hub(files)
    with caplog.at_level(logging.INFO, logger="banana_space.chain.real_chains"):
        runs = prepare(tmp_path / "runs", Plan(count=3, metrics=("entropy",)))
    # Pinned: main is asked once which commit it is; every listing and file is read there.
    at_main = [r for r in server.requests if "/main" in r]
    assert at_main == [f"HEAD /datasets/{DATASET}/resolve/main/README.md"], at_main
    assert all(COMMIT in r for r in server.requests if r not in at_main)
    assert [run.name for run in runs] == ["banana100-chains-0001", "banana100-chains-0002"]
    assert "kenantang/Banana100/starts is not a chain (its files are named after other " \
        "chains: their starts)" in caplog.text
    for run, name in zip(runs, ("0001", "0002"), strict=True):
        saved = Run(run).load()
        assert saved.last_step == 30
        assert sorted(int(p.stem[5:]) for p in (run / "frames").glob("step_*.png")) == \
            HELD_OUT_SAMPLED
        for step in HELD_OUT_SAMPLED:  # copy k at step k; the start at step 0
            assert frame_bytes(run, step) == held_out[name][step].tobytes(), step
        # Fidelity is against the chain's own start: a measurement at step 1, not a cap.
        assert 20 < saved.history.scores["psnr"][1] < 60
        notes = saved.meta["settings"]["input_notes"]
        model = " (Editor X)" if name == "0001" else ""
        assert notes[0].startswith(f"Banana100 chain chains/{name}{model}: hf://datasets/"
                                   f"{DATASET}/chains/{name} at revision {COMMIT}; ")
        assert f"step 0 is its start starts/{name}.png, found by name" in notes[0]
        assert "Nano Banana" not in notes[0]
        assert saved.meta["settings"]["backend_settings"]["revision"] == COMMIT
        if name == "0001":
            assert notes[0].endswith("by the dataset's metadata, model: Editor X, prompt: "
                                     "'replicate it'")
            assert saved.meta["settings"]["prompt"] == "replicate it"
        else:
            assert notes[0].endswith("its model and its prompt the dataset does not name")
            assert saved.meta["settings"]["prompt"] == ""
    shown = [e for e in examples(tmp_path / "runs", RECORDED) if e.real]
    assert [e.label for e in shown] == ["Banana100 chain chains/0001 (Editor X) · steps 0–30",
                                        "Banana100 chain chains/0002 · steps 0–30"]
    # The dataset's own starts lead the page's example pictures, each with its licence.
    starts = dataset_starts(tmp_path / "runs")
    assert [start.caption for start in starts] == [
        "Banana100 start · chains/0001 (Editor X) · CC BY-NC-SA 4.0",
        "Banana100 start · chains/0002 · CC BY-NC-SA 4.0"]
    with Image.open(starts[1].image) as start:
        assert start.convert("RGB").tobytes() == held_out["0002"][0].tobytes()


def test_the_example_pictures_offer_the_datasets_starts_first(on_hub, held_out, tmp_path,
                                                              monkeypatch) -> None:
    import gradio as gr

    from page.run_tab import pictures as handlers

    on_hub(one_based(held_out))
    monkeypatch.setattr(handlers, "SETTINGS", replace(handlers.SETTINGS,
                                                      runs_root=tmp_path / "runs"))
    ours = {"photo-moss": "assets/examples/photo-moss.png"}
    assert handlers.example_gallery([("moss.jpg", "photo-moss")]) == [("moss.jpg", "photo-moss")]
    prepare(tmp_path / "runs", Plan(count=1, metrics=("entropy",)))
    [start] = dataset_starts(tmp_path / "runs")
    assert handlers.example_gallery([("moss.jpg", "photo-moss")]) == [
        (str(start.thumb), start.caption), ("moss.jpg", "photo-moss")]
    # A click is read by its caption (the order moved when the start arrived), else its place.
    assert handlers.picked_example(start.caption, 1, ours) == str(start.image)
    assert handlers.picked_example("photo-moss", 0, ours) == ours["photo-moss"]
    assert handlers.picked_example(None, 1, ours) == ours["photo-moss"]
    with pytest.raises(gr.Error, match="Pick one of the example pictures"):
        handlers.picked_example("../../etc/passwd", 0, ours)


def test_a_chain_numbered_from_1_without_a_start_has_no_step_0_and_says_so(
        on_hub, held_out, tmp_path) -> None:
    on_hub(one_based(held_out, starts=False))
    [run] = prepare(tmp_path / "runs", Plan(count=1, metrics=("entropy",)))
    saved = Run(run).load()
    assert not saved.run.has_frame(0) and saved.last_step == 30
    assert frame_bytes(run, 1) == held_out["0001"][1].tobytes()
    assert frame_bytes(run, 5) == held_out["0001"][5].tobytes()
    # Fidelity is measured from step 1: copy 1 against itself is no measurement.
    psnr = saved.history.scores["psnr"]
    assert math.isnan(psnr[0]) and math.isnan(psnr[1]) and 20 < psnr[2] < 60
    assert "it has no step 0, and fidelity (PSNR, SSIM) is measured from step 1" in \
        saved.meta["settings"]["input_notes"][0]
    [shown] = [e for e in examples(tmp_path / "runs", RECORDED) if e.real]
    assert shown.label == "Banana100 chain chains/0001 · steps 1–30"
    screen = RunView.from_saved(saved).screen()
    assert screen.first_frame is None and screen.strip[0] is None
    assert screen.strip[5] is not None and screen.strip[4] is None


def test_a_folder_whose_neighbours_are_not_copies_is_not_a_chain(on_hub, held_out, tmp_path,
                                                                 caplog) -> None:
    """Four unrelated photographs numbered 0-3 sort first; the log names the folder and the
    next chain is prepared in its place."""
    files = one_based(held_out)
    for step, name in enumerate(("chelsea.png", "coffee.png", "astronaut.png", "rocket.jpg")):
        with Image.open(REPO / "assets" / "examples" / name) as photo:
            files[f"a-gallery/{step}.png"] = png_bytes(photo.convert("RGB").resize((96, 64)))
    on_hub(files)
    with caplog.at_level(logging.WARNING, logger="banana_space.chain.real_chains"):
        [run] = prepare(tmp_path / "runs", Plan(count=1, metrics=("entropy",)))
    assert run.name == "banana100-chains-0001"
    [skipped] = [r.getMessage() for r in caplog.records if "a-gallery" in r.getMessage()]
    assert skipped.startswith(f"real chains: {DATASET}/a-gallery skipped (not a chain: "
                              "steps 0 and 1 are ") and "copies are more than 18 dB" in skipped


def test_offline_start_up_logs_one_line_and_prepares_nothing(tmp_path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="banana_space.chain.real_chains"):
        assert prepare(tmp_path / "runs", Plan(metrics=("entropy",))) == []
    assert len(caplog.records) == 1 and "not reachable" in caplog.records[0].getMessage()
    assert not (tmp_path / "runs").exists()  # nothing written
    shown = examples(tmp_path / "runs", RECORDED)
    assert shown and not any(e.real for e in shown)
    assert all("simulated" in e.label for e in shown)


class GatedHub(FakeHub):
    """The stand-in hub, answering nothing until `gate` is set: a sleeping Space's first
    minutes, while its real chains are still being fetched."""

    def __init__(self, datasets: dict[str, dict[str, bytes]]) -> None:
        super().__init__(datasets)
        self.gate = threading.Event()

    def answer(self, handler, with_body: bool) -> None:
        self.gate.wait()
        super().answer(handler, with_body)


def test_a_page_opened_while_the_chains_are_prepared_shows_them_when_they_are(
        chains, tmp_path, monkeypatch) -> None:
    """The page's timer calls `real_chains_tick` until the preparation ends: before the chains
    are ready it offers the recordings and keeps asking; after, the real chain and stops."""
    import huggingface_hub.constants

    from page.run_tab import pictures as handlers

    monkeypatch.setattr(handlers, "SETTINGS", replace(handlers.SETTINGS,
                                                      runs_root=tmp_path / "runs"))
    with GatedHub({DATASET: layout("files", chains)}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE",
                            str(tmp_path / "hf-home" / "hub"))
        preparation = start_preparing(tmp_path / "runs", Plan(count=1, metrics=("entropy",)))
        early = handlers.real_chains_tick()
        assert "**simulated**" in early[0] and not early[1]["visible"] and early[-1].active
        server.gate.set()
        preparation.join(timeout=600)
        assert not preparation.is_alive()
    ready = handlers.real_chains_tick()
    assert ready[0].startswith("**Real chains first**") and "simulations" in ready[0]
    assert ready[1]["visible"] and ready[1]["value"].startswith(LABEL)
    assert ready[-1].active is False  # nothing more will come: the page stops asking


def _config_labels(url: str) -> dict[str, str]:
    """The real-chain buttons' labels and the recorded-chain picker's, by "recorded-<name>"."""
    config = httpx.get(f"{url}config", timeout=30).json()
    labels = {c["props"].get("elem_id"): c["props"].get("value") for c in config["components"]
              if str(c["props"].get("elem_id", "")).startswith("real-chain-")}
    picker = next(c for c in config["components"] if c["props"].get("elem_id") == "recorded")
    labels.update({f"recorded-{name}": label for label, name in picker["props"]["choices"]})
    return labels


@pytest.mark.app
def test_the_app_offline_offers_the_recordings_marked_simulated(tmp_path) -> None:
    from app_server import running_app
    from raw_api import call, dependencies

    with running_app(tmp_path / "runs") as url:
        labels = _config_labels(url)
        recorded = {k: v for k, v in labels.items() if k.startswith("recorded-")}
        assert recorded and all("simulated" in v for v in recorded.values())
        shown = call(url, dependencies(url)["real_chains"], [])
        assert shown.success and "**simulated**" in shown.data[0]
        assert all(not update.get("visible", True) for update in shown.data[1:])


@pytest.mark.app
def test_the_app_online_lists_and_opens_a_real_chain_with_its_licence(chains,
                                                                       tmp_path) -> None:
    import time

    from app_server import STATUS, STRIP, running_app
    from raw_api import call, dependencies

    with FakeHub({DATASET: layout("parquet", chains)}) as server, running_app(
            tmp_path / "runs", HF_ENDPOINT=server.url, HF_HUB_OFFLINE="0",
            HF_HOME=str(tmp_path / "hf-home"), BANANA_REAL_CHAINS="0002") as url:
        index = dependencies(url)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # prepared in the background after start-up
            shown = call(url, index["real_chains_tick"], [])  # what the page's timer calls
            if shown.data[1].get("visible") and shown.data[-1].get("active") is False:
                break  # ready, and the page's timer is told to stop
            time.sleep(2)
        heading, first = shown.data[0], shown.data[1]
        assert first["visible"] and first["value"].startswith(LABEL) and "0002" in first["value"]
        assert "licence: CC BY-NC-SA 4.0" in heading and "simulations" in heading
        opened = call(url, index["real_chain_0"], [False])
        assert opened.success, opened.error
        assert "Completed" in opened.data[STATUS] and "step 20 of 20" in opened.data[STATUS]
        assert "licence: CC BY-NC-SA 4.0" in opened.data[STATUS]
        # The chain's source path in the dataset, and the commit it was read at, on the page.
        assert escape_markdown(f"hf://datasets/{DATASET}/0002 at revision {COMMIT}") in \
            opened.data[STATUS]
        strip = opened.data[STRIP]
        assert "step 20" in strip and ">4<" not in strip and ">5<" in strip
    # Opened with the downloads made where it was prepared: copied, not made again.
    [made] = [Run(p) for p in (tmp_path / "runs" / FOLDER).iterdir() if Run(p).exists()]
    copy = Run(tmp_path / "runs" / made.id)
    assert copy.zip_path.read_bytes() == made.zip_path.read_bytes()
    assert copy.animation_path.read_bytes() == made.animation_path.read_bytes()


def test_the_recordings_list_the_damage_first_and_the_controls_after_labelled(tmp_path) -> None:
    shown = examples(tmp_path / "runs", RECORDED)
    controls = ["simulated control" in example.label for example in shown]
    assert any(controls) and not all(controls) and controls == sorted(controls)
    assert "Dunes · simulated control (blur profile) · 30 steps" in [e.label for e in shown]
