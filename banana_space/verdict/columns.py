"""The verdict's columns: one table that every surface reads (as pyiqa keeps every metric's
metadata in one `DEFAULT_CONFIGS`).

A metric's verdict (`history.VerdictRow`) is shown in six places: the run's `verdict.csv` and
the table's `verdicts.csv` (`file_cells`), the API's and MCP's answer (`api_cells`), the page's
table (`page_headers`, `page_cells`) and which of its columns a phone leaves out
(`phone_hidden`), the A/B table of a comparison (`pair_headers`, `pair_fields`, `pair_cells`,
`pair_record`) and the CLI's summary (`cli_header`, `cli_cells`). Each reads `COLUMNS` below in
its order, so a new column is one `Column` in that tuple.

The files and the API keep the table's order; the page sorts its own columns by `page.rank`
(the answer first: the verdicts, then the scores, then the checkpoints), and a phone-wide page
leaves out the columns whose `page.phone` is False.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .analysis import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_HEADERS,
    CHECKPOINTS,
    FIRST_COPY,
    REFERENCE_METRIC,
    SINCE_INPUT_HEADER,
    Verdict,
)
from .history import History, VerdictRow
from .plots import display_name, value_text

Kind = Literal["number", "verdict", "steps", "text"]


@dataclass(frozen=True)
class Shown:
    """What a page cell may need beyond its row: the run's scores so far, and whether its
    verdicts may still change (`analysis.provisional`)."""

    history: History
    going_on: bool = False


@dataclass(frozen=True)
class PageCell:
    """A column on the page's table: its header, its cell, where it stands (`rank`, the answer
    first) and whether a phone-wide page keeps it."""

    header: str
    cell: Callable[[VerdictRow, Shown], str]
    rank: int
    phone: bool = True


@dataclass(frozen=True)
class Column:
    """One column of a metric's verdict, on every surface that shows it.

    Attributes:
        field: its name in verdict.csv, verdicts.csv and the API's answer ("delta_5").
        value: the row's value (a number, a verdict's True/False/None, steps or text).
        kind: how a value is written: a number (NaN is missing), a verdict (its words,
            `analysis.Verdict`), checkpoint steps, or text.
        files: written to verdict.csv and the table's verdicts.csv.
        api: in the API's answer (a blank text is left out).
        page: its place on the page's table, or None.
        cli: its header in the CLI's summary, or None; `cli_format` its numbers' format.
        pair: in the A/B table of a comparison, once per side ("A: …", "a_…").
    """

    field: str
    value: Callable[[VerdictRow], Any]
    kind: Kind
    files: bool = True
    api: bool = True
    page: PageCell | None = None
    cli: str | None = None
    cli_format: str = ".3g"
    pair: str | None = None  # the A/B table's header (per side); None: not there


def _fmt(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.3g}"


def meaning(delta: float) -> str:
    """An oriented Δ with what it means: "+43.6 better", "−12.2 worse", "0 same"."""
    if math.isnan(delta):
        return ""
    word = "better" if delta > 0 else "worse" if delta < 0 else "same"
    return f"{delta:+.3g} {word}" if delta else "0 same"


def last_checkpoint(row: VerdictRow | None) -> float:
    """The paper's Δ (from step 1, oriented) at the last of CHECKPOINTS the run reached; NaN
    where it reached none (or has no such score)."""
    reached = [d for d in row.at_checkpoints if d == d] if row is not None else []
    return reached[-1] if reached else math.nan


# ---- the page's cells that are more than a value ------------------------------------------------

# A row with no score column of its own: the room's votes (`banana_space.votes`), whose
# verdict is read from the votes, not from scores.
def _label(row: VerdictRow, shown: Shown) -> str:
    if row.metric not in shown.history.infos:
        return f"{row.metric} (the room's votes)"
    info = shown.history.infos[row.metric]
    return display_name(info) + (" (reference)" if info.role != "metric" else "")


def _verdict(row: VerdictRow, shown: Shown) -> str:
    return Verdict(row.detects).on_page(shown.going_on, used=row.checkpoints_used) + (
        f" ({row.undecided_because})" if row.undecided_because else "")


def _beyond_floor(row: VerdictRow, shown: Shown) -> str:
    return Verdict(row.detects_robust).on_page(shown.going_on, robust=True)


def _score_span(row: VerdictRow, shown: Shown) -> str:
    """"85.5 → 28.3 → 41.9", the raw scores at the input, the first copy (the paper's base)
    and now; a fidelity column starts "identical" (frame 0 against itself, which pyiqa
    writes as a cap)."""
    if row.metric not in shown.history.infos:
        return ""
    info, series = shown.history.infos[row.metric], shown.history.scores[row.metric]
    if not series:
        return ""
    spans = ["identical" if info.role == "fidelity" else value_text(row.metric, series[0])]
    if len(series) > FIRST_COPY:  # the paper's base; "?" where it has no score
        spans.append(value_text(row.metric, series[FIRST_COPY]) or "?")
    if len(series) > FIRST_COPY + 1:
        spans.append(value_text(row.metric, series[-1]))
    return " → ".join(spans)


def _delta_now(row: VerdictRow, shown: Shown) -> str:
    if row.metric not in shown.history.infos:
        return ""
    deltas = shown.history.deltas(row.metric)
    return meaning(deltas[-1]) if deltas else ""


def _since_input(row: VerdictRow, shown: Shown) -> str:
    return "; ".join(t for t in (meaning(row.delta_since_input), row.input_contrast) if t)


def _at(step: int) -> Callable[[VerdictRow, Shown], str]:
    """A checkpoint's cell: "—" where it lies beyond the run so far."""
    return lambda row, shown: (_fmt(row.delta_at(step)) if step <= shown.history.last_step
                               else "—")


def _rho(row: VerdictRow, shown: Shown) -> str:
    return "" if row.metric == REFERENCE_METRIC else _fmt(row.spearman_vs_psnr)


def _page_only(field: str, header: str, cell: Callable[[VerdictRow, Shown], str],
               rank: int) -> Column:
    """A column the page alone shows: made from the run's scores, not a field of the row."""
    return Column(field, lambda row: None, "text", files=False, api=False,
                  page=PageCell(header, cell, rank))


COLUMNS: tuple[Column, ...] = (
    Column("metric", lambda row: row.metric, "text", api=False,
           page=PageCell("metric", _label, 0)),
    *(Column(field, (lambda row, step=step: row.delta_at(step)), "number",
             page=PageCell(header, _at(step), 10 + index, phone=False), cli=header)
      for index, (step, field, header) in enumerate(zip(CHECKPOINTS, CHECKPOINT_FIELDS,
                                                        CHECKPOINT_HEADERS, strict=True))),
    Column("detects", lambda row: row.detects, "verdict",
           page=PageCell("verdict", _verdict, 1), cli="detects", pair="verdict"),
    Column("detects_robust", lambda row: row.detects_robust, "verdict",
           page=PageCell("beyond floor", _beyond_floor, 2), cli="beyond floor"),
    Column("checkpoints_used", lambda row: row.checkpoints_used, "steps"),
    Column("undecided_because", lambda row: row.undecided_because, "text"),
    _page_only("score_span", "score: step 0 → 1 → now", _score_span, 3),
    _page_only("delta_now", "Δ now (from step 1)", _delta_now, 4),
    Column("delta_since_input", lambda row: row.delta_since_input, "number",
           page=PageCell(f"{SINCE_INPUT_HEADER} (now)", _since_input, 5),
           cli=SINCE_INPUT_HEADER),
    Column("worse_than_input", lambda row: row.worse_than_input, "verdict"),
    Column("since_input_note", lambda row: row.input_contrast, "text", files=False),
    Column("spearman_vs_psnr", lambda row: row.spearman_vs_psnr, "number",
           page=PageCell("ρ vs PSNR", _rho, 20, phone=False), cli="ρ vs PSNR", cli_format=".2f"),
    Column("spearman_from_first", lambda row: row.spearman_from_first, "number",
           cli="ρ from 1st", cli_format=".2f"),
    Column("role", lambda row: "" if row.role == "metric" else row.role, "text", files=False),
    Column("delta_last_checkpoint", last_checkpoint, "number", files=False, api=False,
           pair="Δ at its last checkpoint"),
)


# ---- the files ----------------------------------------------------------------------------------

VERDICT_FIELDS = tuple(column.field for column in COLUMNS if column.files)


def _written(column: Column, value: Any) -> Any:
    """A value as the files write it: verdicts in their plain words, steps as "5 10 20"."""
    if column.kind == "verdict":
        return Verdict(value).words.plain
    if column.kind == "steps":
        return " ".join(str(step) for step in value)
    return value


def file_cells(row: VerdictRow) -> list[Any]:
    """The row's cells in VERDICT_FIELDS order (verdict.csv, the table's verdicts.csv)."""
    return [_written(column, column.value(row)) for column in COLUMNS if column.files]


# ---- the API ------------------------------------------------------------------------------------

def _answered(column: Column, value: Any) -> Any:
    if column.kind == "number":
        return None if value is None or math.isnan(value) else round(value, 4)
    if column.kind == "steps":
        return list(value)
    return _written(column, value)


def api_cells(row: VerdictRow) -> dict[str, Any]:
    """One metric's verdict as the API answers it (a blank text left out)."""
    cells = {column.field: _answered(column, column.value(row))
             for column in COLUMNS if column.api}
    return {field: value for field, value in cells.items() if value != ""}


# ---- the page -----------------------------------------------------------------------------------

PAGE_COLUMNS = sorted((column for column in COLUMNS if column.page), key=lambda c: c.page.rank)
VERDICT_HEADERS = [column.page.header for column in PAGE_COLUMNS]
VERDICT_COLUMN = VERDICT_HEADERS.index("verdict")


def page_cells(row: VerdictRow, shown: Shown) -> list[str]:
    """One row of the page's table, in `VERDICT_HEADERS` order."""
    return [column.page.cell(row, shown) for column in PAGE_COLUMNS]


def phone_hidden() -> list[int]:
    """The page table's columns a phone-wide page leaves out, counted from 1 (CSS's
    `nth-child`)."""
    return [index for index, column in enumerate(PAGE_COLUMNS, start=1) if not column.page.phone]


# ---- a comparison's A/B table -------------------------------------------------------------------

PAIR_KEYS = ("metric", "role")  # the A/B table's own: one per score, not per side
SIDES = ("A", "B")
_PAIR_COLUMNS = [column for column in COLUMNS if column.pair]


def pair_headers() -> list[str]:
    """The page's A/B table: "score", then each column per side ("A: verdict", …)."""
    return ["score", *(f"{side}: {column.pair}" for side in SIDES for column in _PAIR_COLUMNS)]


def pair_fields() -> list[str]:
    """comparison.csv's header: the keys, then each column per side ("a_detects", …)."""
    return [*PAIR_KEYS, *(f"{side.lower()}_{column.field}" for side in SIDES
                          for column in _PAIR_COLUMNS)]


def _pair_cell(column: Column, row: VerdictRow | None) -> str:
    """One side's cell on the page ("—" where the side has no such score)."""
    if row is None:
        return "—"
    value = column.value(row)
    if column.kind == "verdict":
        return Verdict(value).on_page(used=row.checkpoints_used)
    return "" if math.isnan(value) else f"{value:+.3g}"


def pair_cells(metric: str, rows: Sequence[VerdictRow | None]) -> list[str]:
    """One score's row of the page's A/B table, for sides A and B."""
    return [metric, *(_pair_cell(column, row) for row in rows for column in _PAIR_COLUMNS)]


def pair_record(metric: str, role: str, rows: Sequence[VerdictRow | None]) -> list[str]:
    """One score's row of comparison.csv ("" where a side has no such score)."""
    cells = [metric, role]
    for row in rows:
        for column in _PAIR_COLUMNS:
            value = column.value(row) if row is not None else None
            cells.append("" if row is None else f"{value:.6g}" if column.kind == "number"
                         else _written(column, value))
    return cells


# ---- the CLI ------------------------------------------------------------------------------------

_CLI_COLUMNS = [column for column in COLUMNS if column.cli]
_CLI_METRIC = 14  # the metric's width
_CLI_NUMBER = 8  # the narrowest number column


def _cli_width(column: Column) -> int:
    return max(len(column.cli), _CLI_NUMBER if column.kind == "number" else 0)


def cli_header() -> str:
    """The CLI summary's header line."""
    cells = [column.cli.rjust(_cli_width(column)) if column.kind == "number"
             else column.cli.ljust(_cli_width(column)) for column in _CLI_COLUMNS]
    return f"{'metric':<{_CLI_METRIC}}" + "  ".join(cells)


def cli_cells(row: VerdictRow) -> str:
    """One metric's line of the CLI summary (numbers right, words left, "-" for missing)."""
    cells = []
    for column in _CLI_COLUMNS:
        value, width = column.value(row), _cli_width(column)
        if column.kind == "verdict":
            cells.append(Verdict(value).words.terse.ljust(width))
        else:
            text = "-" if math.isnan(value) else format(value, column.cli_format)
            cells.append(text.rjust(width))
    return f"{row.metric:<{_CLI_METRIC}}" + "  ".join(cells)
