"""How much of a parquet-sharded image dataset on the hub is transferred to find its chains and
to replay one of them (banana_space/sources/shards.py reads by HTTP range requests).

The dataset is served by the tests' stand-in of the hub (tests/fake_hub.py) and read through
the real `huggingface_hub` client: `--chains` chains of 21 frames (steps 0-20) of incompressible
noise at `--size` px, as `{bytes, path}` rows in 2 parquet shards with `--rows` rows per row
group. Bytes are counted as the server sends them.

    .venv/bin/python bench/hub_ranges.py [--chains 10] [--size 256] [--rows 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import _setup
import numpy as np
from PIL import Image

sys.path.insert(0, str(_setup.REPO / "tests"))
os.environ["HF_HUB_OFFLINE"] = "0"
os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="banana-bench-hf-home-")

from fake_hub import FakeHub  # noqa: E402  (tests/ is put on the path above)
from shard_data import parquet_shards  # noqa: E402

DATASET = "kenantang/Banana100"


def served(hub: FakeHub, since: int = 0) -> int:
    return sum(last - first + 1 for _, first, last in hub.ranges[since:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chains", type=int, default=10)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--rows", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    chains = {f"{c:04d}": [Image.fromarray(rng.integers(0, 255, (args.size, args.size, 3),
                                                        dtype=np.uint8)) for _ in range(21)]
              for c in range(args.chains)}
    files = parquet_shards(chains, shards=2, rows_per_group=args.rows)
    with FakeHub({DATASET: files}) as hub:
        os.environ["HF_ENDPOINT"] = hub.url
        from banana_space.sources.discover import find_chains_in
        from banana_space.sources.dispatch import open_frames

        refs = find_chains_in(f"hf://datasets/{DATASET}")
        found = served(hub)
        before = len(hub.ranges)
        middle = sorted(chains)[len(chains) // 2]
        frames = open_frames(f"hf://datasets/{DATASET}/{middle}")
        replayed = served(hub, before)
    dataset = sum(map(len, files.values()))
    _setup.print_table(
        f"dataset: {dataset / 2**20:.1f} MB in {len(files)} parquet shards, {args.rows} rows "
        "per row group", ["what", "MB transferred", "share of the dataset"],
        [[f"find its {len(refs)} chains", round(found / 2**20, 3), f"{found / dataset:.2%}"],
         [f"replay chain {middle} ({len(frames)} frames)", round(replayed / 2**20, 2),
          f"{replayed / dataset:.1%}"]])

if __name__ == "__main__":
    main()
