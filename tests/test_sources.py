"""Sources of frames (`banana_space.sources.dispatch`): every kind of source read by its layout
(held-out layouts at their true step numbers, unrelated pictures and unreadable names refused in
one line, an animation's and a run's own order kept, a gap kept through `score`), and the safety
checks that keep a hostile file from exhausting memory (issue 18, item 2): a zip bomb is refused
from its directory before anything is inflated, an animated image from its header before any
frame is decoded, and each frame under the upload pixel limit. Memory is bounded by a
subprocess's peak RSS, never by a time."""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
from chains import noisy_chain
from PIL import Image

from banana_space.files import png_bytes
from banana_space.sources.chain_layout import EXPECTED
from banana_space.sources.dispatch import open_frames
from banana_space.sources.frames import (
    MAX_MEMBER_BYTES,
    MAX_RATIO,
    MAX_ZIP_BYTES,
    check_zip,
    natural_key,
)
from banana_space.sources.images import MAX_DECLARED_PIXELS, BadImage

REPO = Path(__file__).resolve().parent.parent
BOMB_BYTES = 2 * 2**30  # zeros in one member: what the 2.6 MB upload held
# A CLI that imports torch and pyiqa peaks near 1 GB here; inflating the bomb adds 2 GB.
RSS_BOUND_MB = 1536



def _frames(photo: Image.Image, count: int) -> list[Image.Image]:
    small = photo.resize((64, 48))
    return [small.rotate(3 * i) for i in range(count)]


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """A real frame, then a member of 2 GiB of zeros, written by streaming (never in memory)."""
    path = tmp_path_factory.mktemp("bomb") / "chain.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("step_0.png", (REPO / "assets" / "examples" / "chelsea.png").read_bytes())
        chunk = bytes(2**20)
        with archive.open("step_1.png", "w", force_zip64=True) as member:
            for _ in range(BOMB_BYTES // len(chunk)):
                member.write(chunk)
    assert path.stat().st_size < 5 * 2**20
    return path


def _gif_header_bomb(path: Path, side: int = 13_000, frames: int = 2) -> Path:
    """An animated GIF that declares side x side pixels in a few hundred bytes: its header
    and image descriptors are real, its pixel data a stub that is never reached."""
    data = b"GIF89a" + struct.pack("<HHBBB", side, side, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
    data += b"!\xff\x0bNETSCAPE2.0\x03\x01\0\0\0"  # loop forever: an animation
    for _ in range(frames):
        data += b"!\xf9\x04\x04\x0a\0\0\0"  # 0.1 s per frame
        data += b"," + struct.pack("<HHHHB", 0, 0, side, side, 0) + b"\x02\x02\x4c\x01\0"
    path.write_bytes(data + b";")
    return path


def test_a_folder_sorts_naturally_and_says_what_it_skipped(photo, tmp_path) -> None:
    for i, frame in enumerate(_frames(photo, 11)):
        frame.save(tmp_path / f"step_{i}.png")
    (tmp_path / "notes.txt").write_text("not a frame")
    (tmp_path / ".DS_Store").write_bytes(b"junk")
    frames = open_frames(tmp_path)
    assert frames.names == [f"step_{i}.png" for i in range(11)]
    assert frames.notes == ["skipped 1 non-image file(s): notes.txt"]
    assert frames.frame(10).image.tobytes() == _frames(photo, 11)[10].tobytes()
    assert sorted(["b10", "b2", "a"], key=natural_key) == ["a", "b2", "b10"]


def test_a_run_directory_gives_its_frames_not_its_thumbnails(photo, tmp_path) -> None:
    run = tmp_path / "run"
    (run / "frames").mkdir(parents=True)
    (run / ".thumbs").mkdir()
    (run / "run.json").write_text(json.dumps({"format": 1}))
    for i, frame in enumerate(_frames(photo, 3)):
        frame.save(run / "frames" / f"step_{i:03d}.png")
        frame.resize((8, 8)).save(run / ".thumbs" / f".step_{i:03d}.png")
    frames = open_frames(run)
    assert frames.names == [f"frames/step_{i:03d}.png" for i in range(3)]
    assert frames.frame(2).image.size == (64, 48)


def test_zip_and_animated_gif_give_the_same_frames(photo, tmp_path) -> None:
    originals = _frames(photo, 4)
    archive = tmp_path / "chain.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for i, frame in enumerate(originals):
            zipped.writestr(f"chain/{i}.png", png_bytes(frame))
    gif = tmp_path / "chain.gif"
    originals[0].save(gif, save_all=True, append_images=originals[1:], duration=100)
    from_zip, from_gif = open_frames(archive), open_frames(gif)
    assert len(from_zip) == len(from_gif) == 4
    assert from_zip.frame(3).image.tobytes() == originals[3].tobytes()
    assert from_gif.frame(3).image.size == (64, 48)


@pytest.mark.parametrize(("file_size", "compress_size", "message"), [
    (MAX_MEMBER_BYTES + 1, MAX_MEMBER_BYTES, "limit per file"),
    (MAX_MEMBER_BYTES // 2, MAX_MEMBER_BYTES // (4 * MAX_RATIO), "a zip bomb?"),
])
def test_check_zip_refuses_from_declared_sizes(file_size, compress_size, message) -> None:
    member = zipfile.ZipInfo("step_1.png")
    member.file_size, member.compress_size = file_size, compress_size
    with pytest.raises(BadImage, match=message):
        check_zip([member], "chain.zip")


def test_check_zip_refuses_a_large_total_and_accepts_honest_frames() -> None:
    members = []
    for i in range(MAX_ZIP_BYTES // MAX_MEMBER_BYTES + 1):
        member = zipfile.ZipInfo(f"{i}.png")
        member.file_size = member.compress_size = MAX_MEMBER_BYTES
        members.append(member)
    with pytest.raises(BadImage, match="declares .* uncompressed; the limit is"):
        check_zip(members, "chain.zip")
    check_zip(members[:3], "chain.zip")  # big but honest (incompressible) frames pass


def test_a_zip_member_over_the_pixel_limit_is_refused_from_its_header(photo, tmp_path) -> None:
    side = int(MAX_DECLARED_PIXELS ** 0.5) + 100
    header = b"\x89PNG\r\n\x1a\n" + b"".join(_chunk(kind, data) for kind, data in (
        (b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)),
        (b"IDAT", zlib.compress(b"\0" * 64)), (b"IEND", b"")))
    archive = tmp_path / "chain.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("0.png", png_bytes(photo))
        zipped.writestr("1.png", header)
    frames = open_frames(archive)
    with pytest.raises(BadImage, match=f"declares {side} x {side} pixels"):
        frames.frame(1)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def test_a_13000_px_animated_gif_is_refused_from_its_header(tmp_path) -> None:
    gif = _gif_header_bomb(tmp_path / "bomb.gif")
    assert gif.stat().st_size < 1000
    with pytest.raises(BadImage, match="13000 x 13000"):
        open_frames(gif)


def _peak_rss_mb(code: str, *args: str) -> tuple[int, str, float]:
    """Run `code` in a fresh interpreter; its exit code, stderr, and peak RSS in MB. The peak is
    the child's own VmHWM: getrusage's ru_maxrss carries the parent's high-water mark across
    fork and exec, so after a long test session it reported pytest's 3.5 GB, not the CLI's."""
    wrapper = (f"import sys\n{code}\n"
               "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
               "print('PEAK_RSS_KB', hwm.split()[1])\n"
               "sys.exit(status)")
    done = subprocess.run([sys.executable, "-c", wrapper, *args], cwd=REPO, text=True,
                          capture_output=True, env={**os.environ}, timeout=600)
    peak = [line for line in done.stdout.splitlines() if line.startswith("PEAK_RSS_KB")]
    assert peak, done.stdout + done.stderr
    return done.returncode, done.stderr, int(peak[0].split()[1]) / 1024


def test_cli_score_refuses_a_zip_bomb_with_exit_2_and_flat_memory(bomb, tmp_path) -> None:
    status, err, peak = _peak_rss_mb(
        "from banana_space.cli import main\nstatus = main(sys.argv[1:])",
        "score", str(bomb), "--out", str(tmp_path / "run"), "--metrics", "entropy")
    assert status == 2
    assert "step_1.png declares 2,048 MB uncompressed" in err
    assert peak < RSS_BOUND_MB, f"peak RSS {peak:.0f} MB"
    assert not (tmp_path / "run").exists()


def test_cli_score_refuses_a_giant_animated_gif_with_exit_2(tmp_path) -> None:
    gif = _gif_header_bomb(tmp_path / "bomb.gif")
    status, err, peak = _peak_rss_mb(
        "from banana_space.cli import main\nstatus = main(sys.argv[1:])",
        "score", str(gif), "--out", str(tmp_path / "run"), "--metrics", "entropy")
    assert status == 2 and "13000 x 13000" in err
    assert peak < RSS_BOUND_MB, f"peak RSS {peak:.0f} MB"


@pytest.mark.app
def test_app_replay_refuses_a_zip_bomb_with_flat_memory(bomb, photo, tmp_path) -> None:
    """Through gradio_client against the real app: a clear error, and the app's own peak RSS
    (VmHWM), measured after an honest replay has loaded torch and the metric, barely moves."""
    import psutil
    from app_server import run_inputs, running_app
    from gradio_client import Client, handle_file


    with running_app(tmp_path / "runs") as url:
        app = next(p for p in psutil.Process().children(recursive=True)
                   if "app.py" in p.cmdline())
        client = Client(url, verbose=False)

        def replay(archive: Path) -> list:
            return client.predict(*run_inputs(handle_file(str(archive)), 5, backend="replay",
                                              metrics=["entropy"]), api_name="/run")

        honest = tmp_path / "honest.zip"
        with zipfile.ZipFile(honest, "w") as archive:
            for i, frame in enumerate(_frames(photo, 3)):
                archive.writestr(f"{i}.png", png_bytes(frame))
        assert "Completed" in replay(honest)[0]
        before = _peak_kb(app.pid)
        with pytest.raises(Exception, match="declares 2,048 MB uncompressed") as refused:
            replay(bomb)
        grown_mb = (_peak_kb(app.pid) - before) / 1024
    assert "/tmp" not in str(refused.value)  # a member name, never a server path
    assert grown_mb < 300, f"the app's peak RSS grew by {grown_mb:.0f} MB"


def _peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


# Held-out local layouts (`chain_layout.py`): name -> the file each step is saved as.
LAYOUTS = {
    "numbered from 0": {k: f"step_{k:03d}.png" for k in range(6)},
    "numbered from 1, the input named apart": {0: "input.png",
                                               **{k: f"{k}.png" for k in range(1, 6)}},
    "one frame per numbered subfolder": {k: f"{k}/frame.png" for k in range(6)},
    "step_NN subfolders from 1 beside the original": {
        0: "original.png", **{k: f"step_{k:02d}/out.png" for k in range(1, 6)}},
    "a gap at step 3": {k: f"{k}.png" for k in (0, 1, 2, 4, 5)},
    "macOS's copies": {0: "frame.png", 1: "frame copy.png",
                       **{k: f"frame copy {k}.png" for k in range(2, 6)}},
}


def _write_layout(root: Path, files: dict[int, str], frames: list[Image.Image],
                  zipped: bool) -> Path:
    if zipped:
        with zipfile.ZipFile(root / "chain.zip", "w") as archive:
            for step, name in files.items():
                archive.writestr(f"my chain/{name}", png_bytes(frames[step]))
        return root / "chain.zip"
    for step, name in files.items():
        (root / "chain" / name).parent.mkdir(parents=True, exist_ok=True)
        frames[step].save(root / "chain" / name)
    return root / "chain"


@pytest.mark.parametrize("zipped", [False, True], ids=["folder", "zip"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_held_out_layouts_are_read_with_their_true_step_numbers(photo, tmp_path, layout,
                                                                zipped) -> None:
    files = LAYOUTS[layout]
    chain = noisy_chain(photo, 1, 6)
    frames = open_frames(_write_layout(tmp_path, files, chain, zipped))
    assert frames.steps == tuple(files)
    for index, step in enumerate(frames.steps):  # each step's own pixels
        assert frames.frame(index).image.tobytes() == chain[step].tobytes(), step
    gap = [note for note in frames.notes if note.startswith("no frame for")]
    assert gap == (["no frame for step 3 (the names skip it): no score there"]
                   if layout == "a gap at step 3" else [])


def _examples(names: tuple[str, ...]) -> list[Image.Image]:
    pictures = []
    for name in names:
        with Image.open(REPO / "assets" / "examples" / name) as picture:
            pictures.append(picture.convert("RGB").resize((96, 64)))
    return pictures


def test_unrelated_pictures_are_refused_from_a_folder_a_zip_and_an_animation(tmp_path) -> None:
    pictures = _examples(("chelsea.png", "coffee.png", "astronaut.png", "rocket.jpg"))
    layout = {k: f"{k}.png" for k in range(4)}
    gif = tmp_path / "slides.gif"
    pictures[0].save(gif, save_all=True, append_images=pictures[1:], duration=100)
    for source in (_write_layout(tmp_path, layout, pictures, False),
                   _write_layout(tmp_path, layout, pictures, True), gif):
        with pytest.raises(BadImage) as refused:
            open_frames(source)
        assert str(refused.value).startswith(f"{source.name} is not a chain: steps 0 and 1 are ")
        assert str(refused.value).endswith("neighbouring copies are more than 18 dB")


@pytest.mark.parametrize(("files", "found"), [
    ({k: f"frame_{k:04d}.png" for k in range(1, 4)}, "found copies numbered from 1 and no input"),
    ({k: f"{name}.png" for k, name in enumerate(("first", "second", "third"))},
     "found no step number in any name ('first.png', 'second.png' …)"),
])
def test_names_that_do_not_say_the_steps_are_refused_in_one_line(photo, tmp_path, files,
                                                                 found) -> None:
    chain = noisy_chain(photo, 1, 4)
    for zipped in (False, True):
        source = _write_layout(tmp_path, files, chain, zipped)
        with pytest.raises(BadImage) as refused:
            open_frames(source)
        assert str(refused.value) == f"{source.name}: {EXPECTED}; {found}"


def test_an_animation_and_a_run_directory_keep_their_own_order(photo, tmp_path) -> None:
    chain = noisy_chain(photo, 1, 5)
    gif = tmp_path / "frame_9.gif"  # the name says nothing: the order it plays is the order
    chain[0].save(gif, save_all=True, append_images=chain[1:], duration=100)
    assert open_frames(gif).steps == (0, 1, 2, 3, 4)
    run = tmp_path / "run"
    (run / "frames").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"format": 1}))
    for step in (0, 1, 2, 5):  # a sampled run: its gaps are kept
        chain[min(step, 4)].save(run / "frames" / f"step_{step:03d}.png")
    frames = open_frames(run)
    assert frames.steps == (0, 1, 2, 5)
    assert frames.frame(3).image.tobytes() == chain[4].tobytes()
    (run / "frames" / "step_000.png").unlink()  # a real chain sampled from its first copy
    with pytest.raises(BadImage, match="run has no step 0: it was recorded from step 1"):
        open_frames(run)


def test_score_keeps_a_gap_and_the_verdict_says_which_checkpoint_it_lacks(photo,
                                                                          tmp_path) -> None:
    """The CLI's `score` (the replay backend, as the page's upload): steps 0-6 without 5 are
    scored at their own numbers; step 5 has no frame and no score, so Δ5 is missing and
    each verdict says so, instead of reading step 6 as step 5."""
    from banana_space.cli import main
    from banana_space.store.run import Run

    chain = noisy_chain(photo, 1, 7)
    source = _write_layout(tmp_path, {k: f"{k}.png" for k in (0, 1, 2, 3, 4, 6)}, chain, True)
    assert main(["score", str(source), "--out", str(tmp_path / "run"), "--metrics",
                 "entropy"]) == 0
    saved = Run(tmp_path / "run").load()
    assert saved.last_step == 6 and not saved.run.has_frame(5) and saved.run.has_frame(6)
    with Image.open(saved.run.frame_path(6)) as frame:
        assert frame.convert("RGB").tobytes() == chain[6].tobytes()
    entropy = saved.history.scores["entropy"]
    assert [math.isnan(score) for score in entropy] == [False] * 5 + [True, False]
    rows = {row.metric: row for row in saved.history.verdict()}
    assert rows["entropy"].undecided_because == "no score at step 5"
    assert "no frame for step 5 (the names skip it): no score there" in \
        saved.meta["settings"]["input_notes"]


def test_a_replayed_gap_streams_as_a_gap(photo, tmp_path) -> None:
    """The page's view of a replay as it runs: the missing step is a gap in the strip (no
    frame to show), never a broken picture, and the run completes at the recording's last
    step."""
    from banana_space.chain.runs import start_run
    from banana_space.chain.spec import RunSpec
    from banana_space.view import RunView

    chain = noisy_chain(photo, 1, 5)
    source = _write_layout(tmp_path, {k: f"{k}.png" for k in (0, 1, 2, 4)}, chain, False)
    view = RunView()
    for event in start_run(RunSpec.replay(str(source), metrics=["entropy"]), tmp_path / "runs"):
        screen = view.apply(event)
    assert [pair is None for pair in screen.strip] == [False, False, False, True, False]
    assert screen.status.startswith("✅ **Completed** · step 4 of 4")
