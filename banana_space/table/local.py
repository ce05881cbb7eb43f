"""The default driver: a pool of worker processes on this machine.

Workers are spawned (not forked: torch's thread pools do not survive a fork), ignore Ctrl-C
(the driver decides when to stop) and share the cores between them. Each keeps its metrics
for every chain it scores (`work.scorer_for`). Frames scored are reported through a queue, so
the progress bar moves per frame, not per chain.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ..sources.listing import ChainRef
from .work import ChainResult, score_chain_ref

POLL_SECONDS = 0.2
_FRAMES: Any = None  # the worker's end of the frames queue


def _start_worker(frames: Any, threads: int, load_seconds: float | None) -> None:
    global _FRAMES
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _FRAMES = frames
    import torch

    from ..scores.pool import POOL

    if load_seconds is not None:
        POOL.load_seconds = load_seconds
    torch.set_num_threads(threads)


def _work(ref: ChainRef, metrics: tuple[str, ...],
          steps: tuple[int, ...] | None) -> ChainResult:
    return score_chain_ref(ref, metrics, on_frame=lambda: _FRAMES.put(1), steps=steps)


def score_local(refs: Sequence[ChainRef], metrics: tuple[str, ...], workers: int,
                stop: threading.Event, on_frames: Callable[[int], None],
                on_result: Callable[[ChainResult], None],
                load_seconds: float | None = None,
                steps: tuple[int, ...] | None = None) -> bool:
    """Score `refs` (at `steps` only, unless None), handing each result to `on_result` as it
    comes; False if stopped. Each worker's metric pool waits `load_seconds` for a creation
    (None: its own settings')."""
    context = multiprocessing.get_context("spawn")
    frames = context.Queue()
    threads = max(1, (os.cpu_count() or 1) // workers)
    with context.Pool(workers, initializer=_start_worker,
                      initargs=(frames, threads, load_seconds)) as pool:
        results = pool.imap_unordered(partial(_work, metrics=metrics, steps=steps), refs)
        for _ in refs:
            while True:
                _drain(frames, on_frames)
                if stop.is_set():
                    pool.terminate()  # chains in flight are lost; a rerun scores them
                    return False
                try:
                    result = results.next(timeout=POLL_SECONDS)
                    break
                except multiprocessing.TimeoutError:
                    continue
            _drain(frames, on_frames)
            on_result(result)
    return True


def _drain(frames: Any, on_frames: Callable[[int], None]) -> None:
    count = 0
    while True:
        try:
            count += frames.get_nowait()
        except queue.Empty:
            break
    if count:
        on_frames(count)
