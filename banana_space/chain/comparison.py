"""A comparison: a chain of two sides from one upload (`PairSpec`, as `RunSpec` is a chain of
one), and its one typed record: its two sides, their runs, what failed, and the A/B verdict table,
with its one reader and writer (`compare.json` in each run of the pair) and its zip.

`PairSpec.record` builds the record once and the chain's lifecycle (`lifecycle`) keeps it up to
date as both chains' events pass (the run ids as they start, a failure as it happens, each
side's scores), so nothing is read back from disk while the pair runs; a comparison opened later
is `Comparison.read` from either run.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..events import Event, Started
from ..files import temporary_name, write_atomic
from ..sources.images import LoadedImage
from ..store.run import Run
from ..verdict.columns import SIDES, pair_fields, pair_record
from ..verdict.history import History, VerdictRow
from .sides import Side, check_pair, side_specs
from .spec import RunSpec

RECORDED = ("a", "b", "steps", "metrics", "lesson", "sides", "failed")  # compare.json's keys


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


def pair_csv(rows: Sequence[PairRow]) -> str:
    """The A/B verdict table as CSV (the comparison zip's comparison.csv), its columns the
    verdict table's A/B ones (`verdict.columns`)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(pair_fields())
    writer.writerows(pair_record(row.metric, row.role, (row.a, row.b)) for row in rows)
    return out.getvalue()


@dataclass
class Comparison:
    """Two chains from one upload: each side's settings as recorded (no secret: `Side.public`),
    each side's run id once it has started (`a`, `b`), why a side failed, and the scores seen so
    far (kept in memory while the pair runs, never written)."""

    sides: dict[str, dict[str, Any]]
    steps: int = 0
    metrics: list[str] = field(default_factory=list)
    lesson: str | None = None
    a: str | None = None
    b: str | None = None
    failed: dict[str, str] = field(default_factory=dict)
    histories: dict[str, History] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, a: Side, b: Side, steps: int, metrics: Sequence[str],
           lesson: str | None = None) -> Comparison:
        """A new comparison of sides `a` and `b`, before either run exists."""
        return cls({"A": a.public(), "B": b.public()}, steps, list(metrics), lesson)

    def run_id(self, side: str) -> str | None:
        """Side "A"'s or "B"'s run id, None before it starts (or where it never did)."""
        return self.a if side == "A" else self.b

    def label(self, side: str) -> str:
        """A side's short name: "simulate · white-noise · smoothed"."""
        return Side(**self.sides[side]).label()

    def saw(self, side: str, event: Event) -> None:
        """One side's event: its run id once it starts, and its scores as they come (folded
        into the side's history: a resumed side goes on from the one it had)."""
        if isinstance(event, Started) and event.run_dir is not None:
            if side == "A":
                self.a = Path(event.run_dir).name
            else:
                self.b = Path(event.run_dir).name
        self.histories.setdefault(side, History([])).apply(event)

    def started(self, sides: Sequence[str]) -> bool:
        """Whether every side of `sides` has its run."""
        return all(self.run_id(side) for side in sides)

    def rows(self) -> list[PairRow]:
        """The A/B verdict rows from the scores seen (B's none where it never started)."""
        return pair_rows(self.histories["A"], self.histories.get("B"))

    def to_json(self) -> str:
        return json.dumps({key: getattr(self, key) for key in RECORDED}, indent=1,
                          ensure_ascii=False)

    def write(self, root: Path) -> None:
        """`compare.json` into each run of the pair."""
        data = self.to_json().encode()
        for side in SIDES:
            if self.run_id(side):
                write_atomic(Run(root / self.run_id(side)).compare_file, data)

    @classmethod
    def read(cls, run: Run) -> Comparison | None:
        """The comparison `run` is a side of, or None (no compare.json, or not one of ours)."""
        try:
            recorded = json.loads(run.compare_file.read_text())
            comparison = cls(**{key: recorded[key] for key in RECORDED})
        except (FileNotFoundError, json.JSONDecodeError, KeyError, TypeError):
            return None
        return comparison

    def write_zip(self, root: Path) -> Path | None:
        """The comparison's download in run A's folder: both runs' zips, comparison.csv (the
        A/B verdict table by the paper's test) and compare.json; None without a run A."""
        if not self.a or "A" not in self.histories:
            return None
        target = Run(root / self.a).compare_zip_path
        temporary = temporary_name(target)
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            for side in SIDES:
                run = Run(root / self.run_id(side)) if self.run_id(side) else None
                if run is not None and run.zip_path.is_file():
                    archive.write(run.zip_path, f"{side}-{run.zip_path.name}",
                                  zipfile.ZIP_STORED)
            archive.writestr("comparison.csv", pair_csv(self.rows()))
            archive.writestr("compare.json", self.to_json())
        temporary.replace(target)
        return target


@dataclass(frozen=True)
class PairSpec:
    """Two chains from one upload, side by side: the input, each chain's steps, sides A and B
    (which must differ), the metrics both score with, and the lesson it is, if one."""

    loaded: LoadedImage
    steps: int
    a: Side
    b: Side
    metrics: Sequence[str]
    lesson: str | None = None

    def checked_sides(self) -> dict[str, RunSpec]:
        """Each side's `RunSpec` by its side, checked: `ValueError` for an identical pair or a
        side's bad setting (naming the side)."""
        check_pair(self.a, self.b)
        specs = side_specs(self.loaded, self.steps, (self.a, self.b), self.metrics)
        return dict(zip(SIDES, specs, strict=True))

    def record(self) -> Comparison:
        """The pair's record, before either run exists."""
        return Comparison.of(self.a, self.b, self.steps, self.metrics, self.lesson)
