"""What visitors' files cost the server's disk (issues 18 and 22): a visitor's uploads are
bounded, previews stay within their share, file inputs leave no temporary files, what a killed
process left behind is removed at start, uploads are deleted after a while and an oversized one
is refused; eight visitors previewing one large photo at once each get a whole image. Through
raw HTTP on gradio's upload and queue routes, on the app as a Space runs it
(`visitors.public_app`). Each test failed before its fix."""

from __future__ import annotations

import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from app_server import running_app
from PIL import Image
from raw_api import call, dependencies
from visitors import (
    KEEP_GB,
    chain_args,
    client,
    file_data,
    join,
    noise,
    public_app,
    run_ids,
    upload,
    uploads_folder,
)

pytestmark = pytest.mark.app


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    with public_app(tmp_path_factory.mktemp("uploads") / "runs") as app:
        yield app


def test_stale_files_of_a_killed_process_are_removed_at_start(app) -> None:
    assert not any(path.exists() for path in app["stale"])


def test_a_visitors_uploads_are_bounded(app, tmp_path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(900_000))
    codes = [upload(app, big, "10.0.5.1").status_code for _ in range(6)]
    assert codes[:3] == [200] * 3 and set(codes[3:]) == {429}  # 3 MB per visitor here
    assert upload(app, big, "10.0.5.2").status_code == 200  # others are not affected


def test_previews_stay_within_their_share(app, tmp_path) -> None:
    index = app["index"]["preview"]
    for seed in range(6):  # each preview is a 512 px PNG of noise, ~0.8 MB
        path = upload(app, noise(tmp_path / f"p{seed}.png", 600, 600, seed),
                      f"10.0.5.{10 + seed}").json()[0]
        assert call(app["url"], index, [file_data(path)]).success
    previews = app["runs"] / ".previews"
    used = sum(p.stat().st_size for p in previews.iterdir())
    assert used <= KEEP_GB * 1e9 / 100 + 1_000_000  # its share, and the newest one


def test_file_inputs_leave_no_temporary_files(app, tmp_path) -> None:
    def temporaries() -> set[str]:
        folders = (Path(tempfile.gettempdir()), Path(tempfile.gettempdir()) / "gradio",
                   uploads_folder(app["runs"]))  # gradio's default upload folder, and ours
        return {str(p) for folder in folders
                for p in folder.glob("tmp*") if p.is_file() and p.stat().st_size == 0}

    before = temporaries()
    path = upload(app, noise(tmp_path / "t.png", 64, 48), "10.0.5.30").json()[0]
    assert call(app["url"], app["index"]["preview"], [file_data(path)]).success
    assert temporaries() <= before


def test_concurrent_previews_of_one_image_are_whole(app, tmp_path) -> None:
    """Eight visitors preview one large photo at once; each gets a complete image (gradio
    once rewrote one shared cache file in place while serving it to the others)."""
    rng = np.random.default_rng(0)
    big = tmp_path / "big.png"
    Image.fromarray(rng.integers(0, 255, (2000, 3000, 3), dtype=np.uint8)).save(big)
    url, index = app["url"], dependencies(app["url"])["preview"]
    with httpx.Client(timeout=60) as http:
        with big.open("rb") as handle:
            path = http.post(f"{url}gradio_api/upload", files={"files": handle}).json()[0]
    file_data = {"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": "big.png"}

    def look(visitor: int) -> tuple[int, int]:
        answer = call(url, index, [file_data], headers={"X-Forwarded-For": f"10.0.6.{visitor}"})
        assert answer.success, answer.error
        shown = answer.data[0].get("value", answer.data[0])  # an update of the hidden preview
        with httpx.Client(timeout=60) as http:
            got = http.get(shown["url"])
        return int(got.headers["content-length"]), len(got.content)

    with ThreadPoolExecutor(max_workers=8) as pool:
        sizes = list(pool.map(look, range(8)))
    assert all(declared == received for declared, received in sizes), sizes
    assert "from 3000 x 2000" in call(url, index, [file_data]).data[1]


def test_previews_are_capped_per_visitor_in_the_queue(app, tmp_path) -> None:
    """Issue 41, item 2: the preview is reachable by its index, and each decodes a whole
    upload; one visitor's flood of previews of one large flat PNG is refused when it joins
    the queue, past its four; another visitor's preview still joins."""
    flat = tmp_path / "flat.png"
    Image.new("RGB", (6000, 4000), (90, 100, 110)).save(flat)
    path = upload(app, flat, "10.41.2.1").json()[0]
    joined = [join(app, "preview", [file_data(path)], "10.41.2.1") for _ in range(8)]
    refused = [answer for answer in joined if answer.status_code != 200]
    assert refused and all(answer.status_code == 400 for answer in refused), joined
    assert "previews being made" in refused[0].text
    assert join(app, "preview", [file_data(path)], "10.41.2.2").status_code == 200


@pytest.fixture(scope="module")
def short_lived_uploads(tmp_path_factory) -> str:
    runs = tmp_path_factory.mktemp("uploads") / "runs"
    with running_app(runs, BANANA_UPLOADS_KEEP_S="2") as url:
        yield url


def test_uploads_are_deleted_and_oversized_ones_refused(short_lived_uploads, photo_path,
                                                        tmp_path) -> None:
    url = short_lived_uploads
    with httpx.Client(timeout=60) as http:
        with photo_path.open("rb") as handle:
            stored = Path(http.post(f"{url}gradio_api/upload",
                                    files={"files": handle}).json()[0])
        assert stored.is_file()
        huge = tmp_path / "huge.png"
        with huge.open("wb") as sink:
            sink.truncate(101 * 1024 * 1024)
        with huge.open("rb") as handle:
            answer = http.post(f"{url}gradio_api/upload", files={"files": handle})
        assert answer.status_code == 413
    deadline = time.monotonic() + 60
    while stored.exists():
        assert time.monotonic() < deadline, "the upload was kept"
        time.sleep(0.5)


# --- issue 41, item 4: retention by share -------------------------------------------------------

def test_a_visitor_with_many_addresses_evicts_only_its_own_runs(app, tmp_path) -> None:
    """Eleven addresses make two runs each, far past the 8 runs kept here: the victim's run,
    inside its share (2 here), stays; an address's third run evicts that address's own
    oldest, nobody else's."""
    start = noise(tmp_path / "start.png", 32, 32)

    def one_run(who: str) -> str:
        return json.loads(client(app, who).predict(*chain_args(start, 1),
                                                    api_name="/run_chain"))["run"]

    victim = one_run("10.41.4.1")
    flood = [one_run(f"10.41.4.{100 + address}") for address in range(11) for _ in range(2)]
    kept = run_ids(app["runs"])
    assert victim in kept
    assert set(flood) <= kept  # each inside its own share
    third = one_run("10.41.4.100")
    kept = run_ids(app["runs"])
    assert victim in kept and third in kept and flood[0] not in kept
    assert set(flood[1:]) <= kept
