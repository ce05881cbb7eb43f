"""Chains on the Hugging Face hub, `hf://datasets/OWNER/NAME[/PATH]`, offline: the real
`huggingface_hub` client against `fake_hub.FakeHub`, pointed to by HF_ENDPOINT. conftest.py
sets HF_HUB_OFFLINE=1 for every test; these unset it for the fake hub only (a subprocess's
environment, or the client's module constant for the duration of one test)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chains import METRICS, noisy_chain
from fake_hub import FakeHub
from PIL import Image
from shard_data import parquet_shards, row_group_spans

from banana_space.files import png_bytes
from banana_space.sources.dispatch import open_frames
from banana_space.sources.images import BadImage

REPO = Path(__file__).resolve().parent.parent
DATASET = "kenantang/Banana100"
CARD = b"---\nlicense: cc-by-nc-sa-4.0\npretty_name: Banana100\n---\n# Banana100\n"



def _zip(frames: list[Image.Image]) -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i, frame in enumerate(frames):
            archive.writestr(f"{i}.png", png_bytes(frame))
    return buffer.getvalue()


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    """A layout the code was not told about: chains two levels down, one as a zip, plus
    files no chain needs (which must never be fetched)."""
    with Image.open(REPO / "assets" / "examples" / "chelsea.png") as photo:
        photo = photo.convert("RGB")
    dataset = {"README.md": CARD, "docs/overview.png": png_bytes(photo.resize((40, 30))),
               "paper/figures/unrelated.bin": b"\0" * 1000,
               "chains/zipped/loop.zip": _zip(noisy_chain(photo, 2))}
    dataset |= {f"chains/cat/step_{i}.png": png_bytes(frame)
                for i, frame in enumerate(noisy_chain(photo, 1))}
    return dataset


@pytest.fixture()
def hub(files, tmp_path):
    with FakeHub({DATASET: files}) as server:
        yield server


def _env(hub: FakeHub, tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home"),
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_HUB_OFFLINE")
    return env


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "banana_space", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def test_table_on_the_hub_fetches_only_the_chains_and_resumes_without_fetching(
        hub, files, tmp_path) -> None:
    env, out = _env(hub, tmp_path), tmp_path / "out"
    source = f"hf://datasets/{DATASET}/chains"
    done = _cli(env, "table", source, "--metrics", ",".join(METRICS), "--out", str(out),
                "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "found 2 chain(s)" in done.stdout
    chains = {f"{DATASET}/cat", f"{DATASET}/zipped/loop.zip"}
    with (out / "verdicts.csv").open() as handle:
        assert {row["chain"] for row in csv.DictReader(handle)} == chains
    # The chains' files, and the card for the report's licence line: nothing else.
    assert sorted(hub.fetched()) == sorted(["README.md", *(n for n in files
                                                           if n.startswith("chains/"))])
    assert "licence: CC BY-NC-SA 4.0" in (out / "report.html").read_text()
    fetched = len(hub.requests)
    again = _cli(env, "table", source, "--metrics", ",".join(METRICS), "--out", str(out))
    assert again.returncode == 0 and "2 chain(s) already scored" in again.stdout
    assert [r for r in hub.requests[fetched:] if "/resolve/" in r and "README" not in r] == []


def test_score_a_hub_chain_records_its_licence_and_credit(hub, tmp_path) -> None:
    run = tmp_path / "run"
    done = _cli(_env(hub, tmp_path), "score", f"hf://datasets/{DATASET}/chains/cat",
                "--metrics", "entropy", "--out", str(run))
    assert done.returncode == 0, done.stderr
    meta = json.loads((run / "run.json").read_text())
    assert meta["settings"]["backend_settings"]["source"] == f"hf://datasets/{DATASET}/chains/cat"
    assert any("licence: CC BY-NC-SA 4.0" in note and DATASET in note
               for note in meta["settings"]["input_notes"])
    assert len(list((run / "frames").glob("*.png"))) == 7


def test_hub_errors_are_one_clear_message(hub, monkeypatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(BadImage, match="could not read .*: the dataset does not exist, or it "
                                       "is private or gated"):
        open_frames("hf://datasets/nobody/nothing/chain")
    with pytest.raises(BadImage, match="is not a hub dataset path"):
        open_frames("hf://datasets/../etc/passwd")
    with pytest.raises(BadImage, match="no images under"):
        open_frames(f"hf://datasets/{DATASET}/paper")
    frames = open_frames(f"hf://datasets/{DATASET}/chains/zipped/loop.zip")
    assert len(frames) == 7 and "CC BY-NC-SA 4.0" in frames.notes[-1]


def test_offline_says_so(monkeypatch) -> None:
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(BadImage, match="could not read .*: this server is offline") as refused:
        open_frames(f"hf://datasets/{DATASET}/chains/cat")
    assert "HF_HUB_OFFLINE" not in str(refused.value)  # plain words, not the client's


@pytest.mark.app
def test_the_app_replays_a_hub_chain_and_shows_its_licence(hub, tmp_path) -> None:
    from app_server import STATUS, running_app
    from gradio_client import Client

    from banana_space.prompts import DEFAULT_PROMPT

    env = _env(hub, tmp_path)
    with running_app(tmp_path / "runs", HF_ENDPOINT=hub.url, HF_HUB_OFFLINE="0",
                     HF_HOME=env["HF_HOME"]) as url:
        client = Client(url, verbose=False)
        final = client.predict(f"hf://datasets/{DATASET}/chains/cat", 3, DEFAULT_PROMPT,
                               ["entropy"], [], 0, False, api_name="/replay_hub")
        assert "Completed" in final[STATUS]
        assert "licence: CC BY-NC-SA 4.0" in final[STATUS]
        with pytest.raises(Exception, match="hf://datasets/OWNER/NAME/PATH"):
            client.predict("/etc", 3, DEFAULT_PROMPT, ["entropy"], [], 0, False,
                           api_name="/replay_hub")


# ---- The same dataset stored as the hub usually stores images: parquet shards of rows ----

@pytest.fixture(scope="module")
def shard_chains() -> dict[str, list[Image.Image]]:
    with Image.open(REPO / "assets" / "examples" / "chelsea.png") as photo:
        photo = photo.convert("RGB")
    return {"cat": noisy_chain(photo, 1), "dog": noisy_chain(photo, 2)}


@pytest.fixture(scope="module")
def shard_files(shard_chains) -> dict[str, bytes]:
    """Two chains as rows of two parquet shards: `dog` straddles them."""
    return {"README.md": CARD, **parquet_shards(shard_chains)}


@pytest.fixture()
def shard_hub(shard_files, tmp_path, monkeypatch):
    """The parquet dataset on a fake hub, for the real client in this process."""
    import huggingface_hub.constants

    with FakeHub({DATASET: shard_files}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HOME", str(tmp_path / "hf-home"))
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE",
                            str(tmp_path / "hf-home" / "hub"))
        yield server


def _pixels(image: Image.Image) -> bytes:
    return image.convert("RGB").tobytes()


def test_replay_reads_a_chain_from_parquet_rows_by_range_only_where_its_frames_are(
        shard_hub, shard_files, shard_chains) -> None:
    frames = open_frames(f"hf://datasets/{DATASET}/cat")
    assert len(frames) == 7
    assert [_pixels(frames.frame(i).image) for i in range(7)] == [
        _pixels(f) for f in shard_chains["cat"]]
    assert "licence: CC BY-NC-SA 4.0" in frames.notes[-1]
    assert shard_hub.fetched() == ["README.md"]  # the shards were never downloaded whole
    # cat's rows all lie in the first shard: no image bytes of the second were transferred.
    second = sorted(name for name in shard_files if name.endswith(".parquet"))[1]
    spans = row_group_spans(shard_files[second])
    served = [(first, last) for name, first, last in shard_hub.ranges if name == second]
    assert served, "the second shard's paths must be read to know where cat's rows are"
    assert not [s for s in spans for first, last in served if first <= s[2] and last >= s[1]]
    # A second reading transfers no image bytes again: the rows were extracted to the cache.
    before = len(shard_hub.ranges)
    assert _pixels(open_frames(f"hf://datasets/{DATASET}/cat").frame(6).image) == _pixels(
        shard_chains["cat"][6])
    first = sorted(name for name in shard_files if name.endswith(".parquet"))[0]
    images = row_group_spans(shard_files[first])
    assert not [s for s in images for name, start, last in shard_hub.ranges[before:]
                if name == first and start <= s[2] and last >= s[1]]


def test_a_chain_straddling_two_shards_and_the_ways_to_name_one(shard_hub, shard_files,
                                                                shard_chains) -> None:
    dog = open_frames(f"hf://datasets/{DATASET}/data/dog")  # below the shards' folder
    assert [_pixels(dog.frame(i).image) for i in range(7)] == [
        _pixels(f) for f in shard_chains["dog"]]
    assert dog.names == [f"dog/{k}.png" for k in range(7)]  # each row by its path: its step
    images = {name for name, first, last in shard_hub.ranges  # image bytes from both shards
              for _, start, end in row_group_spans(shard_files[name])
              if first <= end and last >= start}
    assert images == {"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"}
    with pytest.raises(BadImage, match=r"holds 2 chains \(cat, dog\): add one's name"):
        open_frames(f"hf://datasets/{DATASET}")
    with pytest.raises(BadImage, match="no chain called .*/mouse in the shards' rows"):
        open_frames(f"hf://datasets/{DATASET}/mouse")


def test_score_replays_a_parquet_chain_losslessly(shard_hub, shard_chains, tmp_path) -> None:
    from banana_space.cli import main as cli

    run = tmp_path / "run"
    assert cli(["score", f"hf://datasets/{DATASET}/dog", "--metrics", "entropy",
                "--out", str(run)]) == 0
    saved = sorted((run / "frames").glob("step_*.png"))
    assert len(saved) == 7
    with Image.open(saved[6]) as last:
        assert _pixels(last) == _pixels(shard_chains["dog"][6])
    notes = json.loads((run / "run.json").read_text())["settings"]["input_notes"]
    assert any("licence: CC BY-NC-SA 4.0" in note for note in notes)


def test_table_reads_parquet_shards_on_the_hub(shard_files, tmp_path) -> None:
    with FakeHub({DATASET: shard_files}) as server:
        out = tmp_path / "out"
        done = _cli(_env(server, tmp_path), "table", f"hf://datasets/{DATASET}", "--metrics",
                    ",".join(METRICS), "--out", str(out), "--workers", "1")
        assert done.returncode == 0, done.stderr
        assert "found 2 chain(s) (2 rows): 14 frames" in done.stdout
        with (out / "verdicts.csv").open() as handle:
            assert {row["chain"] for row in csv.DictReader(handle)} == {
                f"{DATASET}/cat", f"{DATASET}/dog"}
        assert server.fetched() == ["README.md"]  # shards by range only, never whole
        assert "licence: CC BY-NC-SA 4.0" in (out / "report.html").read_text()


def test_a_hub_folder_is_read_by_its_names_and_refused_before_any_frame_is_fetched(
        tmp_path, monkeypatch) -> None:
    """The layout rules hold on the hub as on a local folder (`chain_layout.py`): copies
    numbered from 1 beside `input.png` are steps 1… after the input, with a gap kept; without
    the input, the listing alone refuses the chain, and nothing is downloaded."""
    import huggingface_hub.constants

    with Image.open(REPO / "assets" / "examples" / "chelsea.png") as photo:
        chain = noisy_chain(photo.convert("RGB"), 3)
    steps = (0, 1, 2, 3, 5, 6)
    files = {"README.md": CARD, "held/input.png": png_bytes(chain[0]),
             **{f"held/{k}.png": png_bytes(chain[k]) for k in steps[1:]},
             **{f"copies/{k}.png": png_bytes(chain[k]) for k in steps[1:]}}
    with FakeHub({DATASET: files}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HOME", str(tmp_path / "hf-home"))
        frames = open_frames(f"hf://datasets/{DATASET}/held")
        assert frames.steps == steps
        assert [_pixels(frames.frame(i).image) for i in range(len(steps))] == [
            _pixels(chain[k]) for k in steps]
        assert "no frame for step 4 (the names skip it): no score there" in frames.notes
        fetched = len(server.fetched())
        with pytest.raises(BadImage, match=f"hf://datasets/{DATASET}/copies: expected frames "
                                           "numbered from 0 .* found copies numbered from 1 "
                                           "and no input"):
            open_frames(f"hf://datasets/{DATASET}/copies")
        assert len(server.fetched()) == fetched
