"""The Ray driver: the same per-chain function (`work.score_chain_ref`) in Ray actors.

Ray is an optional extra (`pip install -r requirements-ray.txt`), imported only here. `--ray`
alone starts a local Ray; `--ray ADDRESS` (or `auto`) joins a running cluster (`ray up`,
KubeRay). One actor per worker holds one metric pool for every chain it scores (Ray's advice:
keep the work a plain function, and use actors only for state such as loaded models); on a
cluster with GPUs each actor takes one (`num_gpus=1`). Results stream back as each chain ends
and are written by the driver into the same files as the local path. On a cluster, a local
folder must be on a filesystem every node sees; a hub source is fetched by each worker itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..sources.listing import ChainRef
from .work import ChainResult, score_chain_ref

POLL_SECONDS = 0.2


class ChainWorker:
    """One metric pool per actor, reused for every chain this actor scores."""

    def __init__(self, metrics: tuple[str, ...], threads: int,
                 load_seconds: float | None = None,
                 steps: tuple[int, ...] | None = None) -> None:
        import torch

        from ..scores.pool import POOL

        torch.set_num_threads(threads)
        if load_seconds is not None:
            POOL.load_seconds = load_seconds
        self.metrics, self.steps = metrics, steps

    def score(self, ref: ChainRef) -> ChainResult:
        return score_chain_ref(ref, self.metrics, steps=self.steps)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError("--ray needs Ray: pip install -r requirements-ray.txt") from None
    return ray


def score_ray(refs: Sequence[ChainRef], metrics: tuple[str, ...], workers: int | None,
              address: str | None, stop: threading.Event, on_frames: Callable[[int], None],
              on_result: Callable[[ChainResult], None],
              load_seconds: float | None = None,
              steps: tuple[int, ...] | None = None) -> bool:
    """Score `refs` (at `steps` only, unless None) on Ray; False if stopped. `address` None starts a
    local Ray with `workers` CPUs; otherwise joins that cluster and uses `workers` actors (default:
    one per GPU, else one per CPU). Each actor's metric pool waits `load_seconds` for a creation
    (None: its own settings')."""
    ray = _ray()
    local = address is None
    ray.init(address=address, num_cpus=workers if local else None, include_dashboard=False,
             logging_level="ERROR", log_to_driver=False)
    try:
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        count = workers or gpus or int(resources.get("CPU", 1))
        actor = ray.remote(num_cpus=1, num_gpus=1 if gpus else 0)(ChainWorker)
        threads = max(1, int(resources.get("CPU", 1)) // count)
        actors = [actor.remote(metrics, threads, load_seconds, steps)
                  for _ in range(min(count, len(refs)))]
        todo = list(refs)
        pending: dict[Any, tuple[Any, ChainRef]] = {}

        def give(worker: Any) -> None:
            if todo:
                ref = todo.pop(0)
                pending[worker.score.remote(ref)] = (worker, ref)

        for worker in actors:
            give(worker)
        while pending:
            if stop.is_set():
                for worker in actors:
                    ray.kill(worker)
                return False
            done, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_SECONDS)
            for reference in done:
                worker, ref = pending.pop(reference)
                try:
                    result = ray.get(reference)
                except Exception as error:  # a lost actor or node: this chain is reported
                    result = ChainResult(ref.name, list(metrics), error=f"Ray: {error}")
                on_frames(result.frames)
                on_result(result)
                give(worker)
        return True
    finally:
        ray.shutdown()
