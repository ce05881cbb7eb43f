"""Two chains from one upload, side by side: settings A and B (generator or profile, the start
as it is or smoothed, prompt, seed), run at once from the same input, the input scored once.

`start_pair` checks both sides before anything is written (every refusal of `start_run`
applies to each), starts A, then B, and yields both runs' events tagged with their side. If B
cannot start, or fails on the way, A goes on and the comparison says which side failed and
why. Both runs are ordinary runs (each its own folder, zip and link); `compare.json` in each
names the pair, and at the end run A's folder gets the comparison's zip (both runs' zips, the
A/B verdict table and the record). The page and the API call this; nothing here is gradio.
"""

from __future__ import annotations

import contextvars
import csv
import io
import json
import queue
import threading
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from scipy import ndimage

from ..verdict.analysis import History, VerdictRow, plain_verdict
from ..backends import REGISTRY as BACKENDS
from ..budget import BUDGET, MemoryBudget
from ..common import error_line, temporary_name, write_atomic
from ..events import Event, Finished, Started
from ..sources.images import LoadedImage
from ..scores.pool import POOL, MetricPool
from ..prompts import DEFAULT_PROMPT
from ..store.run import Run
from ..chain.runs import start_run
from ..scores.scoring import InputScores
from ..chain.spec import RunSpec, check_spec, public_options

SIDES = ("A", "B")
# The smoothed start of issue 43's audit ("smoothed by 1.5 px"): a Gaussian of σ 1.5 px per
# channel, which makes a rough photograph's start more like the paper's generated ones.
SMOOTH_SIGMA = 1.5
IDENTICAL = ("A and B are the same settings, so the two chains would be one chain twice: "
             "change the generator or profile, the start (as it is or smoothed), the prompt "
             "or the seed of one side.")


@dataclass(frozen=True)
class Side:
    """One side's settings: the generator and its options, the start, the prompt, the seed."""

    backend: str = "simulate"
    options: dict[str, Any] = field(default_factory=dict)  # e.g. {"profile": "white-noise"}
    smoothed: bool = False  # the start smoothed by `SMOOTH_SIGMA` px, or as it is
    prompt: str = DEFAULT_PROMPT
    seed: int = 0

    def with_defaults(self) -> Side:
        """The side with its backend's option defaults written out (blank profile = the
        default one), so that two spellings of one setting compare equal."""
        entry = BACKENDS.get(self.backend)
        if entry is None:
            return self
        defaults = {o.name: o.default for o in entry.info.options
                    if o.default is not None and not o.secret}
        given = {k: v for k, v in self.options.items() if v not in ("", None)}
        return replace(self, options={**defaults, **given})

    def public(self) -> dict[str, Any]:
        """The side as a comparison records and shows it: no secret."""
        record = asdict(self.with_defaults())
        record["options"] = public_options(record["options"])
        return record

    def label(self) -> str:
        """A short name: "simulate · white-noise · smoothed"."""
        parts = [self.backend, *(str(v) for k, v in sorted(self.with_defaults().options.items())
                                 if k == "profile")]
        return " · ".join(parts + (["smoothed"] if self.smoothed else []))


def check_pair(a: Side, b: Side) -> None:
    """Raise ValueError (`IDENTICAL`) when A and B would make the same chain."""
    if a.with_defaults() == b.with_defaults():
        raise ValueError(IDENTICAL)


def smooth_start(image: Image.Image, sigma: float = SMOOTH_SIGMA) -> Image.Image:
    """The start smoothed: a Gaussian of `sigma` px on each channel, rounded back to 8 bits."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.float32)
    blurred = ndimage.gaussian_filter(pixels, (sigma, sigma, 0), mode="reflect")
    return Image.fromarray(np.clip(np.rint(blurred), 0, 255).astype(np.uint8))


def side_specs(loaded: LoadedImage, steps: int, sides: Sequence[Side],
               metrics: Sequence[str]) -> list[RunSpec]:
    """Each side's `RunSpec`, checked (`check_spec`'s ValueError names the side). Sides with
    the same start share one image object, so their input is scored once."""
    smoothed = smooth_start(loaded.image) if any(s.smoothed for s in sides) else None
    specs = []
    for name, side in zip(SIDES, sides, strict=True):
        notes = list(loaded.notes) + ([f"smoothed by a Gaussian of σ {SMOOTH_SIGMA} px "
                                       "(compare mode)"] if side.smoothed else [])
        spec = RunSpec(smoothed if side.smoothed else loaded.image, steps, side.backend,
                       dict(side.options), side.prompt, side.seed, list(metrics),
                       image_notes=notes)
        try:
            check_spec(spec)
        except ValueError as error:
            raise ValueError(f"side {name}: {error}") from None
        specs.append(spec)
    return specs


@dataclass(frozen=True)
class SideEvent:
    """One run's event, tagged with its side ("A" or "B")."""

    side: str
    event: Event


@dataclass(frozen=True)
class SideFailed:
    """A side that could not start: the other goes on without it."""

    side: str
    reason: str


_END = object()


def start_pair(loaded: LoadedImage, steps: int, a: Side, b: Side, metrics: Sequence[str],
               root: Path, *, stop: threading.Event | None = None, pool: MetricPool = POOL,
               budget: MemoryBudget = BUDGET, lesson: str | None = None
               ) -> Iterator[SideEvent | SideFailed]:
    """Check both sides and start both chains from one input.

    Args:
        loaded: the checked input image.
        steps: each chain's steps.
        a, b: the two sides' settings (they must differ: `check_pair`).
        metrics: the metrics both sides score with.
        root: the runs folder; each side gets a fresh run directory in it.
        stop: set it to stop both chains after the frames being made.
        pool, budget: as `start_run`'s; each chain reserves its own frames' memory.
        lesson: the lesson's key, recorded with the pair, if it was one.
    Returns:
        Both runs' events as they come (`SideEvent`), `SideFailed` for a side that could not
        start. The comparison (`compare.json`, then its zip) is written as they go.
    Raises:
        ValueError, BackendUnavailable, BadImage: before anything is written, if the pair is
        identical, either side's spec is bad, or A cannot start.
    """
    check_pair(a, b)
    specs = side_specs(loaded, steps, (a, b), metrics)
    stop = stop or threading.Event()
    shared = InputScores()
    first = start_run(specs[0], root, stop=stop, pool=pool, budget=budget, input_scores=shared)
    record = {"a": None, "b": None, "steps": steps, "metrics": list(metrics), "lesson": lesson,
              "sides": {"A": a.public(), "B": b.public()}, "failed": {}}
    try:
        second = start_run(specs[1], root, stop=stop, pool=pool, budget=budget,
                           input_scores=shared)
    except Exception as error:  # noqa: BLE001 - any reason B cannot start is shown; A goes on
        record["failed"]["B"] = error_line(error)
        second = None
    return _paired(first, second, record, root)


def _paired(first: Iterator[Event], second: Iterator[Event] | None, record: dict[str, Any],
            root: Path) -> Iterator[SideEvent | SideFailed]:
    """Both chains' events through one queue, each pulled on its own thread (so neither waits
    for the other's reader); the record written once both have started and again when a side
    ends, the zip at the end. Closing this closes both chains at their next event (each is
    then recorded as interrupted, as a lone run whose visitor left)."""
    if record["failed"]:
        yield SideFailed("B", record["failed"]["B"])
    inbox: queue.Queue = queue.Queue()
    abandoned = threading.Event()
    chains = {"A": first, **({"B": second} if second is not None else {})}
    for side, events in chains.items():
        threading.Thread(target=contextvars.copy_context().run,
                         args=(_pump, side, events, inbox, abandoned),
                         name=f"compare-{side}", daemon=True).start()
    running = len(chains)
    try:
        while running:
            side, event = inbox.get()
            if event is _END:
                running -= 1
                continue
            if isinstance(event, Started):
                record[side.lower()] = Path(event.run_dir).name
            elif isinstance(event, Finished) and event.status == "failed":
                record["failed"][side] = event.reason or "failed"
            if isinstance(event, (Started, Finished)) and all(record[s.lower()] for s in chains):
                write_record(root, record)
            yield SideEvent(side, event)
    finally:
        abandoned.set()  # the pumps close their chains at their next event
    write_compare_zip(root, record)


def _pump(side: str, events: Iterator[Event], inbox: queue.Queue,
          abandoned: threading.Event) -> None:
    """Pull one chain's events into `inbox` until it ends, or until its reader has gone."""
    try:
        for event in events:
            if abandoned.is_set():
                break
            inbox.put((side, event))
    except Exception as error:  # noqa: BLE001 - a fault of one side ends that side, said so
        inbox.put((side, Finished("failed", -1, error_line(error))))
    finally:
        events.close()
        inbox.put((side, _END))


def write_record(root: Path, record: dict[str, Any]) -> None:
    """`compare.json` into each run of the pair."""
    data = json.dumps(record, indent=1, ensure_ascii=False).encode()
    for side in ("a", "b"):
        if record[side]:
            write_atomic(Run(root / record[side]).compare_file, data)


def read_record(run: Run) -> dict[str, Any] | None:
    """The comparison `run` is a side of, or None."""
    try:
        return json.loads(run.compare_file.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


@dataclass(frozen=True)
class PairRow:
    """One score's verdicts on both sides (None: the side has no such column)."""

    metric: str
    role: str
    a: VerdictRow | None
    b: VerdictRow | None


def pair_rows(a: History, b: History | None) -> list[PairRow]:
    """A's and B's verdict rows side by side, in A's column order (B's extra ones after)."""
    rows_a = {row.metric: row for row in a.verdict()}
    rows_b = {row.metric: row for row in b.verdict()} if b is not None else {}
    names = list(dict.fromkeys([*rows_a, *rows_b]))
    return [PairRow(name, (rows_a.get(name) or rows_b[name]).role, rows_a.get(name),
                    rows_b.get(name)) for name in names]


def last_checkpoint(row: VerdictRow | None) -> float:
    """The paper's Δ (from step 1, oriented) at the last of CHECKPOINTS the run reached; NaN
    where it reached none (or has no such score)."""
    reached = [d for d in row.at_checkpoints if d == d] if row is not None else []
    return reached[-1] if reached else float("nan")


PAIR_FIELDS = ("metric", "role", "a_detects", "a_delta_last_checkpoint", "b_detects",
               "b_delta_last_checkpoint")


def pair_csv(rows: Sequence[PairRow]) -> str:
    """The A/B verdict table as CSV (the comparison zip's comparison.csv)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(PAIR_FIELDS)
    for row in rows:
        writer.writerow([row.metric, row.role,
                         plain_verdict(row.a.detects) if row.a else "",
                         f"{last_checkpoint(row.a):.6g}",
                         plain_verdict(row.b.detects) if row.b else "",
                         f"{last_checkpoint(row.b):.6g}"])
    return out.getvalue()


def histories(root: Path, record: dict[str, Any]) -> tuple[History, History | None]:
    """The pair's saved histories (B's None where it never started)."""
    a = Run(root / record["a"]).load().history
    b = Run(root / record["b"]).load().history if record["b"] else None
    return a, b


def write_compare_zip(root: Path, record: dict[str, Any]) -> Path | None:
    """The comparison's download in run A's folder: both runs' zips, comparison.csv (the A/B
    verdict table by the paper's test) and compare.json; None without a run A."""
    if not record["a"]:
        return None
    run_a = Run(root / record["a"])
    target = run_a.compare_zip_path
    temporary = temporary_name(target)
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
        for side in ("a", "b"):
            run = Run(root / record[side]) if record[side] else None
            if run is not None and run.zip_path.is_file():
                archive.write(run.zip_path, f"{side.upper()}-{run.zip_path.name}",
                              zipfile.ZIP_STORED)
        archive.writestr("comparison.csv", pair_csv(pair_rows(*histories(root, record))))
        archive.writestr("compare.json", json.dumps(record, indent=1, ensure_ascii=False))
    temporary.replace(target)
    return target
