"""The quality gate (issue 27, item 4): the verdict's arithmetic with known floors, the engine on
a simulated chain, and the MCP tool through the `mcp` client: "no" for an unedited copy, "yes"
for the chain's last frame, whose damage has passed the floors (one image per call: a zip of the
whole 512 px chain is larger than the MCP endpoint takes). Also the metric presets through MCP
(item 3's fold-in: `run_chain` with "rulers" scores the rulers instead of refusing)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from app_server import running_app
from conftest import EXAMPLES
from PIL import Image
from test_mcp import answer, data_url, session_call

from banana_space import gate
from banana_space.backends.simulate import SimulateBackend
from banana_space.scores.rulers import RULERS
from banana_space.verdict.floors import floor_since_input
from banana_space.verdict.magnifier import largest_difference_box

STEPS = 10


@pytest.fixture(scope="module")
def chain() -> list[Image.Image]:
    """A simulated Nano Banana Pro-like chain from a clean start at 512 px, frame 0 first."""
    with Image.open(EXAMPLES / "clean-dunes.png") as opened:
        frames = [opened.convert("RGB").resize((512, 341))]
    backend = SimulateBackend(profile="nano-banana-pro")
    for step in range(1, STEPS + 1):
        frames.append(backend.edit(frames[-1], "replica", seed=0, step=step).image)
    return frames


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_look_at_is_the_window_a_brute_force_search_finds(seed) -> None:
    """The magnifier's crop (the gate's `look_at`) against every window summed directly, in
    integers: the largest summed |difference| over every channel, the first on ties. Scattered
    changed pixels, a patch changed by 20 in red alone, and one changed by 8 in every channel
    (a grey shift: it wins only if every channel counts). Small images and a small crop keep
    the summed-area table's float32 sums exact."""
    rng = np.random.default_rng(seed)
    height, width, crop = 37, 53, 9
    before = rng.integers(20, 236, size=(height, width, 3), dtype=np.uint8)
    after = before.astype(int)
    after[rng.integers(0, height, 30), rng.integers(0, width, 30)] += rng.integers(
        -15, 16, size=(30, 3))
    red_top, red_left = rng.integers(0, 14, size=2)  # rows 0-21: above the grey patch
    grey_top, grey_left = 23 + rng.integers(0, 5), 30 + rng.integers(0, 14)
    after[red_top:red_top + crop, red_left:red_left + crop, 0] += 20
    after[grey_top:grey_top + crop, grey_left:grey_left + crop] -= 8
    after = np.clip(after, 0, 255).astype(np.uint8)
    difference = np.abs(before.astype(np.int64) - after).sum(axis=2)
    sums = [[difference[top:top + crop, left:left + crop].sum()
             for left in range(width - crop + 1)] for top in range(height - crop + 1)]
    top, left = np.unravel_index(int(np.argmax(sums)), np.shape(sums))
    assert top >= 23  # the grey patch, not the red one
    assert largest_difference_box(Image.fromarray(before), Image.fromarray(after), crop) == (
        left, top, left + crop, top + crop)


def test_a_measure_votes_only_past_its_floor(monkeypatch) -> None:
    floors = {"psnr": 5.0, "noise_level": 0.5}
    monkeypatch.setattr(gate, "floor_since_input", floors.get)
    start = {name: 1.0 for name in gate.GATE_MEASURES}
    # noise_level is lower-better: +0.6 is 0.6 worse, past its 0.5 floor; psnr 3 dB worse is
    # within its 5 dB floor; scale_index is far worse but has no floor, so it does not vote.
    edit = {**start, "noise_level": 1.6, "psnr": -2.0, "scale_index": 50.0}
    verdict = gate._verdict(edit, start)
    assert verdict["degraded"] is True and verdict["worse"] == ["noise_level"]
    assert verdict["measures"]["noise_level"] == {"delta": -0.6, "floor": 0.5,
                                                  "floors_worse": 1.2}
    assert verdict["measures"]["scale_index"]["floor"] is None
    assert gate._verdict(start, start)["degraded"] is False


def test_the_gate_says_no_for_a_copy_and_yes_once_damage_passes_the_floor(chain) -> None:
    assert floor_since_input("noise_level") is not None, "floors.csv: run scripts/measure_floors.py"
    copy = gate.check_degradation(chain[0], [chain[0].copy()])
    assert copy["degraded"] is False and copy["first_degraded"] is None
    assert all(m["delta"] == 0 for m in copy["edits"][0]["measures"].values())

    checked = gate.check_degradation(chain[0], chain[1:])
    assert checked["degraded"] is True and checked["worse"]
    first = checked["first_degraded"]
    assert all(not edit["degraded"] for edit in checked["edits"][:first - 1])
    for name in checked["worse"]:
        measure = checked["edits"][-1]["measures"][name]
        assert measure["delta"] < -measure["floor"] and measure["floors_worse"] > 1
    left, top, right, bottom = checked["look_at"]
    assert 0 <= left < right <= 512 and 0 <= top < bottom <= 341


def test_an_original_seen_before_is_not_scored_again(chain, monkeypatch) -> None:
    scored = []

    def counted(pixels: np.ndarray) -> dict[str, float]:
        scored.append(pixels.shape)
        return measured(pixels)

    measured = gate.measure_all
    monkeypatch.setattr(gate, "measure_all", counted)
    monkeypatch.setattr(gate, "ORIGINALS", gate.OriginalScores(kept=1))
    first = gate.check_degradation(chain[0], chain[3:4])
    assert len(scored) == 2  # the original, then the edit
    again = gate.check_degradation(chain[0].copy(), chain[3:4])
    assert len(scored) == 3  # the edit only: the same pixels' measures were kept
    assert again["edits"] == first["edits"]
    gate.check_degradation(chain[1], chain[3:4])  # another original: scored, and kept instead
    gate.check_degradation(chain[0], chain[3:4])
    assert len(scored) == 7


def test_too_many_or_no_edits_are_refused(chain) -> None:
    with pytest.raises(ValueError, match="1 to 100"):
        gate.check_degradation(chain[0], [])


@pytest.mark.app
def test_the_gate_and_presets_answer_through_mcp(chain, tmp_path) -> None:
    with running_app(tmp_path / "runs") as url:
        tools, (same, edited, missing, rulers) = asyncio.run(session_call(
            f"{url}gradio_api/mcp/", [
                ("check_degradation", {"original": data_url(chain[0]),
                                       "edited": data_url(chain[0])}),
                ("check_degradation", {"original": data_url(chain[0]),
                                       "edited": data_url(chain[-1])}),
                ("check_degradation", {"original": data_url(chain[0]), "edited": ""}),
                ("run_chain", {"image": data_url(chain[0].resize((64, 43))), "steps": 2,
                               "generator": "simulate", "metrics": "rulers", "seed": 0,
                               "profile": ""}),
            ]))
    tool = next(t for t in tools if t.name == "check_degradation")
    assert "degraded" in tool.description
    assert answer(same)["degraded"] is False
    verdict = answer(edited)
    assert verdict["degraded"] is True and verdict["worse"] and len(verdict["edits"]) == 1
    assert missing.isError  # gradio's MCP layer refuses the empty file before the tool runs
    assert set(RULERS) <= set(answer(rulers)["verdict"])
