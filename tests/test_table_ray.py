"""The dataset table on Ray (issue 11): a local Ray with 2 CPUs gives the same table.csv and
scores.csv as the local process pool, and reports the broken chain the same way. Ray starts in
seconds, so this is one module with one Ray run."""

from __future__ import annotations

from pathlib import Path

import pytest
from chains import METRICS, make_chains

from banana_space.cli import main as cli

pytest.importorskip("ray", reason="Ray is an optional extra: pip install -r requirements-ray.txt")

REPO = Path(__file__).resolve().parent.parent


def test_local_ray_gives_the_same_table_as_the_local_pool(tmp_path, photo, capsys,
                                                         monkeypatch) -> None:
    # Every worker (spawned, or Ray's) reads its wait for a metric from its environment: 600 s
    # is a failure bound. At the default 30 s, two Ray workers importing torch and pyiqa beside
    # three busy processes on 2 cores found every metric "not reachable within 30 s", and
    # Ray's table came out empty.
    monkeypatch.setenv("BANANA_METRIC_LOAD_S", "600")
    root = tmp_path / "chains"
    make_chains(root, photo)
    common = ["table", str(root), "--metrics", ",".join(METRICS)]
    assert cli([*common, "--out", str(tmp_path / "local"), "--workers", "1"]) == 0
    assert cli([*common, "--out", str(tmp_path / "ray"), "--workers", "2", "--ray"]) == 0
    printed = capsys.readouterr()
    assert printed.out.count("skipped broken chain chains/broken") == 2
    for name in ("table.csv", "verdicts.csv", "scores.csv"):
        local, ray = ((tmp_path / kind / name).read_text() for kind in ("local", "ray"))
        assert local == ray, name
    assert len((tmp_path / "ray" / "table.csv").read_text().splitlines()) == 1 + 2 + len(METRICS)
