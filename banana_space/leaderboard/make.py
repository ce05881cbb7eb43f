"""Making the leaderboard: the suite made (`suite`), every entrant probed and timed, the chains
scored by the table (`table`: the same engine, workers and optional Ray), the board ranked
(`rank`, its columns `columns`) and written with its checks and report (`report`).
"""

from __future__ import annotations

import csv
import json
import os
import platform
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..backends.simulate import PROFILES
from ..files import csv_bytes, write_atomic
from ..scores.catalog import FIDELITY, metric_info, to_tensor
from ..scores.pool import POOL, MetricUnavailable
from ..scores.rulers import RULERS
from ..store.rundir import versions
from ..table import find_chains, run_table
from ..table.store import TableStore
from ..verdict.floors import floors
from .columns import Entrant
from .rank import (
    ARTIFACT_HEADER,
    COLOUR_FLOOR_HEADER,
    LEADERBOARD_HEADER,
    NUISANCE_HEADER,
    ChainKind,
    artifact_rows,
    colour_floor_rows,
    leaderboard_rows,
    nuisance_rows,
)
from .report import chain_cards, report_html
from .suite import Suite, make_suite, start_image

# A batch job has no visitor waiting: a metric slow to be created on a busy machine is waited
# for, not dropped (the page's 30 s dropped every metric of a worker on the shared 2-core VM).
BATCH_LOAD_SECONDS = 900
TIMING_SIDE = 1024  # seconds per frame are measured on a 1024 x 1024 frame
TIMING_REPEATS = 3

def probe_entries(names: Sequence[str]) -> list[Entrant]:
    """Every named score, created in this process (all at once, in the background): the ones
    that cannot load here carry the reason. A judge that needs no key is scored where it can
    run; one that needs a key is listed, not asked (its calls are billed to the key)."""
    from ..judges import REGISTRY as JUDGES

    for name in names:
        POOL.begin(name)
    entries = []
    for name in names:
        info = metric_info(name)
        try:
            POOL.get(name)
            why = ""
        except MetricUnavailable as error:
            why = str(error)
        entries.append(Entrant(name, info.family, info.label, why))
    for name, judge in JUDGES.items():
        why = judge.unavailable_reason() or ("configured, but the leaderboard does not ask "
                                             "judges that bill a key" if judge.info.needs_key
                                             else "")
        entries.append(Entrant(name, "judge", judge.info.label, why))
    return entries


def time_entries(entries: Sequence[Entrant]) -> dict[str, float]:
    """Seconds per 1024² frame on one thread (median of 3 after a warm-up), per scored metric
    (a judge's are its own benchmark's: bench/judge_cpu.py)."""
    import torch

    frame = start_image("clean-dunes", 4096).resize((TIMING_SIDE, TIMING_SIDE))
    tensor, threads = to_tensor(frame), torch.get_num_threads()
    torch.set_num_threads(1)
    seconds = {}
    try:
        for entry in entries:
            if entry.unavailable or entry.family == "judge":
                continue
            POOL.score(entry.metric, tensor)
            times = []
            for _ in range(TIMING_REPEATS):
                began = time.process_time()
                POOL.score(entry.metric, tensor)
                times.append(time.process_time() - began)
            seconds[entry.metric] = statistics.median(times)
    finally:
        torch.set_num_threads(threads)
    return seconds


def _previous(out: Path) -> list[dict[str, str]]:
    path = out / "leaderboard.csv"
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def previous_entries(out: Path, names: Sequence[str]) -> list[Entrant] | None:
    """The entries of the leaderboard already in `out`, when it ranked these very names (a
    rerun that only re-ranks need not create 40 metrics again); None otherwise."""
    rows = {r["metric"]: r for r in _previous(out)}
    judges = [name for name, r in rows.items() if r["family"] == "judge"]
    if sorted(set(rows) - set(judges)) != sorted(names):
        return None
    # in the order asked for, as a first run probes them: the table resumes only chains
    # scored with the same metric list, order included
    return [Entrant(name, rows[name]["family"], rows[name]["label"], rows[name]["unavailable"])
            for name in [*names, *judges]]


def previous_seconds(out: Path) -> dict[str, float]:
    return {r["metric"]: float(r["seconds_per_frame"]) for r in _previous(out)
            if r["seconds_per_frame"]}


def chain_kinds(names: Sequence[str], suite_label: str, kinds: dict[str, str]) -> dict[str,
                                                                                       ChainKind]:
    """chain name -> artifact and kind: `suite/<profile>/<start>` is the profile's (with what
    its profile says of design dependence and colour); every other chain is real, named by its
    source."""
    found = {}
    for name in names:
        parts = name.split("/")
        if parts[0] == suite_label and len(parts) == 3 and parts[1] in kinds:
            profile = PROFILES.get(parts[1])
            found[name] = ChainKind(parts[1], kinds[parts[1]],
                                    profile.designed_with if profile else (),
                                    profile.luma_only if profile else False)
        else:
            found[name] = ChainKind(parts[0], "real")
    return found


def run_leaderboard(out: Path, suite: Suite, *, sources: Sequence[str] = (),
                    metrics: Sequence[str], workers: int = 1, ray: bool = False,
                    address: str | None = None, stop: threading.Event | None = None,
                    retime: bool = False, say: Callable[[str], None] = print) -> bool:
    """Make, score and rank the suite into `out`; False when `stop` ended the scoring early
    (a rerun continues: made chains, scored chains and, unless `retime`, each entry's
    availability and cost are kept)."""
    began = time.monotonic()
    POOL.load_seconds = BATCH_LOAD_SECONDS  # this process's; the workers are handed it
    out.mkdir(parents=True, exist_ok=True)
    work = out / "suite"
    say(f"making {len(suite.chains())} chain(s) of {suite.steps} steps at {suite.size} px …")
    make_suite(suite, work, workers)
    names = [m for m in metrics if m not in FIDELITY]
    entries = None if retime else previous_entries(out, names)
    if entries is None:
        entries = probe_entries(names)
        say(f"timing {', '.join(e.metric for e in entries if not e.unavailable)} …")
        seconds = time_entries(entries)
    else:
        seconds = previous_seconds(out)
        say("availability and seconds per frame from the previous leaderboard.csv here "
            "(--retime measures them again)")
    scored = [e.metric for e in entries if not e.unavailable]
    suite_names = {f"{work.name}/{profile}/{start}" for profile, start in suite.chains()}
    # only this suite's chains: the folder may hold others, made with other --starts
    refs = [ref for ref in find_chains([str(work), *sources])
            if ref.name in suite_names or ref.root != str(work.resolve())]
    completed = run_table(refs, scored, out / "table", workers=workers, ray=ray,
                          steps=suite.scored_steps(),
                          address=address, stop=stop, load_seconds=BATCH_LOAD_SECONDS,
                          on_chain=lambda result: say(f"scored {result.name}"
                                                      + (f": {result.error}" if result.error
                                                         else "")))
    store = TableStore(out / "table", scored, suite.scored_steps())
    store.load(ref.name for ref in refs)
    verdicts = {name: history.verdict() for name, history in store.histories().items()}
    chains = chain_kinds([ref.name for ref in refs], work.name, suite.as_record()["kinds"])
    board = leaderboard_rows(entries, verdicts, chains, seconds)
    write_atomic(out / "leaderboard.csv", csv_bytes(LEADERBOARD_HEADER, board))
    per_artifact = artifact_rows(entries, verdicts, chains)
    write_atomic(out / "artifacts.csv", csv_bytes(ARTIFACT_HEADER, per_artifact))
    nuisances = nuisance_rows(verdicts, chains)
    write_atomic(out / "nuisances.csv", csv_bytes(NUISANCE_HEADER, nuisances))
    colour = [name for name, ruler in RULERS.items() if ruler.reads_colour and name in scored]
    colour_floors = colour_floor_rows(verdicts, chains, colour, floors())
    write_atomic(out / "colour_floors.csv", csv_bytes(COLOUR_FLOOR_HEADER, colour_floors))
    cards = chain_cards(refs, chains, out / "chains")
    about = {"suite": suite.as_record(), "sources": list(sources), "chains": len(verdicts),
             "machine": machine(workers, ray),
             "minutes": round(earlier_minutes(out, suite) + (time.monotonic() - began) / 60, 1),
             "versions": versions(), "completed": completed}
    write_atomic(out / "suite.json", json.dumps(about, indent=1).encode())
    write_atomic(out / "leaderboard.html",
                 report_html(board, per_artifact, chains, cards, about, nuisances,
                             colour_floors).encode())
    return completed


def earlier_minutes(out: Path, suite: Suite) -> float:
    """The minutes the earlier runs of this very suite in `out` took (a rerun continues their
    work: made chains and scored chains are kept), so `suite.json` says what the whole cost."""
    path = out / "suite.json"
    if not path.is_file():
        return 0.0
    before = json.loads(path.read_text())
    same = before.get("suite") == json.loads(json.dumps(suite.as_record()))  # tuples as lists
    return float(before.get("minutes", 0.0)) if same else 0.0


def machine(workers: int, ray: bool) -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
               platform.processor() or platform.machine())
    return (f"{cpu}, {os.cpu_count()} cores, {workers} worker(s)"
            + (" on Ray" if ray else "") + f", Python {platform.python_version()}")
