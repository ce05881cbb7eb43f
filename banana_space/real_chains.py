"""Real chains first: a few of the paper's own replication chains, ready to open at once.

Banana100 (arXiv 2604.03400) published its chains on the Hugging Face hub as
`kenantang/Banana100` (CC BY-NC-SA 4.0): Nano Banana Pro asked 100 times for "an exact replica".
Where the hub is reachable (a Space), `prepare` runs once in the background at start-up: it
picks a few chains (the names in `PLAN.chains`, or BANANA_REAL_CHAINS; where none of them is on
the hub, the first few chains found), fetches only their frames at `PLAN.steps` (0, 1, 2, 3,
5, 10, 20, 30, 50, 100: the paper's checkpoints and the long tail), scores them with the
recordings' metrics, and writes each as a finished run under the runs folder's `.real-chains/`
(a dot-name: never pruned, never a visitor's run id). The app copies one in when it is opened,
as it does a bundled recording.

A sampled chain keeps its true step numbers: the steps between are not in it (no frame, no
score), so Δ5, Δ10 and Δ20 are the paper's checkpoints, not the 5th, 10th and 20th frame
fetched. Offline, nothing is fetched and start-up goes on (one line in the log); the page then
offers the bundled recordings, labelled as the simulations they are.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from PIL import Image

from .catalog import CPU_DEFAULTS
from .common import write_atomic
from .events import Finished, FrameMade, FrameScored, Notice, Started
from .prompts import DEFAULT_PROMPT
from .run import Run
from .rundir import RunDir, write_zip
from .scoring import Scorer, unavailable_notices
from .settings import engine_settings
from .table.discover import ChainRef

LOG = logging.getLogger(__name__)
FOLDER = ".real-chains"  # under the runs folder
INDEX = "chains.json"  # the prepared runs, in the order the page lists them
LABEL = "Banana100 (real, Nano Banana Pro)"
# A visitor's run waits 30 s for a metric to load (pool.LOAD_SECONDS); this job is scored
# once and kept, so it waits as long as a cold Space may take rather than keep a blank column.
METRIC_PATIENCE_S = 600


@dataclass(frozen=True)
class Plan:
    """Which real chains to show, and how much of each."""

    dataset: str = "kenantang/Banana100"
    # Chains by name, as `table` names them without the dataset (e.g. "chains/0007"). The
    # dataset's layout could not be seen when this was written: empty means "the first few".
    chains: tuple[str, ...] = ()
    count: int = 3  # how many, when the names above are not on the hub
    steps: tuple[int, ...] = (0, 1, 2, 3, 5, 10, 20, 30, 50, 100)
    metrics: tuple[str, ...] = CPU_DEFAULTS  # the bundled recordings' metrics


PLAN = Plan()


def plan_from_env(plan: Plan = PLAN) -> Plan:
    """BANANA_REAL_CHAINS="a,b" picks chains by name; "off" turns real chains off."""
    wanted = engine_settings().real_chains
    if wanted.lower() == "off":
        return replace(plan, count=0, chains=())
    names = tuple(n.strip().strip("/") for n in wanted.split(",") if n.strip())
    return replace(plan, chains=names) if names else plan


def choose(refs: Sequence[ChainRef], plan: Plan) -> list[ChainRef]:
    """The chains named in the plan (in its order); else the first `plan.count` found."""
    by_name = {ref.name.removeprefix(f"{plan.dataset}/"): ref for ref in refs}
    named = [by_name[name] for name in plan.chains if name in by_name]
    return named or [ref for ref in refs if (ref.frames_known or 2) >= 2][:plan.count]


def run_id(ref: ChainRef, plan: Plan) -> str:
    """A run id (letters, digits, '.', '_', '-') naming the chain: banana100-chains-0007."""
    chain = ref.name.removeprefix(f"{plan.dataset}/")
    return ("banana100-" + re.sub(r"[^A-Za-z0-9._-]+", "-", chain).strip("-."))[:80]


def sampled_frames(ref: ChainRef, steps: Sequence[int]) -> list[tuple[int, Image.Image]]:
    """(step, frame) at each of `steps` the chain has; only those frames are fetched where
    the layout allows (loose files, shard rows), a whole archive where it does not."""
    from .sources import open_chain

    if ref.frames_known is not None:
        wanted = [s for s in steps if s < ref.frames_known]
        frames = open_chain(replace(ref, files=tuple(ref.files[s] for s in wanted)))
        return [(step, frames.frame(i).image) for i, step in enumerate(wanted)]
    frames = open_chain(ref)
    return [(step, frames.frame(step).image) for step in steps if step < len(frames)]


def score_sampled(frames: Sequence[tuple[int, Image.Image]], root: Path, name: str,
                  metrics: Sequence[str], settings: dict) -> Path:
    """Score sampled frames (step 0 first) against step 0 and write them as one finished
    run `root/name`; the steps between have no frame and no score."""
    scorer = Scorer(metrics)
    reference = frames[0][1]
    scorer.check_fits(max((image.size for _, image in frames), key=lambda s: s[0] * s[1]))
    for metric in scorer.wanted:  # no visitor waits here: a cold start's load is waited for
        scorer.pool.begin(metric).wait(METRIC_PATIENCE_S)
    run = RunDir.create(root, name)
    try:
        for notice in scorer.load():
            run.record(notice)
        last = frames[-1][0]
        run.record(Started(run.path, last, scorer.infos, scorer.unavailable, settings))
        for note in settings["input_notes"]:
            run.record(Notice(note, 0, "info"))
        for notice in unavailable_notices(scorer.unavailable):
            run.record(notice)
        for step, image in frames:
            run.record(FrameMade(step, image))
            with scorer.budget.request(scorer.memory_needed(image.size, reference.size)):
                started = time.perf_counter()
                result = scorer.measure(image, reference)
            run.record(FrameScored(step, image, result.scores,
                                   seconds_score=time.perf_counter() - started))
            for warning in result.warnings:
                run.record(Notice(warning, step))
        run.record(Finished("completed", last))
    finally:
        run.close()
    write_zip(run.path)
    return run.path


def _finished(path: Path) -> bool:
    try:
        return Run(path).load().meta.get("status") == "completed"
    except (FileNotFoundError, ValueError):
        return False


def prepare_chain(ref: ChainRef, plan: Plan, folder: Path) -> Path:
    """One chosen chain as a finished run in `folder` (fetched and scored once)."""
    from .hub import credit

    path = folder / run_id(ref, plan)
    if _finished(path):
        return path
    shutil.rmtree(path, ignore_errors=True)  # a preparation killed half-way starts again
    frames = sampled_frames(ref, plan.steps)
    source = f"{ref.root}/{ref.name.removeprefix(f'{plan.dataset}/')}"
    notes = [f"{LABEL}: the chain {ref.name}, fetched at steps "
             f"{', '.join(str(s) for s, _ in frames)} only (the steps between are not "
             "shown and have no score)", credit(plan.dataset)]
    settings = {"backend": "replay", "backend_options": {}, "prompt": DEFAULT_PROMPT,
                "backend_settings": {"source": source, "steps_fetched": [s for s, _ in frames]},
                "steps": frames[-1][0], "seed": 0, "metrics": list(plan.metrics), "judges": [],
                "judge_options": {}, "input_size": list(frames[0][1].size),
                "input_notes": notes, "real_chain": LABEL}
    return score_sampled(frames, folder, path.name, plan.metrics, settings)


def prepare(root: Path, plan: Plan | None = None) -> list[Path]:
    """Fetch, score and cache the plan's chains under `root/.real-chains`; never raises (an
    offline hub, a changed dataset: one line in the log, and the page offers what it has)."""
    from .hub import operator_token

    with operator_token():  # the operator's chosen dataset: the Space's token may read it
        return _prepare(root, plan or plan_from_env())


def _prepare(root: Path, plan: Plan) -> list[Path]:
    from .table.discover import find_chains_in

    if plan.count <= 0 and not plan.chains:
        return []
    folder = Path(root) / FOLDER
    if _index(folder).get("plan") == json.loads(json.dumps(asdict(plan))) and prepared(root):
        return prepared(root)  # made by an earlier start: the hub is not asked again
    try:
        chosen = choose(find_chains_in(f"hf://datasets/{plan.dataset}"), plan)
    except Exception as error:  # offline or refused: the recordings are shown instead
        LOG.warning("real chains: %s is not reachable (%s); showing the recordings only",
                    plan.dataset, str(error).splitlines()[0][:200] if str(error) else error)
        return []
    folder.mkdir(parents=True, exist_ok=True)  # only once there is something to keep
    ready = []
    for ref in chosen:
        try:
            ready.append(prepare_chain(ref, plan, folder))
        except Exception as error:  # one chain's failure must not cost the others
            LOG.warning("real chains: %s skipped (%s)", ref.name, error)
    write_atomic(folder / INDEX, json.dumps({"plan": asdict(plan),
                                             "runs": [p.name for p in ready]}).encode())
    return ready


# Set while a `start_preparing` thread runs: a page opened before the chains are ready asks
# again until it is clear (page/handlers.real_chains_tick).
_PREPARING = threading.Event()


def preparing() -> bool:
    """Whether the background preparation is still running (more chains may come)."""
    return _PREPARING.is_set()


def start_preparing(root: Path, plan: Plan | None = None) -> threading.Thread:
    def work() -> None:
        try:
            prepare(root, plan)
        finally:
            _PREPARING.clear()

    _PREPARING.set()
    thread = threading.Thread(target=work, name="real-chains", daemon=True)
    thread.start()
    return thread


def _index(folder: Path) -> dict:
    try:
        index = json.loads((folder / INDEX).read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return index if isinstance(index, dict) else {}


def prepared(root: Path) -> list[Path]:
    """The finished real-chain runs under `root`, in the page's order."""
    folder = Path(root) / FOLDER
    names = _index(folder).get("runs", [])
    return [folder / name for name in names if isinstance(name, str) and re.fullmatch(
        r"banana100-[A-Za-z0-9._-]*", name) and _finished(folder / name)]


@dataclass(frozen=True)
class Example:
    """A finished chain the page opens at once: a real one, or one of our simulations."""

    path: Path  # the run to copy into the runs folder
    label: str  # the button's text
    credit: str  # where it comes from and under which licence ("" for our own)
    real: bool


def examples(root: Path, recorded: Path) -> list[Example]:
    """Real chains first (those prepared so far), then the bundled recordings, each labelled
    "simulated" with its profile."""
    shown = []
    for path in prepared(root):
        saved = Run(path).load()
        notes = saved.meta["settings"].get("input_notes", [])
        chain = path.name.removeprefix("banana100-")
        shown.append(Example(path, f"{LABEL} · {chain} · steps 0–{saved.last_step}",
                             next((n for n in notes if "licence:" in n), ""), True))
    for path in sorted(p for p in Path(recorded).iterdir() if Run(p).exists()):
        settings = Run(path).load().meta["settings"]
        profile = settings.get("backend_options", {}).get("profile")
        start = path.name.split("-")[0].capitalize()
        kind = f"simulated ({profile} profile)" if profile else "simulated"
        shown.append(Example(path, f"{start} · {kind} · {settings.get('steps')} steps", "",
                             False))
    return shown
