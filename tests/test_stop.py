"""Stop ends a run at once, even while a frame is being scored: the run ends after the last
scored step, the frame in flight is dropped (not part of the run, not zipped).

The slow frame is real: a real pyiqa metric whose scoring of step 2 waits on a gate that the
test opens only after the run has ended, so a Stop that waited for scoring could not pass."""

from __future__ import annotations

import threading
import zipfile
from typing import Any

from banana_space.chain.runs import RunSpec, start_run
from banana_space.events import Finished, FrameScored
from banana_space.scores.catalog import build_metric
from banana_space.scores.pool import MetricPool
from banana_space.store.run import Run, frame_name

HELD_STEP = 2
# Failure bounds, never a guess of the machine's speed: a Stop that waited for the held frame
# would end only once the gate gave up.
GATE_S = 300


class HeldAtFrame:
    """A real pyiqa metric that holds its scoring of one frame until `gate` is set; `released`
    is set once that frame's scoring goes on."""

    def __init__(self, metric: Any, gate: threading.Event, reached: threading.Event) -> None:
        self.metric, self.gate, self.reached, self.calls = metric, gate, reached, 0
        self.released = threading.Event()

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        if self.calls == HELD_STEP + 1:  # scoring frame 0, 1, then this one
            self.reached.set()
            self.gate.wait(GATE_S)
            self.released.set()
        return self.metric(*args)


def test_stop_ends_the_run_while_a_frame_is_scored_and_drops_that_frame(photo, tmp_path):
    gate, reached, held = threading.Event(), threading.Event(), []

    def build(name: str, device: str) -> Any:
        metric = build_metric(name, device)
        if name == "entropy":
            held.append(HeldAtFrame(metric, gate, reached))
            return held[-1]
        return metric

    pool = MetricPool(device="cpu", build=build, load_seconds=120)
    stop = threading.Event()
    events: list = []
    held_when_ended = None
    before = set(threading.enumerate())
    spec = RunSpec(photo.resize((96, 64)), 20, metrics=["entropy", "piqe"])
    # Stop is clicked once frame 2 is being scored (it is, until the gate opens), by a visitor
    # beside the run: the run's reader keeps reading meanwhile, as the page's does.
    clicker = threading.Thread(target=lambda: reached.wait(GATE_S) and stop.set())
    clicker.start()
    try:
        for event in start_run(spec, tmp_path, stop=stop, pool=pool):
            events.append(event)
            if isinstance(event, Finished):  # what the page shows at once (the zip follows)
                held_when_ended = not held[0].released.is_set()
    finally:
        gate.set()
        clicker.join(GATE_S)
    assert reached.is_set(), "frame 2's scoring never began"
    end = events[-1]
    assert isinstance(end, Finished) and end.status == "stopped", end
    # The end came while frame 2 was still held: Stop did not wait for its scoring.
    assert held_when_ended, "the run ended only after the held frame was let go"
    # The run ended after the last scored step; frame 2 was made but never scored.
    assert end.last_step == HELD_STEP - 1
    assert [e.step for e in events if isinstance(e, FrameScored)] == [0, 1]
    run = next(e.run_dir for e in events if hasattr(e, "run_dir"))
    saved = Run(run).load()
    assert saved.last_step == HELD_STEP - 1 and saved.meta["status"] == "stopped"
    with zipfile.ZipFile(Run(run).zip_path) as archive:  # made once the end was shown
        assert not [n for n in archive.namelist() if n.endswith(frame_name(HELD_STEP))]
        assert [n for n in archive.namelist() if n.endswith(frame_name(HELD_STEP - 1))]
    # Once let go, the held frame's scoring finishes in the background; nothing after it (the
    # run's own threads end: no frame is scored after theirs).
    for thread in set(threading.enumerate()) - before:
        if thread.name.startswith("chain-"):
            thread.join(GATE_S)
            assert not thread.is_alive(), f"{thread.name} still runs"
    assert held[0].calls == HELD_STEP + 1
