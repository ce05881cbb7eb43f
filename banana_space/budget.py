"""How much memory scoring and decoding may use, across every run in the process.

A public Space has one container for every visitor: four 2K frames scored at once, unchecked,
take a 16 GB Space past its limit, and every visitor's run dies with it. So each frame to score (and
each large image to decode) first reserves its estimated peak from one `MemoryBudget`; a frame
that does not fit now waits its turn (first come, first served) and is never dropped, and a frame
that could never fit is refused before its run starts.

The budget is `BANANA_MEMORY_GB` if set; otherwise half of what the container may use (its
cgroup limit, or the machine's memory): the other half is the process itself (torch, gradio, the
loaded metrics), the operating system and headroom for estimates that run short.

The estimates are bytes per pixel, measured (not guessed) by bench/memory_costs.py: the peak
resident memory each metric adds while scoring one frame, the largest ratio seen at 512², 1024²
and 2048². A metric the bench did not measure (the deep ones, which need weights) is assumed
to cost as much as the costliest one it did.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from .settings import engine_settings

GB = 1024 ** 3

# Peak bytes per pixel each metric adds while it scores one frame (the frame's tensors already
# made): the largest of 512², 1024² and 2048² printed by `.venv/bin/python bench/memory_costs.py`
# (pyiqa 0.1.16, torch 2.14.1, CPU, with this module's malloc settings; the larger of two runs:
# brisque 100, niqe 419, piqe 99.1, entropy 32, psnr 24, ssim 39.7), plus 10 % and rounded up.
METRIC_BYTES_PER_PIXEL: dict[str, float] = {
    "brisque": 110.0,
    "niqe": 461.0,
    "piqe": 110.0,
    "entropy": 36.0,
    "psnr": 27.0,
    "ssim": 44.0,
}
# The frame's own tensors (image, reference, a resized copy) and their conversion from PIL:
# row "frame", 71.5 (at 512²; 62 at 2048²).
FRAME_BYTES_PER_PIXEL = 79.0
# Decoding an upload, per declared pixel: rows "decode" (3.4) and "decode 4x" (18.8: an upload
# downscaled to the side limit).
DECODE_BYTES_PER_PIXEL = 21.0
# Decoding one frame of an animated GIF/WebP, per pixel of the animation: its decoder's own
# frames, the RGBA copy and the flattening on white. 24.0 at 2000² and 23.1 at 4000² (printed by
# `.venv/bin/python bench/animation_cost.py 2000 4000`), plus 10 % and rounded up.
ANIMATION_FRAME_BYTES_PER_PIXEL = 27.0


# glibc's malloc, set once for the process (elsewhere than glibc these are no-ops).
_LIBC: ctypes.CDLL | None
try:
    _LIBC = ctypes.CDLL("libc.so.6")
except OSError:
    _LIBC = None
GLIBC_MALLOC = _LIBC is not None
# Blocks above this are mapped on their own and unmapped when freed; smaller ones are reused
# from malloc's arena. Just above a 2K frame's float64 plane (2048² x 8 = 32 MiB), so the planes
# pyiqa's metrics make and drop again and again at 2K, and the tiled SSIM's unfolded tiles
# (15 MiB, 1,280 per 2K frame), are reused rather than faulted in and zeroed by the kernel each
# time. Whole RGB frames (48 MiB and up) stay mapped on their own.
MMAP_THRESHOLD = 32 * 1024 ** 2 + 1
# The freed top of the arena kept for reuse rather than given back at once.
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
# One arena for every thread: glibc's default (8 per core) lets each visitor's threads keep
# their own freed memory; scoring is one thread at a time per frame, so sharing costs little.
ARENAS = 1
# What glibc may hold freed between two trims, on top of what the budget counts.
ALLOCATOR_SLACK_BYTES = ARENAS * TRIM_THRESHOLD


def return_freed_memory() -> None:
    """Make glibc reuse what a frame frees, and give it back when the frame is done.

    By default glibc raises its mmap threshold (up to 32 MB) after the first large free, and
    every thread may get its own arena (8 per core) that keeps its peak after the frame is done:
    four visitors scoring in four threads kept twice the budget resident (the test in
    tests/test_budget.py). Here the process has one arena with a fixed threshold and trim
    threshold, and `trim_freed_memory` gives every freed page back each time a frame's
    reservation ends, so what the process holds between frames is what the budget counts plus
    at most `ALLOCATOR_SLACK_BYTES`.

    A low fixed threshold (128 KiB) held memory tighter still, but then every large block was
    mapped, faulted in and zeroed again on each use: one 2K frame spent more time in the kernel
    than in the metrics (bench/scoring_2k.py: ssim 5.5 s instead of 1.6 s, brisque and niqe
    1.5 s more). Torch's huge-page CPU allocator (THP_MEM_ALLOC_ENABLE=1) softens that, but with
    blocks reused it does not help (0-23 % slower at 1024², 9-32 % at 2K, where the kernel
    compacts memory to find huge pages), so it is left off."""
    if _LIBC is None:
        return
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8  # from glibc's malloc.h
    _LIBC.mallopt(m_mmap_threshold, MMAP_THRESHOLD)
    _LIBC.mallopt(m_trim_threshold, TRIM_THRESHOLD)  # left alone, it would stay at 128 KiB
    _LIBC.mallopt(m_arena_max, ARENAS)


def trim_freed_memory() -> None:
    """Give every free page in malloc's arenas back to the system (glibc's `malloc_trim`)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def scoring_bytes(metrics: Iterable[str], pixels: int) -> int:
    """Estimated peak memory to score one frame of `pixels` with `metrics`, one after another
    (so the costliest metric, not their sum, sets the peak)."""
    unmeasured = max(METRIC_BYTES_PER_PIXEL.values())
    per_pixel = max((METRIC_BYTES_PER_PIXEL.get(name, unmeasured) for name in metrics),
                    default=0.0)
    return math.ceil((FRAME_BYTES_PER_PIXEL + per_pixel) * pixels)


def decode_bytes(pixels: int) -> int:
    return math.ceil(DECODE_BYTES_PER_PIXEL * pixels)


def judged_bytes(size: tuple[int, int]) -> int:
    """What a frame waiting for a judge holds: its RGB pixels (`chain.JUDGE_BACKLOG`)."""
    return size[0] * size[1] * 3


def animation_frame_bytes(pixels: int) -> int:
    return math.ceil(ANIMATION_FRAME_BYTES_PER_PIXEL * pixels)


def memory_limit_bytes() -> int:
    """What this process may use: the cgroup's limit (v2, then v1), else the machine's memory."""
    limits = []
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            limits.append(int(text))
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return min([total, *limits])  # "no limit" in v1 is a huge number, above the machine's


def default_budget_bytes() -> int:
    """BANANA_MEMORY_GB where it is set, else half of what this process may use."""
    configured = engine_settings().memory_gb
    if configured is not None:
        return int(configured * GB)
    return memory_limit_bytes() // 2


class Reservation:
    """A place in the budget's queue; memory is ours from `granted` until `release`."""

    def __init__(self, budget: MemoryBudget, nbytes: int) -> None:
        self.budget, self.nbytes, self.granted = budget, nbytes, False

    def wait(self, cancelled: Callable[[], bool] = lambda: False, poll: float = 0.1) -> bool:
        """Block until granted (True), or until `cancelled()` says to give up (False)."""
        with self.budget._changed:
            while not self.granted:
                if cancelled():
                    self.budget._withdraw(self)
                    return False
                self.budget._changed.wait(poll)
        return True

    def release(self) -> None:
        self.budget._release(self)

    def __enter__(self) -> Reservation:
        self.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class MemoryBudget:
    """A first-come, first-served queue for memory. A request larger than the whole budget
    waits until it can run alone (callers refuse those up front, see `fits`).

    What stays resident for the process's life (a loaded metric's weights, `hold`) is counted
    too, up to `HELD_SHARE` of the capacity: frames share what is left."""

    HELD_SHARE = 0.5

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self.held = 0  # of `used`: what `hold` took for good
        self._queue: deque[Reservation] = deque()
        self._changed = threading.Condition()

    def fits(self, nbytes: int) -> bool:
        return nbytes <= self.capacity - self.held

    def hold(self, nbytes: int) -> bool:
        """Count `nbytes` as used from now on (memory already taken that stays: a loaded
        metric), if all that is held stays within `HELD_SHARE` of the capacity; False (and
        nothing counted) if it would not."""
        with self._changed:
            if self.held + nbytes > self.HELD_SHARE * self.capacity:
                return False
            self.held, self.used = self.held + nbytes, self.used + nbytes
        return True

    def request(self, nbytes: int) -> Reservation:
        """Join the queue; the reservation is granted at once if it fits now."""
        reservation = Reservation(self, min(nbytes, self.capacity - self.held))
        with self._changed:
            self._queue.append(reservation)
            self._grant()
        return reservation

    def _grant(self) -> None:
        while self._queue and self.used + self._queue[0].nbytes <= self.capacity:
            head = self._queue.popleft()
            head.granted, self.used = True, self.used + head.nbytes
        self._changed.notify_all()

    def _withdraw(self, reservation: Reservation) -> None:
        if reservation in self._queue:
            self._queue.remove(reservation)
            self._grant()

    def _release(self, reservation: Reservation) -> None:
        if reservation.granted:
            trim_freed_memory()  # the frame's memory is free now: hand it back before the next
        with self._changed:
            if reservation.granted:
                reservation.granted, self.used = False, self.used - reservation.nbytes
            else:
                self._withdraw(reservation)
            self._grant()


def size_text(nbytes: int) -> str:
    return f"{nbytes / GB:.1f} GB" if nbytes >= GB / 10 else f"{nbytes / 1024 ** 2:.0f} MB"


return_freed_memory()
# What glibc may keep freed is held back from the budget: frames share what is left.
BUDGET = MemoryBudget(max(0, default_budget_bytes() - ALLOCATOR_SLACK_BYTES))
