"""The leaderboard's page: one self-contained HTML file (no script, no remote asset) and one
small picture per chain (the magnifier's crop of frame 0 beside the last frame, where they
differ most), which the page and the Space's tab link to as "fooled on" and "detects on".
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..sources.dispatch import HUB_PREFIX, open_chain
from ..sources.listing import ChainRef
from ..verdict.magnifier import largest_difference_box, side_by_side
from .columns import COLUMNS, FIELDS
from .rank import (
    ARTIFACT_HEADER,
    COLOUR_FLOOR_HEADER,
    NUISANCE_HEADER,
    ChainKind,
)


def card_name(chain: str) -> str:
    """A chain's picture's file name: safe on every filesystem and in a URL."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "--", chain).strip("-") + ".png"


def chain_cards(refs: Sequence[ChainRef], chains: Mapping[str, ChainKind],
                folder: Path) -> dict[str, str]:
    """chain name -> its picture, relative to the report ("chains/…png"); hub chains have
    none (their frames stay on the hub)."""
    folder.mkdir(parents=True, exist_ok=True)
    cards = {}
    for ref in refs:
        if ref.root.startswith(HUB_PREFIX) or ref.name not in chains:
            continue
        frames = open_chain(ref)
        first, last = frames.frame(0).image, frames.frame(len(frames) - 1).image
        picture = side_by_side(first, last, largest_difference_box(first, last))
        picture.save(folder / card_name(ref.name), optimize=True)
        cards[ref.name] = f"{folder.name}/{card_name(ref.name)}"
    return cards


def _cell(value: Any) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    return html.escape(str(value))


def _chain_link(name: str, cards: Mapping[str, str]) -> str:
    if not name:
        return ""
    text = html.escape(name.split("/", 1)[-1])
    return f'<a href="{html.escape(cards[name])}">{text}</a>' if name in cards else text


def with_interval(rate: Any, low: Any, high: Any) -> str:
    """A rate and its 95 % interval: "0.50 (0.30–0.70)"."""
    if rate is None or rate == "":
        return ""
    return f"{_cell(rate)} ({_cell(low)}–{_cell(high)})"


def board_table(board: Sequence[Sequence[Any]], cards: Mapping[str, str]) -> str:
    """The board's columns that the report shows (`columns.COLUMNS`), a rate with its
    interval, a chain linked to its picture."""
    shown = [column for column in COLUMNS if column.report]
    head = "".join(f"<th>{c.field.replace('_', ' ')}</th>" for c in shown)
    body = ""
    for values in board:
        row = dict(zip(FIELDS, values, strict=True))
        cells = [_chain_link(str(row[c.field]), cards) if c.kind == "chain"
                 else with_interval(*(row[name] for name in c.fields)) if c.kind == "rate"
                 else _cell(row[c.field]) for c in shown]
        body += "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def artifact_matrix(per_artifact: Sequence[Sequence[Any]]) -> str:
    """Artifacts down, scores across; each cell the paper's rate / the robust rate, green
    where the score catches it (red on a nuisance chain: a false alarm); † where the score
    is one that artifact's profile depends on by design (how, in the cell's title)."""
    metrics = list(dict.fromkeys(row[2] for row in per_artifact))
    cells: dict[tuple[str, str], str] = {}
    kinds: dict[str, str] = {}
    for values in per_artifact:
        row = dict(zip(ARTIFACT_HEADER, values, strict=True))
        kinds[row["artifact"]] = row["kind"]
        rate = row["detect_rate"]
        good = rate if row["kind"] != "nuisance" else 1 - (rate or 0)
        colour = f"hsl({120 * (good or 0):.0f},60%,85%)"
        how = row["design_dependence"]
        why = f' title="{html.escape(how)}"' if how else ""
        text = f"{_cell(rate)} / {_cell(row['detect_rate_robust']) or '–'}" + (" †" if why else "")
        cells[(row["artifact"], row["metric"])] = \
            f'<td style="background:{colour}"{why}>{text}</td>'
    head = "".join(f"<th>{html.escape(m)}</th>" for m in metrics)
    body = "".join(f"<tr><td>{html.escape(a)} <small>({html.escape(k)})</small></td>"
                   + "".join(cells.get((a, m), "<td></td>") for m in metrics) + "</tr>"
                   for a, k in kinds.items())
    return (f"<table><thead><tr><th>artifact</th>{head}</tr></thead><tbody>{body}</tbody>"
            "</table>")


def unavailable_notes(board: Sequence[Sequence[Any]]) -> str:
    by_reason: dict[str, list[str]] = defaultdict(list)
    for values in board:
        row = dict(zip(FIELDS, values, strict=True))
        if row["unavailable"]:
            by_reason[str(row["unavailable"])].append(str(row["metric"]))
    return "".join(f"<li>{html.escape(', '.join(names))}: {html.escape(reason)}</li>"
                   for reason, names in by_reason.items())


def plain_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h.replace('_', ' '))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def report_html(board: Sequence[Sequence[Any]], per_artifact: Sequence[Sequence[Any]],
                chains: Mapping[str, ChainKind], cards: Mapping[str, str],
                about: Mapping[str, Any], nuisances: Sequence[Sequence[Any]] = (),
                colour_floors: Sequence[Sequence[Any]] = ()) -> str:
    suite = about["suite"]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Banana Space: leaderboard</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em}}
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 8px}}
th{{background:#f4f4f4}}small{{color:#555}}</style></head><body>
<h1>Which quality scores notice replication decay?</h1>
<p>Suite v{html.escape(str(suite["version"]))}: {len(chains)} chain(s) — each simulated profile
(<em>simulations</em>, labelled as such) on {len(suite["starts"])} clean start(s) at
{suite["size"]} px, {suite["steps"]} steps, seed {suite["seed"]}. A score <em>detects</em> the
damage in a chain when its oriented Δ from step 1, the first copy (negative = worse), is
negative at steps 5, 10 and 20 (Banana100, arXiv 2604.03400); <em>robust</em> (ours): worse than
its noise floor at each of them.
Detection rates are over damage chains, false alarms over nuisance chains (paper's verdict;
copies that differ at every step, with nothing a person would call damage), each with its 95 %
Wilson interval over chains; ρ is Spearman's against PSNR, seconds are CPU seconds per 1024²
frame on one thread. <em>design dependent on</em> / †: that profile depends on the score by
design (fitted with it, built from the measurements it reads, or built to add what it measures;
how, in the cell's title), so its rate there is not independent evidence.
Made on {html.escape(about["machine"])} in {about["minutes"]} min.</p>
{board_table(board, cards)}
<h2>Per artifact: paper's rate / robust rate</h2>
{artifact_matrix(per_artifact)}
<h2>Checks of the suite</h2>
<p>PSNR's Δ from step 1 on every nuisance chain: not 0, so its copies really vary and a false
alarm could happen.</p>
{plain_table(NUISANCE_HEADER, nuisances)}
<p>Our colour rulers on luma-only damage (the same change in R, G and B), beside their noise
floors: a detection there by the paper's rule is a colour score reading its own wobble.</p>
{plain_table(COLOUR_FLOOR_HEADER, colour_floors)}
<h2>Not scored here</h2><ul>{unavailable_notes(board)}</ul>
</body></html>
"""
