"""A running chain's progress line: the bar of steps made, the seconds a step takes and the
time left, from when each frame came; and the page's status line carrying it while a run goes."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from banana_space.chain.pace import BAR_CELLS, bar, duration_text, progress_line, seconds_per_step
from banana_space.events import Finished, FrameMade, Started
from banana_space.view import RunView


def test_the_bar_fills_with_the_steps_made_and_is_full_only_at_the_end() -> None:
    assert bar(0, 10) == "▱" * BAR_CELLS
    assert bar(3, 10) == "▰" * 3 + "▱" * 7
    assert bar(99, 100) == "▰" * 9 + "▱"  # one step left: not yet full
    assert bar(100, 100) == "▰" * BAR_CELLS


def test_the_pace_is_the_mean_time_between_the_frames_seen() -> None:
    assert seconds_per_step({}) is None and seconds_per_step({0: 5.0}) is None
    assert seconds_per_step({0: 10.0, 1: 12.0, 2: 16.0}) == pytest.approx(3.0)
    # A resumed run times only what it has seen since it went on (steps 20 on).
    assert seconds_per_step({20: 100.0, 22: 105.0}) == pytest.approx(2.5)


def test_the_line_says_what_is_done_the_pace_and_the_time_left() -> None:
    assert progress_line({0: 0.0}, 10) == "▱▱▱▱▱▱▱▱▱▱ 0 of 10 steps"
    line = progress_line({0: 0.0, 1: 2.0, 2: 4.2, 3: 6.3}, 10)
    assert line == "▰▰▰▱▱▱▱▱▱▱ 3 of 10 steps · 2.1 s a step · about 15 s left"
    assert progress_line({0: 0.0, 10: 30.0}, 10).endswith("3.0 s a step")  # nothing left
    assert "about 3 min left" in progress_line({0: 0.0, 1: 2.0}, 100)  # 198 s


@pytest.mark.parametrize(("seconds", "said"), [(0.2, "1 s"), (42.4, "42 s"), (89, "89 s"),
                                               (200, "3 min"), (3900, "1 h 5 min")])
def test_durations_are_rounded_as_a_person_says_them(seconds, said) -> None:
    assert duration_text(seconds) == said


def test_the_status_of_a_running_chain_shows_its_progress(monkeypatch) -> None:
    clock = iter([100.0, 102.0, 104.0])
    monkeypatch.setattr("banana_space.view.time.monotonic", lambda: next(clock))
    view, frame = RunView(), Image.new("RGB", (8, 8))
    view.apply(Started(Path("run"), 4, [], {}, {}))
    for step in range(3):
        status = view.apply(FrameMade(step, frame)).status
    assert status.startswith("⏳ **Running** · ▰▰▰▰▰▱▱▱▱▱ 2 of 4 steps · 2.0 s a step · "
                             "about 4 s left")
    assert "▰" not in view.apply(Finished("completed", 2)).status  # the end says it in words
