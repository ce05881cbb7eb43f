"""The Space's Leaderboard tab: the committed results of `banana-space leaderboard`
(docs/leaderboard/), sortable (click a column's header) and filtered by family and artifact.

Each row links to an example chain where that score is fooled and one where it detects the
damage: the magnifier's crop of the chain's first and last frames, served from
docs/leaderboard/chains/. `gradio_leaderboard` was considered; its latest release (0.0.14)
requires gradio < 6, so this is a plain `gr.Dataframe` with two filters. Layout only: the
numbers come from the CSVs the command wrote.
"""

from __future__ import annotations

import csv
import json
from urllib.parse import quote

import gradio as gr

from banana_space.leaderboard.report import card_name
from page.settings import REPO

RESULTS = REPO / "docs" / "leaderboard"
CARDS = RESULTS / "chains"
FAMILIES = ["pyiqa", "ours", "judge", "plug-in"]
ALL = "all damage"
HEADERS = ["metric", "family", "detects (paper)", "detects (robust)", "false alarms",
           "ρ vs PSNR", "s / 1024² frame", "fooled on", "detects on", "unavailable"]
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


def rows(family: str, artifact: str, show_unavailable: bool) -> list[list[object]]:
    """The board's rows for the filters: over all damage chains, or one artifact's chains
    (then "false alarms" is blank: it is measured on the nuisance chains)."""
    board = read_csv("leaderboard.csv")
    by_artifact = {row["metric"]: row for row in read_csv("artifacts.csv")
                   if row["artifact"] == artifact}
    shown = []
    for row in board:
        if family != "all" and row["family"] != family:
            continue
        if row["unavailable"] and not show_unavailable:
            continue
        rates = (row["detect_rate"], row["detect_rate_robust"], row["false_alarm_rate"])
        if artifact != ALL:
            if row["metric"] not in by_artifact:
                continue
            picked = by_artifact[row["metric"]]
            rates = (picked["detect_rate"], picked["detect_rate_robust"], "")
        shown.append([row["metric"], row["family"], *(_number(r, True) for r in rates),
                      _number(row["rho_mean"]), _number(row["seconds_per_frame"]),
                      chain_link(row["fooled_on"]), chain_link(row["detects_on"]),
                      row["unavailable"]])
    return shown


def about() -> str:
    path = RESULTS / "suite.json"
    if not path.is_file():
        return "No leaderboard yet: run `banana-space leaderboard`."
    info = json.loads(path.read_text())
    suite = info["suite"]
    return (f"**Which quality scores notice replication decay?** Suite v{suite['version']}: "
            f"{info['chains']} simulated chains (every profile on {len(suite['starts'])} clean "
            f"starts at {suite['size']} px, {suite['steps']} steps). Rates in %: *detects* = "
            "worse than step 1 at steps 5, 10 and 20 on damage chains (Banana100's rule; "
            "*robust*, ours: by more "
            "than the score's noise floor); *false alarms* = the same on nuisance chains "
            "(copies with no damage a person would name). Made on "
            f"{info['machine']} in {info['minutes']} min. The full report: "
            "`docs/leaderboard/leaderboard.html`.")


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
                             datatype=["str", "str", "number", "number", "number", "number",
                                       "number", "markdown", "markdown", "str"],
                             wrap=True, elem_id="leaderboard")
        for control in (family, artifact, unavailable):
            control.change(rows, [family, artifact, unavailable], table,
                           api_visibility="private")
