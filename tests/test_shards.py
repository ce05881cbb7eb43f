"""Image datasets stored as parquet/arrow shards (`banana_space.sources.shards`), read from a local
folder: rows found as chains by their paths (even across shards), replayed pixel for pixel,
scored by `table`, and the limits that keep a hostile shard from exhausting memory."""

from __future__ import annotations

import csv
import io
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chains import METRICS, noisy_chain
from PIL import Image
from shard_data import IMAGE, parquet_shards

import banana_space.sources.shards
from banana_space.cli import main as cli
from banana_space.files import png_bytes
from banana_space.sources.discover import find_chains_in
from banana_space.sources.dispatch import open_frames
from banana_space.sources.images import BadImage

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def chains() -> dict[str, list[Image.Image]]:
    with Image.open(REPO / "assets" / "examples" / "chelsea.png") as photo:
        photo = photo.convert("RGB")
    return {"cat": noisy_chain(photo, 1), "dog": noisy_chain(photo, 2)}


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


@pytest.fixture(scope="module")
def dataset(chains, tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("shards") / "Banana100", parquet_shards(chains))


def _pixels(image: Image.Image) -> bytes:
    return image.convert("RGB").tobytes()


def test_rows_are_found_as_chains_by_their_paths(dataset) -> None:
    refs = find_chains_in(str(dataset))
    assert [(r.name, r.kind, len(r.files)) for r in refs] == [
        ("Banana100/cat", "rows", 7), ("Banana100/dog", "rows", 7)]
    assert {f.split("#")[0] for f in refs[1].files} == {  # dog straddles the two shards
        "data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"}


def test_replay_names_a_chain_in_the_rows_and_gets_every_pixel(dataset, chains) -> None:
    frames = open_frames(dataset / "dog")
    assert [_pixels(frames.frame(i).image) for i in range(len(frames))] == [
        _pixels(f) for f in chains["dog"]]
    with pytest.raises(BadImage, match=r"holds 2 chains \(cat, dog\)"):
        open_frames(dataset)
    with pytest.raises(BadImage, match="no chain called Banana100/mouse"):
        open_frames(dataset / "mouse")


@pytest.mark.parametrize("writer", [pa.ipc.new_stream, pa.ipc.new_file])
def test_an_arrow_shard_as_datasets_saves_it(writer, chains, tmp_path) -> None:
    """`datasets.save_to_disk` writes arrow IPC streams; bare file names make one chain."""
    rows = [{"bytes": png_bytes(frame), "path": f"{step}.png"}
            for step, frame in enumerate(chains["cat"])]
    table = pa.table({"image": pa.array(rows, IMAGE)})
    path = tmp_path / "data-00000-of-00001.arrow"
    with pa.OSFile(str(path), "wb") as sink, writer(sink, table.schema) as out:
        out.write_table(table, max_chunksize=2)
    frames = open_frames(path)
    assert frames.label == path.name and len(frames) == 7
    assert _pixels(frames.frame(6).image) == _pixels(chains["cat"][6])


def test_table_scores_chains_in_local_shards(dataset, tmp_path) -> None:
    out = tmp_path / "out"
    assert cli(["table", str(dataset), "--metrics", ",".join(METRICS), "--out", str(out)]) == 0
    with (out / "verdicts.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {row["chain"] for row in rows} == {"Banana100/cat", "Banana100/dog"}


def test_a_footer_that_declares_too_much_is_refused_before_it_is_read(tmp_path) -> None:
    path = tmp_path / "evil.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 100 + struct.pack("<I4s", 2**31, b"PAR1"))
    with pytest.raises(BadImage, match="footer declares 2,147,483,648 bytes"):
        open_frames(path)
    path.write_bytes(b"PAR1" + b"\0" * 100)
    with pytest.raises(BadImage, match="not a parquet file"):
        open_frames(path)


def test_a_row_group_too_large_to_read_at_once_is_refused(chains, tmp_path,
                                                          monkeypatch) -> None:
    monkeypatch.setattr(banana_space.sources.shards, "MAX_ROW_GROUP_BYTES", 1000)
    fresh = _write(tmp_path / "fresh", parquet_shards(chains))  # nothing extracted yet
    with pytest.raises(BadImage, match="row group 0 holds .* of images; at most"):
        open_frames(fresh / "cat")


def test_an_image_row_over_the_size_limit_is_refused(chains, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(banana_space.sources.shards, "MAX_MEMBER_BYTES", 1000)
    rows = [{"bytes": png_bytes(frame), "path": f"c/{step}.png"}
            for step, frame in enumerate(chains["cat"][:2])]
    buffer = io.BytesIO()
    pq.write_table(pa.table({"image": pa.array(rows, IMAGE)}), buffer)
    (tmp_path / "one.parquet").write_bytes(buffer.getvalue())
    with pytest.raises(BadImage, match=r"one.parquet#0 is .*; the limit per image is"):
        open_frames(tmp_path / "one.parquet")
