"""Memory budget and metric loading: no visitor's frame or metric takes the process down or
holds everyone else up (issue 12; issue 18 item 3; issue 17 item 10).

Memory bounds are asserted on a child process's peak RSS, never a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
from conftest import REPO

from banana_space import budget
from banana_space.budget import GB, MemoryBudget, scoring_bytes
from banana_space.chain.runs import RunSpec, start_run
from banana_space.events import Finished, FrameScored, Notice, Started
from banana_space.scores.catalog import CPU_DEFAULTS, build_metric
from banana_space.scores.pool import MetricPool


def small(photo, side: int = 64):
    return photo.resize((side, side))


# ---- the budget itself -------------------------------------------------------------------

def test_requests_are_served_first_come_first_served() -> None:
    budget = MemoryBudget(10)
    first, second, third = budget.request(6), budget.request(6), budget.request(1)
    assert first.granted and not second.granted
    assert not third.granted  # it would fit, but it came after `second`
    first.release()
    assert second.granted and third.granted and budget.used == 7
    second.release(), third.release()
    assert budget.used == 0


def test_a_cancelled_wait_leaves_the_queue() -> None:
    budget = MemoryBudget(10)
    holder, waiter = budget.request(10), budget.request(5)
    assert waiter.wait(cancelled=lambda: True) is False
    later = budget.request(5)
    holder.release()
    assert later.granted and not waiter.granted and budget.used == 5


def test_a_request_above_the_budget_waits_to_run_alone() -> None:
    budget = MemoryBudget(10)
    small_one = budget.request(3)
    huge = budget.request(50)
    assert not budget.fits(50) and not huge.granted
    small_one.release()
    assert huge.granted and budget.used == 10


# ---- refusals before a run starts --------------------------------------------------------

def test_a_frame_that_could_never_fit_is_refused_before_the_run_starts(photo, tmp_path) -> None:
    tiny = MemoryBudget(scoring_bytes([*CPU_DEFAULTS, "psnr", "ssim"], 64 * 64) - 1)
    with pytest.raises(ValueError, match=r"64 x 64 frame .* needs about .* budget"):
        start_run(RunSpec(small(photo), 2), tmp_path, budget=tiny)
    assert list(tmp_path.iterdir()) == []


def test_one_run_may_not_ask_for_every_metric(photo, tmp_path) -> None:
    from banana_space.scores.catalog import no_reference_names

    with pytest.raises(ValueError, match="at most 32"):
        start_run(RunSpec(small(photo), 1, metrics=no_reference_names()[:33]), tmp_path)
    assert list(tmp_path.iterdir()) == []


# ---- metric loading ----------------------------------------------------------------------

def events_of(spec: RunSpec, root, pool: MetricPool, into: list) -> None:
    for event in start_run(spec, root, pool=pool):
        into.append(event)


def held_at(held: str, gate: threading.Event, calls: list):
    """A real metric factory that records each name and holds `held` until `gate` is set."""
    def build(name: str, device: str):
        calls.append(name)
        if name == held:
            gate.wait()
        return build_metric(name, device)
    return build


def test_a_hanging_metric_creation_does_not_delay_another_visitors_run(photo, tmp_path) -> None:
    """Visitor A asks for niqe, whose creation hangs (a real factory that blocks until we let
    it go); visitor B's run, with other metrics from the same pool, ends meanwhile."""
    gate, calls = threading.Event(), []
    pool = MetricPool(device="cpu", build=held_at("niqe", gate, calls), load_seconds=600)
    a_events: list = []
    a = threading.Thread(target=events_of, args=(RunSpec(small(photo), 2, metrics=["niqe"]),
                                                 tmp_path / "a", pool, a_events))
    a.start()
    while "niqe" not in calls:
        gate.wait(0.01)
    b_events: list = []
    events_of(RunSpec(small(photo), 2, metrics=["brisque"]), tmp_path / "b", pool, b_events)
    assert b_events[-1] == Finished("completed", 2, "", b_events[-1].totals)
    assert not gate.is_set() and a.is_alive()
    assert Notice("loading niqe 1/3…", None, "info") in a_events
    assert not any(isinstance(e, Started) for e in a_events)  # A is still waiting for niqe
    gate.set()
    a.join(timeout=600)
    assert a_events[-1].status == "completed"
    assert all("niqe" in e.scores for e in a_events if isinstance(e, FrameScored))
    assert calls.count("niqe") == 1


def test_a_creation_that_overruns_is_not_waited_for_twice(photo, tmp_path) -> None:
    gate, calls = threading.Event(), []
    pool = MetricPool(device="cpu", build=held_at("piqe", gate, calls), load_seconds=1)
    for name in ("entropy", "psnr", "ssim"):  # made before the limit applies to any run
        pool.begin(name).wait()
    try:
        for visit in range(3):
            events: list = []
            events_of(RunSpec(small(photo), 1, metrics=["piqe", "entropy"]), tmp_path / str(visit),
                      pool, events)
            started = next(e for e in events if isinstance(e, Started))
            assert started.unavailable == {"piqe": "weights not reachable within 1 s"}
            assert events[-1].status == "completed"
        assert calls.count("piqe") == 1  # one creation, however many runs ask
    finally:
        gate.set()


class LookedAtFirst(MetricPool):
    """Real metrics, each created only once the run has looked whether it is ready: otherwise
    a quick creation (brisque in a warm process) may beat the look, and its line is skipped."""

    def __init__(self) -> None:
        self.looked: dict[str, threading.Event] = {}
        super().__init__(device="cpu", build=self._after_the_look)

    def _look(self, name: str) -> threading.Event:
        return self.looked.setdefault(name, threading.Event())

    def is_ready(self, name: str) -> bool:
        ready = super().is_ready(name)
        self._look(name).set()
        return ready

    def _after_the_look(self, name: str, device: str):
        self._look(name).wait(60)
        return build_metric(name, device)


def test_metrics_load_with_progress_and_failures_are_one_short_line(photo, tmp_path) -> None:
    events: list = []
    events_of(RunSpec(small(photo), 1, metrics=["brisque", "musiq", "nima", "dbcnn"]),
              tmp_path, LookedAtFirst(), events)
    opening = events[:next(i for i, e in enumerate(events) if isinstance(e, Started))]
    assert opening == [Notice(f"loading {name} {index}/6…", None, "info") for index, name in
                       enumerate(["brisque", "musiq", "nima", "dbcnn", "psnr", "ssim"], 1)]
    lines = [e.message for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert lines == ["3 metrics unavailable: weights not reachable (offline?)"]
    assert events[-1].status == "completed"


# ---- several visitors under a small budget, in a child process ---------------------------

VISITORS = textwrap.dedent("""
    import json, sys, threading
    from pathlib import Path
    from PIL import Image
    from banana_space.backends.simulate import SimulateBackend
    from banana_space.budget import BUDGET, trim_freed_memory
    from banana_space.scores.catalog import CPU_DEFAULTS
    from banana_space.chain.runs import RunSpec, start_run

    def status_kb(key):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])

    root, side = Path(sys.argv[1]), int(sys.argv[2])
    photo = Image.open(sys.argv[3]).convert("RGB").resize((side, side))
    list(start_run(RunSpec(photo, 1, metrics=CPU_DEFAULTS), root / "warm-up"))
    # Making a frame is outside the budget (it bounds scoring): what one simulate step holds
    trim_freed_memory()
    before = status_kb("VmRSS:")
    Path("/proc/self/clear_refs").write_text("5")
    SimulateBackend().edit(photo, "", seed=0, step=1)
    making_kb = status_kb("VmHWM:") - before
    trim_freed_memory()
    baseline = status_kb("VmRSS:")
    Path("/proc/self/clear_refs").write_text("5")  # restart the peak (VmHWM) from here
    results = {}

    def visit(number):
        events = list(start_run(RunSpec(photo, 2, seed=number, metrics=CPU_DEFAULTS),
                                root / str(number)))
        results[number] = {
            "status": events[-1].status,
            "scored": sum(type(e).__name__ == "FrameScored" for e in events),
            "waited": sum("waiting for memory" in getattr(e, "message", "") for e in events)}

    threads = [threading.Thread(target=visit, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"baseline_kb": baseline, "peak_kb": status_kb("VmHWM:"),
                      "making_kb": making_kb, "budget": BUDGET.capacity, "results": results}))
""")


def test_four_visitors_under_a_budget_for_one_frame_all_complete_within_it(tmp_path) -> None:
    side = 1024  # at 512² what glibc keeps and the frames being made outweigh a frame's scoring
    one_frame = scoring_bytes([*CPU_DEFAULTS, "psnr", "ssim"], side * side)
    configured = one_frame + budget.ALLOCATOR_SLACK_BYTES  # room for one frame, no more
    environment = {**os.environ, "BANANA_MEMORY_GB": str(configured / GB),
                   "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", VISITORS, str(tmp_path), str(side),
                           str(REPO / "assets" / "examples" / "astronaut.png")],
                          env=environment, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["budget"] < 2 * one_frame  # one frame at a time
    assert [r["status"] for r in report["results"].values()] == ["completed"] * 4
    assert [r["scored"] for r in report["results"].values()] == [3] * 4  # none dropped
    assert sum(r["waited"] for r in report["results"].values()) >= 1
    # while one frame is scored, each of the four chains may be making its next frame
    making = 4 * report["making_kb"] * 1024
    added = (report["peak_kb"] - report["baseline_kb"]) * 1024
    assert added <= configured + making, (added / GB, configured / GB, making / GB)


FREED = textwrap.dedent("""
    import json
    from pathlib import Path
    import numpy as np
    from banana_space import budget

    def rss_mb():
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    before = rss_mb()
    # 40 blocks of 8 MiB (below the mmap threshold: from the arena), each pinned in place by a
    # small block after it, as a frame's temporaries are by whatever outlives them
    blocks, pins = [], []
    for _ in range(40):
        blocks.append(np.ones(1024 ** 2))
        pins.append(np.ones(32 * 1024))  # 256 KiB: from the arena, right after it
    used = rss_mb()
    del blocks
    kept = rss_mb()
    budget.trim_freed_memory()
    print(json.dumps({"used": used - before, "kept": kept - before,
                      "trimmed": rss_mb() - before}))
""")


@pytest.mark.skipif(not budget.GLIBC_MALLOC, reason="glibc's malloc only")
def test_freed_frame_memory_is_reused_then_given_back_when_the_frame_ends() -> None:
    done = subprocess.run([sys.executable, "-c", FREED], env={**os.environ,
                          "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["used"] >= 300  # 320 MiB of blocks, resident
    assert report["kept"] >= 200  # freed but kept for reuse (holes the top trim cannot reach)
    assert report["trimmed"] <= budget.ALLOCATOR_SLACK_BYTES / 1024 ** 2


# ---- previews: 8 visitors dropping a flat 8000 x 8000 PNG at once ------------------------

PREVIEWS = textwrap.dedent("""
    import json, sys, threading
    from pathlib import Path
    from banana_space.budget import BUDGET
    from banana_space.sources.images import load_image

    def status_kb(key):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])

    baseline = status_kb("VmRSS:")
    Path("/proc/self/clear_refs").write_text("5")
    sizes = []
    threads = [threading.Thread(target=lambda: sizes.append(load_image(sys.argv[1]).image.size))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"baseline_kb": baseline, "peak_kb": status_kb("VmHWM:"),
                      "budget": BUDGET.capacity, "sizes": sizes}))
""")


def test_eight_concurrent_previews_of_a_huge_flat_png_stay_within_the_budget(tmp_path) -> None:
    from PIL import Image

    from banana_space.budget import decode_bytes

    upload = tmp_path / "flat.png"
    Image.new("RGB", (8000, 8000), (120, 130, 140)).save(upload, optimize=True)
    assert upload.stat().st_size < 400_000  # a tiny upload that declares 64 megapixels
    budget = 1.5 * decode_bytes(8000 * 8000)  # one decode at a time
    environment = {**os.environ, "BANANA_MEMORY_GB": str(budget / GB), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", PREVIEWS, str(upload)], env=environment,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["sizes"] == [[2048, 2048]] * 8
    added = (report["peak_kb"] - report["baseline_kb"]) * 1024
    assert added <= report["budget"], (added / GB, report["budget"] / GB)


def test_an_image_that_could_never_be_decoded_within_the_budget_is_refused(tmp_path) -> None:
    from PIL import Image

    upload = tmp_path / "big.png"
    Image.new("RGB", (3000, 3000)).save(upload)
    environment = {**os.environ, "BANANA_MEMORY_GB": "0.05", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys; from banana_space.sources.images import BadImage, load_image\n"
         "try:\n    load_image(sys.argv[1])\nexcept BadImage as error:\n    print(error)",
         str(upload)], env=environment, capture_output=True, text=True, timeout=600)
    assert "decoding 3000 x 3000 pixels needs about" in done.stdout, done.stderr[-2000:]
