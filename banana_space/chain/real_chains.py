"""Real chains first: a few of the paper's own replication chains, ready to open at once.

Banana100 (arXiv 2604.03400) published its chains on the Hugging Face hub as
`kenantang/Banana100` (CC BY-NC-SA 4.0): an image editor asked 100 times for "an exact
replica". Where the hub is reachable (a Space), `prepare` runs once in the background at
start-up: it picks a few chains (the names in `PLAN.chains`, or BANANA_REAL_CHAINS; where none
of them is on the hub, the first few chains found), fetches only their frames at `PLAN.steps`
(0, 1, 2, 3, 5, 10, 20, 30, 50, 100: the paper's checkpoints and the long tail), scores them
with the recordings' metrics, and writes each as a finished run under the runs folder's
`.real-chains/` (a dot-name: never pruned, never a visitor's run id). The app copies one in
when it is opened, as it does a bundled recording.

The dataset's layout has never been seen from here, so it is read defensively, by the rules
every reader keeps (`sources/chain_layout.py`, `sources/dataset_layout.py`): step numbers come
from the file names; a chain numbered from 1 holds copies only, and its input is the one it
names, else the start the dataset keeps for it, found by name (where there is none, the run has
no step 0 and says fidelity is measured from step 1); a folder of starts is never a chain, nor
one whose neighbouring frames are not copies of each other (the log names each one). A chain
is labelled by its path in the dataset, never with a model the dataset does not name, and the
dataset's commit that was read is kept with it (`hub.revision`).

A sampled chain keeps its true step numbers: the steps between are not in it (no frame, no
score), so Δ5, Δ10 and Δ20 are the paper's checkpoints, not the 5th, 10th and 20th frame
fetched. Offline, nothing is fetched and start-up goes on (one line in the log); the page then
offers the bundled recordings, labelled as the simulations they are.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import shutil
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path, PurePosixPath

from PIL import Image

from ..files import write_atomic
from ..scores.catalog import CPU_DEFAULTS
from ..settings import engine_settings
from ..sources.chain_layout import not_copies
from ..sources.dataset_layout import (
    METADATA_NAMES,
    chain_folder,
    described,
    find_start,
    numbered,
    starts_folders,
)
from ..sources.frames import frames_in_memory
from ..sources.listing import ChainRef
from ..store.run import Run
from .runs import play_existing

LOG = logging.getLogger(__name__)
FOLDER = ".real-chains"  # under the runs folder
INDEX = "chains.json"  # the prepared runs, in the order the page lists them
# How a chain's steps are read: 2, from the numbers in its file names (`chain_layout.py`).
# Runs prepared by an earlier reading (1: a file's index was its step) are prepared again.
READING = 2
LABEL = "Banana100 chain"  # then its path in the dataset (`chain_label`); no model claimed
# A visitor's run waits 30 s for a metric to load (pool.LOAD_SECONDS); this job is scored
# once and kept, so it waits as long as a cold Space may take rather than keep a blank column.
METRIC_PATIENCE_S = 600
MAX_METADATA_BYTES = 64 * 2**20  # a metadata file past this is not read (the chains then
# are labelled by their paths alone)


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


def chains_only(refs: Sequence[ChainRef]) -> list[ChainRef]:
    """The refs that may be chains: never a folder of starts (`dataset_layout.starts_folders`), nor
    one whose file names are not a run of step numbers, nor an archive (its frames' names are
    read only once it is fetched whole); the log names each one passed over, with why."""
    starts = starts_folders(refs)
    kept = []
    for ref in refs:
        if why := _not_a_chain(ref, starts):
            LOG.info("real chains: %s is not a chain (%s)", ref.name, why)
        else:
            kept.append(ref)
    return kept


def _not_a_chain(ref: ChainRef, starts: set[str]) -> str:
    """Why `ref` is not a chain, from its listing alone; "" where it may be one."""
    if ref.name in starts:
        return "its files are named after other chains: their starts"
    if ref.frames_known is None:
        return "an archive: its frames' names cannot be read before it is fetched"
    steps = numbered(ref)
    return steps if isinstance(steps, str) else ""


def choose(refs: Sequence[ChainRef], plan: Plan) -> list[ChainRef]:
    """The chains named in the plan (in its order); else every chain, in order, of which the
    first `plan.count` that prove to be chains are prepared. A folder of starts is never one
    (`chains_only`)."""
    chains = chains_only(refs)
    by_name = {ref.name.removeprefix(f"{plan.dataset}/"): ref for ref in chains}
    named = [by_name[name] for name in plan.chains if name in by_name]
    return named or chains


def run_id(ref: ChainRef, plan: Plan) -> str:
    """A run id (letters, digits, '.', '_', '-') naming the chain: banana100-chains-0007."""
    chain = ref.name.removeprefix(f"{plan.dataset}/")
    return ("banana100-" + re.sub(r"[^A-Za-z0-9._-]+", "-", chain).strip("-."))[:80]


@dataclass(frozen=True)
class Sampled:
    """A chain fetched at some steps: (step, frame) in step order, and where step 0 is from."""

    frames: list[tuple[int, Image.Image]]
    input_note: str  # where its input came from, or that it has none


def sampled_frames(ref: ChainRef, steps: Sequence[int],
                   refs: Sequence[ChainRef] = ()) -> Sampled:
    """The chain at each of `steps` it has, by the step numbers in its file names
    (`dataset_layout.numbered`), fetching only those frames. A chain numbered from 1 holds copies
    only: copy k is step k, and its step 0 is the input it names, else the start `refs` keep
    for it, found by name (`dataset_layout.find_start`); where there is none, it has no step 0."""
    from ..sources.dispatch import chain_files

    numbers = numbered(ref)
    if isinstance(numbers, str):
        raise ValueError(f"{ref.name} is not a chain: {numbers}")
    by_step = {s: f for s, f in zip(numbers.steps, numbers.files, strict=True) if s in steps}
    frames = chain_files(replace(ref, files=tuple(by_step.values()), paths=()))
    index = {name: i for i, name in enumerate(frames.names)}  # by name: files come sorted
    fetched = [(step, frames.frame(index[file]).image) for step, file in by_step.items()]
    if numbers.has_input:
        return Sampled(fetched, "its file names give its steps: step 0 is its input")
    start = find_start(ref, refs) if 0 in steps else None
    if start is None:
        return Sampled(fetched, "its file names run from 1 (copies only) and the dataset keeps "
                                "no start for it by name: it has no step 0, and fidelity "
                                "(PSNR, SSIM) is measured from step 1, the first copy")
    starts, file = start
    image = chain_files(replace(starts, files=(file,), paths=())).frame(0).image
    path = dict(zip(starts.files, starts.paths or starts.files, strict=True))[file]
    return Sampled([(0, image), *fetched], f"its file names run from 1 (copies only): copy k is "
                                           f"step k, and step 0 is its start {path}, found "
                                           "by name")


def _finished(path: Path) -> bool:
    try:
        return Run(path).load().meta.get("status") == "completed"
    except (FileNotFoundError, ValueError):
        return False


def dataset_metadata(dataset: str) -> list[dict[str, str]]:
    """The rows of the dataset's own metadata files (`dataset_layout.METADATA_NAMES`), each
    `file_name` made a path in the dataset; [] where it has none (or they cannot be read)."""
    from ..sources.hub_client import HubPath, fetch, list_files

    rows: list[dict[str, str]] = []
    for name, size in list_files(HubPath(dataset)):
        base = PurePosixPath(name)
        if base.name not in METADATA_NAMES or size > MAX_METADATA_BYTES:
            continue
        text = (fetch(dataset, [name]) / name).read_text(errors="replace")
        try:
            found = ([json.loads(line) for line in text.splitlines() if line.strip()]
                     if base.suffix == ".jsonl" else list(csv.DictReader(io.StringIO(text))))
        except ValueError as error:  # a broken file says nothing: the chains are unlabelled
            LOG.warning("real chains: %s is not readable (%s)", name, error)
            continue
        rows += [{**row, "file_name": str(base.parent / str(row["file_name"])).strip("./")}
                 for row in found if isinstance(row, dict) and row.get("file_name")]
    return rows


def prepare_chain(ref: ChainRef, plan: Plan, folder: Path, refs: Sequence[ChainRef] = (),
                  revision: str = "", metadata: Sequence[dict[str, str]] = ()) -> Path:
    """One chosen chain as a finished run in `folder` (fetched and scored once).

    Args:
        ref: the chain.
        plan: what to fetch and score.
        folder: where the prepared runs are kept.
        refs: every folder the dataset holds, where the chain's start is looked for by name.
        revision: the dataset's commit that was read, kept with the run ("" where unknown).
        metadata: the dataset's own metadata rows (`dataset_metadata`), which may name the
            chain's model and prompt.

    Raises:
        ValueError: the folder is not a chain (its names, or neighbours that are not copies).
    """
    from ..sources.hub import credit

    path = folder / run_id(ref, plan)
    if _finished(path):
        return path
    shutil.rmtree(path, ignore_errors=True)  # a preparation killed half-way starts again
    sampled = sampled_frames(ref, plan.steps, refs)
    frames = sampled.frames
    if why := not_copies(frames):
        raise ValueError(f"not a chain: {why}")
    source = f"{ref.root}/{chain_folder(ref)}".rstrip("/")
    pinned = f" at revision {revision}" if revision else " (revision not known)"
    model, prompt = described(ref, metadata)
    label = chain_label(ref, model)
    notes = [f"{label}: {source}{pinned}; {sampled.input_note}; fetched at steps "
             f"{', '.join(str(s) for s, _ in frames)} only (the steps between are not shown "
             f"and have no score); {_made_by(model, prompt)}", credit(plan.dataset)]
    settings = {"backend": "replay", "backend_options": {}, "prompt": prompt,
                "backend_settings": {"source": source, "revision": revision,
                                     "steps_fetched": [s for s, _ in frames]},
                "steps": frames[-1][0], "seed": 0, "metrics": list(plan.metrics), "judges": [],
                "judge_options": {}, "input_size": list(frames[0][1].size),
                "input_notes": notes, "real_chain": label}
    return play_existing(frames_in_memory(label, frames), folder, path.name, plan.metrics,
                         settings, patience_s=METRIC_PATIENCE_S)


def _made_by(model: str, prompt: str) -> str:
    """What the dataset's metadata says made the chain, and what it does not say."""
    said = [f"model: {model}"] * bool(model) + [f"prompt: {prompt!r}"] * bool(prompt)
    unsaid = ["its model"] * (not model) + ["its prompt"] * (not prompt)
    return "; ".join(
        ([f"by the dataset's metadata, {', '.join(said)}"] if said else [])
        + ([f"{' and '.join(unsaid)} the dataset does not name"] if unsaid else []))


def chain_label(ref: ChainRef, model: str = "") -> str:
    """"Banana100 chain chains/0007": the chain by its path in the dataset, with the model
    its metadata names ("… (Nano Banana Pro)"), and none where it names none."""
    return f"{LABEL} {chain_folder(ref) or ref.name}" + (f" ({model})" if model else "")


def prepare(root: Path, plan: Plan | None = None) -> list[Path]:
    """Fetch, score and cache the plan's chains under `root/.real-chains`; never raises (an
    offline hub, a changed dataset: one line in the log, and the page offers what it has)."""
    from ..sources.hub_client import operator_token

    with operator_token():  # the operator's chosen dataset: the Space's token may read it
        return _prepare(root, plan or plan_from_env())


def _prepare(root: Path, plan: Plan) -> list[Path]:
    from ..sources.discover import find_chains_in
    from ..sources.hub import revision
    from ..sources.hub_client import pinned

    if plan.count <= 0 and not plan.chains:
        return []
    folder = Path(root) / FOLDER
    index = _index(folder)
    if index.get("plan") == json.loads(json.dumps(asdict(plan))) and \
            index.get("reading") == READING and prepared(root):
        return prepared(root)  # made by an earlier start: the hub is not asked again
    read = revision(plan.dataset)  # every file below is read at this one commit
    with pinned(read):
        try:
            refs = find_chains_in(f"hf://datasets/{plan.dataset}")
            metadata = dataset_metadata(plan.dataset)
        except Exception as error:  # offline or refused: the recordings are shown instead
            LOG.warning("real chains: %s is not reachable (%s); showing the recordings only",
                        plan.dataset, str(error).splitlines()[0][:200] if str(error) else error)
            return []
        folder.mkdir(parents=True, exist_ok=True)  # only once there is something to keep
        ready: list[Path] = []
        wanted = len(plan.chains) or plan.count
        for ref in choose(refs, plan):
            if len(ready) >= wanted:
                break
            try:
                ready.append(prepare_chain(ref, plan, folder, refs, read, metadata))
            except Exception as error:  # one chain's failure must not cost the others
                LOG.warning("real chains: %s skipped (%s)", ref.name, error)
    write_atomic(folder / INDEX, json.dumps({"plan": asdict(plan), "reading": READING,
                                             "revision": read,
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
