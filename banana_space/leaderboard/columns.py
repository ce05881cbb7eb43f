"""The leaderboard's columns: one table that every surface reads, as `verdict.columns` is for a
metric's verdict (and pyiqa keeps every metric's metadata in one `DEFAULT_CONFIGS`).

An entrant's standing (`Standing`: its verdict rows on the damage and the nuisance chains, its
cost) is shown in four places: `leaderboard.csv` (`FIELDS`, `board_record`), the HTML report
(`report.board_table`, the columns with `report`), the Space's tab (`page/leaderboard_tab.py`,
the columns with a `page` cell, in the order of their `rank`) and the command line's summary
(`cli_lines`, the columns with a `cli` header). Each reads `COLUMNS` below in its order, so a
new column is one `BoardColumn` in that tuple.

A column of kind "rate" counts the verdicts its `value` gives (an undecided one as not
detected) and brings its 95 % Wilson interval (Wilson, JASA 1927) into the file as
`<field>_low` and `<field>_high`; "chain" is a chain's name, which the report and the tab link
to its picture.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..verdict import analysis
from ..verdict.history import VerdictRow

Kind = Literal["text", "number", "rate", "chain"]
Rows = list[tuple[str, VerdictRow]]  # (chain name, the entrant's verdict row on it)


@dataclass(frozen=True)
class Entrant:
    """One score on the board: what `catalog.metric_info` says of it."""

    metric: str
    family: str
    label: str
    unavailable: str = ""  # why it could not be scored here


@dataclass(frozen=True)
class Standing:
    """What a column's value is read from: one entrant's verdict rows on the damage chains and
    the nuisance chains, what each chain's profile depends on by design, and its cost."""

    entrant: Entrant
    damage: Rows
    nuisance: Rows
    dependence: Mapping[str, str]  # damage chain -> how its profile depends on this score
    artifacts: Mapping[str, str]  # chain -> its artifact
    seconds: float | None = None

    def robust(self) -> list[bool | None] | None:
        """The robust verdicts on damage chains; None where the score has no noise floor."""
        found = [row.detects_robust for _, row in self.damage]
        return None if all(value is None for value in found) else found


@dataclass(frozen=True)
class PageCell:
    """A column on the Space's tab: its header, where it stands (`rank`) and gradio's type."""

    header: str
    rank: int
    datatype: str = "number"


@dataclass(frozen=True)
class BoardColumn:
    """One column of the leaderboard, on every surface that shows it.

    Attributes:
        field: its name in leaderboard.csv.
        kind: how a value is written and shown (`Kind`).
        value: the standing's value; for a "rate", the verdicts it counts (None: not asked).
        report: shown in the HTML report's table.
        page: its cell on the Space's tab, or None.
        cli: its header in the command line's summary, or None.
    """

    field: str
    kind: Kind
    value: Callable[[Standing], Any]
    report: bool = True
    page: PageCell | None = None
    cli: str | None = None

    @property
    def fields(self) -> list[str]:
        """Its names in leaderboard.csv (a rate's interval beside it)."""
        return [self.field, *((f"{self.field}_low", f"{self.field}_high")
                              if self.kind == "rate" else ())]

    def record(self, standing: Standing) -> list[Any]:
        """Its cells in leaderboard.csv."""
        value = self.value(standing)
        if self.kind != "rate":
            return [value]
        if not value:
            return [None, None, None]
        return [rate(value), *interval(value)]


def rate(values: Sequence[bool | None]) -> float | None:
    """The share of True among `values` (an undecided verdict counts as not detected)."""
    return round(sum(v is True for v in values) / len(values), 4) if values else None


def wilson_interval(successes: int, trials: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a rate of `successes` in `trials` (at least 1;
    `analysis.wilson_interval`), rounded to 4 places as the tables show it."""
    low, high = analysis.wilson_interval(successes, trials)
    return round(low, 4), round(high, 4)


def interval(values: Sequence[bool | None]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return wilson_interval(sum(v is True for v in values), len(values))


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def mean(values: Sequence[float]) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    return round(sum(finite) / len(finite), 4) if finite else None


def _first(rows: Rows, detects: bool) -> str:
    return next((name for name, row in rows if row.detects is detects), "")


COLUMNS: tuple[BoardColumn, ...] = (
    BoardColumn("metric", "text", lambda s: s.entrant.metric,
                page=PageCell("metric", 0, "str"), cli="metric"),
    BoardColumn("family", "text", lambda s: s.entrant.family,
                page=PageCell("family", 1, "str"), cli="family"),
    BoardColumn("detect_rate", "rate", lambda s: [row.detects for _, row in s.damage],
                page=PageCell("detects (paper)", 2), cli="detects"),
    BoardColumn("detect_rate_robust", "rate", Standing.robust,
                page=PageCell("detects (robust)", 3), cli="robust"),
    BoardColumn("false_alarm_rate", "rate", lambda s: [row.detects for _, row in s.nuisance],
                page=PageCell("false alarms", 4), cli="false alarms"),
    BoardColumn("rho_mean", "number", lambda s: mean([r.spearman_vs_psnr for _, r in s.damage]),
                page=PageCell("ρ vs PSNR", 5), cli="ρ vs PSNR"),
    BoardColumn("seconds_per_frame", "number", lambda s: rounded(s.seconds),
                page=PageCell("s / 1024² frame", 6)),
    BoardColumn("design_dependent_on", "text",
                lambda s: ", ".join(sorted({s.artifacts[name] for name in s.dependence})),
                page=PageCell("design-dependent on", 10, "str")),
    BoardColumn("fooled_on", "chain", lambda s: _first(s.damage, False),
                page=PageCell("fooled on", 7, "markdown")),
    BoardColumn("detects_on", "chain", lambda s: _first(s.damage, True),
                page=PageCell("detects on", 8, "markdown")),
    BoardColumn("unavailable", "text", lambda s: s.entrant.unavailable,
                page=PageCell("unavailable", 11, "str")),
    BoardColumn("label", "text", lambda s: s.entrant.label, report=False),
    BoardColumn("damage_chains", "number", lambda s: len(s.damage), report=False),
    BoardColumn("nuisance_chains", "number", lambda s: len(s.nuisance), report=False),
)
# The tab's one cell of its own: every rate's 95 % interval, in the rates' order.
INTERVALS = PageCell("95 % intervals", 9, "str")

FIELDS = [name for column in COLUMNS for name in column.fields]
RATES = tuple(column.field for column in COLUMNS if column.kind == "rate")


def board_record(standing: Standing) -> dict[str, Any]:
    """An entrant's row of leaderboard.csv, by field."""
    return dict(zip(FIELDS, [cell for column in COLUMNS for cell in column.record(standing)],
                    strict=True))


def page_headers() -> list[tuple[str, str]]:
    """The tab's (header, gradio datatype) in its order."""
    cells = sorted([*(c.page for c in COLUMNS if c.page is not None), INTERVALS],
                   key=lambda cell: cell.rank)
    return [(cell.header, cell.datatype) for cell in cells]


def cli_lines(board: Sequence[Mapping[str, Any]]) -> list[str]:
    """The command line's summary of the board (rows by field, best first): a rate in %."""
    shown = [column for column in COLUMNS if column.cli]

    def cell(column: BoardColumn, row: Mapping[str, Any]) -> str:
        value = row[column.field]
        if value is None or value == "":
            return "–"
        if column.kind == "rate":
            return f"{100 * float(value):.0f} %"
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    widths = [max(len(column.cli or ""), *(len(cell(column, row)) for row in board))
              for column in shown]
    lines = ["  ".join(str(c.cli).ljust(w) for c, w in zip(shown, widths, strict=True))]
    lines += ["  ".join(cell(c, row).ljust(w) for c, w in zip(shown, widths, strict=True))
              for row in board]
    return lines
