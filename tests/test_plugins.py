"""Metrics as plug-ins (issue 27, item 3): a real package, built and installed by pip into a
temporary folder, declares entry points in the group `banana_space.metrics`; in a process that
sees that folder the metric is listed, labelled with its distribution, scored, and ranked by the
leaderboard. A plug-in that fails to load is one warning; one that fails to create is an
unavailable entry; neither stops anything. Also the one metric-name parser (item 3's fold-in)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO

from banana_space.scores.catalog import PRESETS, parse_metric_names
from banana_space.scores.rulers import RULERS

PACKAGE = "banana-tiny-metric"
PLUGIN = '''
"""Mean brightness in grey levels: a made-up metric for the plug-in protocol's test."""
import numpy as np


class Brightness:
    name = "tiny_brightness"
    lower_better = False
    meaning = "mean grey level"
    score_range = (0, 255)

    @staticmethod
    def create():
        return lambda image: float(np.asarray(image.convert("L"), dtype=float).mean())


class Grain:
    name = "scale_index"  # one of our rulers': refused with a warning, the ruler stays
    lower_better = False
    meaning = "a clash"

    @staticmethod
    def create():
        return lambda image: 0.0


class Brisque(Grain):
    name = "brisque"  # pyiqa's: refused with a warning, pyiqa's stays


class Failing:
    name = "tiny_failing"
    lower_better = False
    meaning = "cannot be created"

    @staticmethod
    def create():
        raise RuntimeError("this plug-in needs a model it does not have")
'''


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """The plug-in package, built and installed by pip (offline) into a folder of its own."""
    source = tmp_path_factory.mktemp("plugin-source")
    (source / "tiny_metric.py").write_text(PLUGIN)
    (source / "broken_metric.py").write_text("raise ImportError('a broken plug-in')\n")
    (source / "pyproject.toml").write_text(textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{PACKAGE}"
        version = "0.1.0"
        [tool.setuptools]
        py-modules = ["tiny_metric", "broken_metric"]
        [project.entry-points."banana_space.metrics"]
        tiny_brightness = "tiny_metric:Brightness"
        tiny_failing = "tiny_metric:Failing"
        tiny_broken = "broken_metric:Metric"
        tiny_grain = "tiny_metric:Grain"
        tiny_brisque = "tiny_metric:Brisque"
        """))
    site = tmp_path_factory.mktemp("plugin-site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(site), str(source)], check=True)
    return site


def run_with(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)


def test_a_plugin_is_listed_labelled_and_scored(plugin_site: Path) -> None:
    script = textwrap.dedent("""
        import json, math
        from PIL import Image
        from banana_space.scores.catalog import no_reference_names, metric_info, parse_metric_names
        from banana_space.scores.scoring import Scorer
        image = Image.new("RGB", (40, 30), (10, 20, 30))
        scorer = Scorer(parse_metric_names("tiny_brightness,tiny_failing,entropy"))
        list(scorer.load())
        scored = scorer.score(image, image)
        info = metric_info("tiny_brightness")
        families = {name: metric_info(name).family for name in ("scale_index", "brisque")}
        print(json.dumps({"names": no_reference_names(), "label": info.label,
                          "families": families,
                          "family": info.family, "range": info.score_range,
                          "score": scored.scores["tiny_brightness"],
                          "unavailable": scorer.unavailable}))
        """)
    done = run_with(plugin_site, "-c", script)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[-1])
    assert "tiny_brightness" in answer["names"] and "tiny_broken" not in answer["names"]
    assert answer["label"] == f"tiny_brightness ({PACKAGE} 0.1.0)"
    assert answer["family"] == "plug-in" and answer["range"] == [0.0, 255.0]
    # PIL's grey level of (10, 20, 30): (10*299 + 20*587 + 30*114) / 1000 = 18.15 -> 18
    assert answer["score"] == pytest.approx(18.0)
    assert "this plug-in needs a model" in answer["unavailable"]["tiny_failing"]
    assert done.stderr.count("tiny_broken") == 1  # one warning, never a crash
    # A plug-in named like a ruler or a pyiqa metric: one warning each, listed once, never
    # in place of the metric that has the name.
    assert answer["names"].count("scale_index") == 1 and answer["names"].count("brisque") == 1
    assert answer["families"] == {"scale_index": "ours", "brisque": "pyiqa"}
    assert done.stderr.count("plug-in tiny_grain") == 1
    assert done.stderr.count("plug-in brisque left out") == 1
    assert "left out" in done.stderr


def test_a_plugin_appears_in_the_leaderboard(plugin_site: Path, tmp_path: Path) -> None:
    out = tmp_path / "board"
    done = run_with(plugin_site, "-m", "banana_space", "leaderboard", "--out", str(out),
                    "--starts", "clean-dunes", "--profiles", "nano-banana-pro,blur,identical",
                    "--size", "64", "--steps", "5", "--workers", "1",
                    "--metrics", "tiny_brightness,tiny_failing,scale_index")
    assert done.returncode == 0, done.stderr[-3000:]
    with (out / "leaderboard.csv").open() as handle:
        board = {row["metric"]: row for row in csv.DictReader(handle)}
    plugin = board["tiny_brightness"]
    assert plugin["family"] == "plug-in" and plugin["label"].endswith(f"({PACKAGE} 0.1.0)")
    assert plugin["detect_rate"] != "" and float(plugin["seconds_per_frame"]) > 0
    assert board["tiny_failing"]["unavailable"] and board["tiny_failing"]["detect_rate"] == ""
    assert board["scale_index"]["family"] == "ours"
    with (out / "artifacts.csv").open() as handle:
        artifacts = {(row["artifact"], row["metric"]) for row in csv.DictReader(handle)}
    assert ("nano-banana-pro", "tiny_brightness") in artifacts
    assert "tiny_brightness" in (out / "leaderboard.html").read_text()


def test_one_parser_reads_presets_names_and_blanks() -> None:
    assert parse_metric_names("rulers, brisque") == [*RULERS, "brisque"]
    assert parse_metric_names("classics\nniqe") == list(PRESETS["CPU classics (4)"])
    assert parse_metric_names("") == list(PRESETS["CPU classics (4)"])
    assert parse_metric_names([], blank=()) == []
    with pytest.raises(ValueError, match="presets: classics, banana100, rulers"):
        parse_metric_names("rulerz")
