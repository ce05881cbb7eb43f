"""Making a table: find the chains, score every chain not already scored (on a process pool or
Ray, `local` and `ray_driver`), write the CSVs after each one and the report at the end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from ..files import write_atomic
from ..sources.discover import find_all
from ..sources.images import BadImage
from ..sources.listing import ChainRef
from .report import report_html
from .store import TableStore, table_rows
from .work import ChainResult


def find_chains(sources: Sequence[str]) -> list[ChainRef]:
    """Every chain in `sources`; a clear refusal when there is none."""
    refs = find_all(sources)
    if not refs:
        raise BadImage(f"no chains found in {', '.join(sources)}: a chain is a folder of at "
                       "least 2 frames, a zip, an animated GIF/WebP or a run directory")
    return refs


def run_table(refs: Sequence[ChainRef], metrics: Sequence[str], out: Path, *,
              workers: int | None, ray: bool = False, address: str | None = None,
              stop: threading.Event | None = None, load_seconds: float | None = None,
              on_start: Callable[[list[ChainRef], list[str]], None] = lambda todo, done: None,
              on_frames: Callable[[int], None] = lambda count: None,
              on_chain: Callable[[ChainResult], None] = lambda result: None,
              steps: Sequence[int] | None = None) -> bool:
    """Score every chain not already in `out` (resume), writing the outputs after each one
    and the report at the end. Returns False when `stop` ended it early. `load_seconds`, when
    given, is how long each worker waits for a metric's creation (else its settings' own
    BANANA_METRIC_LOAD_S): handed to the workers as an argument. `steps`, when given, are the
    only steps scored (with the last); the others are NaN, as a run's unscored steps."""
    stop = stop or threading.Event()
    steps = None if steps is None else tuple(sorted(set(steps)))
    store = TableStore(out, metrics, steps)
    done = store.load(ref.name for ref in refs)
    todo = [ref for ref in refs if ref.name not in done]
    on_start(todo, done)
    broken: dict[str, str] = {}

    def finished(result: ChainResult) -> None:
        store.add(result)
        if result.error:
            broken[result.name] = result.error
        store.write()
        on_chain(result)

    if not todo:
        completed = True
    elif ray:
        from .ray_driver import score_ray  # Ray is imported only on this path

        completed = score_ray(todo, tuple(metrics), workers, address, stop, on_frames,
                              finished, load_seconds, steps)
    else:
        from .local import score_local

        completed = score_local(todo, tuple(metrics), workers or 1, stop, on_frames, finished,
                                load_seconds, steps)
    write_report(store, broken, _credits(refs))
    return completed


def _credits(refs: Sequence[ChainRef]) -> list[str]:
    """A hub dataset's licence line and credit, for the report (CC BY licences ask for it)."""
    from ..sources.dispatch import HUB_PREFIX

    roots = sorted({ref.root for ref in refs if ref.root.startswith(HUB_PREFIX)})
    if not roots:
        return []
    from ..sources.hub import credit
    from ..sources.hub_client import parse_hub

    return [credit(parse_hub(root).repo_id) for root in roots]


def write_report(store: TableStore, broken: dict[str, str], credits: Sequence[str] = ()
                 ) -> None:
    verdicts = store.write()
    unavailable = {name: why for result in store.results.values()
                   for name, why in result.unavailable.items()}
    notes = ([*credits] + [f"skipped broken chain {name}: {why}" for name, why in broken.items()]
             + [f"{name} is unavailable: {why}" for name, why in unavailable.items()])
    page = report_html(table_rows(verdicts), verdicts, store.histories(), store.infos(), notes)
    write_atomic(store.out / "report.html", page.encode())
