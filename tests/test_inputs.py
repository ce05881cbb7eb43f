"""Every kind of upload a public Space gets: each is used (with what was changed said out loud)
or refused with a clear reason, never a traceback."""

from __future__ import annotations

import io
import struct
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hostile_files import many_frame_gif, many_page_tiff
from PIL import Image

from banana_space.chain.runs import RunSpec, start_run
from banana_space.cli import main as cli
from banana_space.events import FrameScored, Notice
from banana_space.sources.images import MAX_SIDE, BadImage, load_image


def png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims `width x height` pixels: a decompression bomb."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def encoded(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


@pytest.fixture()
def gradient() -> Image.Image:
    x = np.linspace(0, 255, 64, dtype=np.uint8)
    return Image.fromarray(np.stack([np.tile(x, (48, 1))] * 3, axis=-1))


@pytest.mark.parametrize(("data", "reason"), [
    (b"hello, I am text", "not an image"),
    (b"", "empty"),
    (png_declaring(50_000, 50_000), "64 megapixels"),
    (png_declaring(9_000, 9_000), "9000 x 9000"),
])
def test_refused_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(BadImage, match=reason):
        load_image(data)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_file_is_refused(photo, fmt: str) -> None:
    data = encoded(photo, fmt)
    with pytest.raises(BadImage, match="damaged or truncated|not an image"):
        load_image(data[: len(data) // 2])


@pytest.mark.parametrize("size", [(1, 1), (7, 7)])
def test_tiny_images_are_refused_with_the_minimum(size: tuple[int, int]) -> None:
    with pytest.raises(BadImage, match="at least 8 x 8"):
        load_image(encoded(Image.new("RGB", size), "PNG"))


def test_huge_jpeg_is_downscaled_with_the_limit_stated(photo) -> None:
    big = photo.resize((6000, 4000))
    loaded = load_image(encoded(big, "JPEG", quality=80))
    assert max(loaded.image.size) == MAX_SIDE
    assert any(f"limit {MAX_SIDE} px" in note for note in loaded.notes)


def test_rgba_is_flattened_on_white_and_says_so() -> None:
    clear = Image.new("RGBA", (16, 16), (255, 0, 0, 0))
    loaded = load_image(encoded(clear, "PNG"))
    assert loaded.image.mode == "RGB" and loaded.image.getpixel((3, 3)) == (255, 255, 255)
    assert any("white" in note for note in loaded.notes)


@pytest.mark.parametrize("mode", ["LA", "L", "CMYK", "I;16", "P"])
def test_every_mode_becomes_8_bit_rgb(gradient, mode: str) -> None:
    image = gradient.convert("L").convert(mode) if mode == "LA" else gradient.convert(mode)
    if mode == "I;16":  # a real 16-bit ramp, not 8-bit values in a 16-bit container
        image = Image.fromarray(np.asarray(gradient.convert("L"), np.uint16) * 257)
    fmt = "JPEG" if mode == "CMYK" else "PNG"
    loaded = load_image(encoded(image, fmt))
    assert loaded.image.mode == "RGB" and loaded.image.size == gradient.size
    left, middle, right = (loaded.image.getpixel((x, 10))[0] for x in (0, 32, 63))
    assert left < 20 and 100 < middle < 160 and right > 235  # the ramp survived, not clipped


def test_palette_with_transparency_is_flattened() -> None:
    image = Image.new("P", (16, 16), 0)
    image.putpalette([0, 0, 0, 200, 0, 0] + [0] * 762)
    image.info["transparency"] = 0
    loaded = load_image(encoded(image, "PNG", transparency=0))
    assert loaded.image.getpixel((1, 1)) == (255, 255, 255)


def test_exif_rotated_jpeg_is_scored_upright(gradient) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to view"
    loaded = load_image(encoded(gradient, "JPEG", exif=exif.tobytes()))
    assert loaded.image.size == (48, 64)  # width and height swapped: upright
    assert any("EXIF" in note for note in loaded.notes)


def test_animated_gif_as_input_uses_frame_0_and_says_so() -> None:
    frames = [Image.new("RGB", (16, 16), (v, v, v)) for v in (30, 200)]
    data = io.BytesIO()
    frames[0].save(data, format="GIF", save_all=True, append_images=frames[1:])
    loaded = load_image(data.getvalue())
    assert loaded.image.getpixel((2, 2))[0] == 30
    assert any("frame 0 of 2" in note for note in loaded.notes)


# A failure bound, not a speed: counting past the cap reads 1,001 page headers (~1 ms on the
# shared VM; bench/page_counting.py measures it), and Pillow's own count of these files took
# 9.6 CPU s (the TIFF) here. The issue asks for an answer within 1.5 CPU s.
PAGE_COUNT_CPU_S = 1.5


@pytest.mark.parametrize("data", [many_page_tiff(32_000), many_frame_gif(200_000)],
                         ids=["tiff-32000-pages", "gif-200000-frames"])
def test_a_file_of_many_pages_is_refused_from_its_structure(data: bytes) -> None:
    started = time.process_time()
    with pytest.raises(BadImage, match="more than 1000 pages or frames"):
        load_image(data)
    assert time.process_time() - started < PAGE_COUNT_CPU_S


@pytest.mark.parametrize("fmt", ["GIF", "TIFF"])
def test_pages_within_the_cap_are_counted_as_pillow_counts_them(gradient, fmt: str) -> None:
    pages = [gradient.point(lambda v, shift=shift: (v + shift) % 256) for shift in range(0, 70, 10)]
    buffer = io.BytesIO()
    pages[0].save(buffer, format=fmt, save_all=True, append_images=pages[1:])
    assert any("frame 0 of 7" in note for note in load_image(buffer.getvalue()).notes)
    assert "frame 0 of 1000" in " ".join(load_image(many_page_tiff(1000)).notes)


def test_extreme_aspect_ratio_runs_and_marks_failing_metrics_missing(tmp_path) -> None:
    noise = np.random.default_rng(1).integers(0, 255, (16, 4000, 3), np.uint8)
    loaded = load_image(encoded(Image.fromarray(noise), "PNG"))
    assert loaded.image.size == (MAX_SIDE, 8)
    events = list(start_run(RunSpec(loaded.image, 1, metrics=["niqe", "entropy"]), tmp_path))
    assert events[-1].status == "completed"
    frames = [e for e in events if isinstance(e, FrameScored)]
    assert all(np.isfinite(f.scores["entropy"]) for f in frames)
    # NIQE needs 96-px patches: an 8-px-high frame is a missing cell with a warning, each step.
    assert all(np.isnan(f.scores["niqe"]) for f in frames)
    warned = {e.step for e in events if isinstance(e, Notice) and "niqe failed" in e.message}
    assert warned == {0, 1}


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_replay_zip_with_junk_nested_folders_mixed_sizes_and_zip_slip(photo, tmp_path) -> None:
    small = photo.resize((120, 80))
    archive = _zip(tmp_path / "chain.zip", {
        "run/frames/0.png": encoded(small, "PNG"),
        "run/frames/1.png": encoded(small.resize((100, 100)), "PNG"),  # aspect changed
        "../../escaped.png": encoded(small, "PNG"),  # zip-slip: must never be written
        "run/readme.txt": b"not a frame",
        "run/frames/2.png": encoded(small.rotate(1), "PNG"),
    })
    runs = tmp_path / "runs"
    events = list(start_run(RunSpec(None, 100, "replay", {"source": str(archive)},
                                    metrics=["entropy"]), runs))
    assert events[-1].status == "completed"
    notices = " ".join(e.message for e in events if isinstance(e, Notice))
    assert "non-image" in notices and "readme.txt" in notices
    assert "resized to the input's size for fidelity" in notices
    written = {p.resolve() for p in tmp_path.rglob("*")}
    assert not any(p.name == "escaped.png" for p in written)
    assert not (tmp_path.parent / "escaped.png").exists()
    assert all(str(p).startswith(str(tmp_path.resolve())) for p in written)


@pytest.mark.parametrize(("args", "message"), [
    (["--steps", "0"], "between 1 and 100"),
    (["--steps", "10000"], "between 1 and 100"),
    (["--backend", "nope"], "valid backends: simulate, replay"),
    (["--metrics", "brisque,nope"], "valid no-reference metrics"),
    (["--temperature", "0.5"], "takes no option"),
])
def test_cli_out_of_range_settings_list_what_is_valid(photo_path, tmp_path, capsys, args,
                                                      message) -> None:
    assert cli(["run", str(photo_path), "--out", str(tmp_path / "x"), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
