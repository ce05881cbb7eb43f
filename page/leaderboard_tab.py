"""The Space's Leaderboard tab: the committed results of `banana-space leaderboard`
(docs/leaderboard/), sortable (click a column's header) and filtered by family and artifact.

Each row links to an example chain where that score is fooled and one where it detects the
damage: the magnifier's crop of the chain's first and last frames, served from
docs/leaderboard/chains/. A plain `gr.Dataframe` with two filters, not `gradio_leaderboard`
(its latest release, 0.0.14, requires gradio < 6). Layout only: the numbers come from the CSVs
the command wrote, and its columns from the board's one table
(`banana_space.leaderboard.columns`).
"""

from __future__ import annotations

import csv
import json
from urllib.parse import quote

import gradio as gr

from banana_space.backends.simulate import PROFILES
from banana_space.leaderboard.columns import (
    COLUMNS,
    INTERVALS,
    RATES,
    BoardColumn,
    page_headers,
)
from banana_space.leaderboard.report import card_name
from page.settings import REPO

RESULTS = REPO / "docs" / "leaderboard"
CARDS = RESULTS / "chains"
FAMILIES = ["pyiqa", "ours", "judge", "plug-in"]
ALL = "all damage"
SHOWN = [column for column in COLUMNS if column.page is not None]
# The tab's headers and types (`columns.page_headers`: each shown column, and the intervals).
HEADERS, DATATYPES = (list(found) for found in zip(*page_headers(), strict=True))
gr.set_static_paths([CARDS])  # the chains' pictures, linked from the table's rows


def read_csv(name: str) -> list[dict[str, str]]:
    path = RESULTS / name
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _number(text: str, percent: bool = False) -> float | None:
    if text in ("", None):
        return None
    value = float(text)
    return round(100 * value) if percent else round(value, 3)


def chain_link(chain: str) -> str:
    """Markdown: the chain's name linking to its picture (first | last frame, magnified)."""
    if not chain:
        return ""
    label = " · ".join(chain.split("/")[1:]) or chain
    return f"[{label}](/gradio_api/file={quote(str(CARDS / card_name(chain)))})"


def intervals(row: dict[str, str], rates: tuple[str, ...]) -> str:
    """The rates' 95 % Wilson intervals in %, in the table's order: "38–71 · 20–55 · 0–9"."""
    return " · ".join("–" if row.get(f"{rate}_low", "") == "" else
                      f"{_number(row[f'{rate}_low'], True)}–{_number(row[f'{rate}_high'], True)}"
                      for rate in rates)


def _cell(column: BoardColumn, row: dict[str, str]) -> object:
    """A column's cell as the tab shows it (`columns.COLUMNS`): a rate in %, a chain linked to
    its picture."""
    value = row.get(column.field, "")
    if column.kind == "rate":
        return _number(value, True)
    if column.kind == "number":
        return _number(value)
    if column.kind == "chain":
        return chain_link(value)
    return value


def _picked(row: dict[str, str], artifact: str, of_artifact: dict[str, str]) -> dict[str, str]:
    """An entrant's row over all damage chains, or (an artifact picked) over that artifact's
    chains: its detection rates from artifacts.csv, no false alarms (those are measured on the
    nuisance chains), and the artifact itself where its profile depends on the score."""
    if artifact == ALL:
        return row
    rates = {name: of_artifact.get(name, "") for rate in RATES[:2]
             for name in (rate, f"{rate}_low", f"{rate}_high")}
    alarms = {name: "" for name in ("false_alarm_rate", "false_alarm_rate_low",
                                    "false_alarm_rate_high")}
    return {**row, **rates, **alarms,
            "design_dependent_on": artifact if of_artifact["design_dependence"] else ""}


def rows(family: str, artifact: str, show_unavailable: bool) -> list[list[object]]:
    """The board's rows for the filters: over all damage chains, or one artifact's chains
    (then "false alarms" is blank: it is measured on the nuisance chains). A score the
    artifact's profile depends on by design says so in "design-dependent on"."""
    board = read_csv("leaderboard.csv")
    by_artifact = {row["metric"]: row for row in read_csv("artifacts.csv")
                   if row["artifact"] == artifact}
    shown = []
    for row in board:
        if family != "all" and row["family"] != family:
            continue
        if row["unavailable"] and not show_unavailable:
            continue
        if artifact != ALL and row["metric"] not in by_artifact:
            continue
        picked = _picked(row, artifact, by_artifact.get(row["metric"], {}))
        rates = RATES if artifact == ALL else RATES[:2]
        cells = {column.page.header: _cell(column, picked) for column in SHOWN if column.page}
        cells[INTERVALS.header] = intervals(picked, rates)
        shown.append([cells[header] for header in HEADERS])
    return shown


def _by_kind(kinds: dict[str, str], kind: str) -> str:
    return ", ".join(name for name, found in kinds.items() if found == kind) or "none"


def nuisance_check() -> str:
    """The smallest |PSNR Δ5 from step 1| over the nuisance chains (nuisances.csv): above 0,
    their copies really vary, so a false alarm could happen."""
    moves = [abs(float(row["psnr_delta_5"])) for row in read_csv("nuisances.csv")
             if row["psnr_delta_5"] not in ("", "nan")]
    if not moves:
        return ""
    return (f" On every one of the {len(moves)} nuisance chains the copies really vary: "
            f"PSNR's Δ5 from step 1 is {min(moves):.3g}–{max(moves):.3g} dB in size, never 0.")


def scored(suite: dict) -> str:
    steps = suite.get("scored_steps")
    return ("every frame scored" if steps is None else
            f"scored at steps {', '.join(map(str, steps))}")


def scored_entries() -> list[str]:
    """The scores that ran and were timed here (a judge's cost is its own benchmark's)."""
    return [row["metric"] for row in read_csv("leaderboard.csv") if not row["unavailable"]
            and row["seconds_per_frame"]]


def design_dependences() -> str:
    """"noise_level for nano-banana-pro, granular (how); …": every profile's design dependence,
    from the profiles' table, one entry per score and how."""
    found: dict[tuple[str, str], list[str]] = {}
    for name, profile in PROFILES.items():
        for metric, how in profile.designed_with:
            found.setdefault((metric, how), []).append(name)
    return "; ".join(f"{metric} for {', '.join(names)} ({how})"
                     for (metric, how), names in found.items()) or "none"


def about() -> str:
    """What ran, read from suite.json and the checks the command wrote beside it."""
    path = RESULTS / "suite.json"
    if not path.is_file():
        return "No leaderboard yet: run `banana-space leaderboard`."
    info = json.loads(path.read_text())
    suite, kinds = info["suite"], info["suite"]["kinds"]
    return (f"**Which quality scores notice replication decay?** Suite v{suite['version']}: "
            f"{info['chains']} simulated chains: the damage profiles "
            f"({_by_kind(kinds, 'damage')}), the controls ({_by_kind(kinds, 'control')}) and "
            f"the nuisances ({_by_kind(kinds, 'nuisance')}), each on the "
            f"{len(suite['starts'])} starts {', '.join(suite['starts'])}, at {suite['size']} px "
            f"on the long side, {suite['steps']} steps, seed {suite['seed']}, {scored(suite)}, "
            f"by {', '.join(scored_entries())}. Rates in %, each "
            "with its 95 % Wilson interval over chains: *detects* = worse than step 1 at steps "
            "5, 10 and 20 on damage chains (Banana100's rule; *robust*, ours: by more than the "
            "score's noise floor); *false alarms* = the same on nuisance chains (copies that "
            "differ at every step, with nothing a person would call damage)."
            + nuisance_check() + " *Design-dependent on*: that profile depends on the score "
            f"by design: {design_dependences()}; so its rate there is not independent "
            "evidence. The controls count in no rate. "
            f"Made on {info['machine']} in {info['minutes']} min. The full report: "
            "`docs/leaderboard/leaderboard.html`; the method: docs/leaderboard.md.")


def build() -> None:
    """The tab, inside the page's Blocks."""
    artifacts = list(dict.fromkeys(row["artifact"] for row in read_csv("artifacts.csv")))
    with gr.Tab("Leaderboard", elem_id="leaderboard-tab"):
        gr.Markdown(about())
        with gr.Row():
            family = gr.Dropdown(["all", *FAMILIES], value="all", label="Family")
            artifact = gr.Dropdown([ALL, *artifacts], value=ALL, label="Artifact")
            unavailable = gr.Checkbox(False, label="Show scores that cannot run here")
        table = gr.Dataframe(rows("all", ALL, False), headers=HEADERS, interactive=False,
                             datatype=DATATYPES, wrap=True, elem_id="leaderboard")
        for control in (family, artifact, unavailable):
            control.change(rows, [family, artifact, unavailable], table,
                           api_visibility="private")
