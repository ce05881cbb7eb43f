"""A dataset's layout read defensively (`banana_space.sources.chain_layout`): step numbers from file names,
starts found by name, and the copy check, on listings and images whose answer is known."""

from __future__ import annotations

import numpy as np
from PIL import Image

from banana_space.sources.chain_layout import (
    Numbered,
    described,
    find_start,
    not_copies,
    numbered,
    starts_folders,
)
from banana_space.sources.listing import ChainFormat, ChainRef


def ref(name: str, paths: list[str], rows: bool = False) -> ChainRef:
    files = tuple(f"data/train-0.parquet#{i}" for i in range(len(paths))) if rows \
        else tuple(paths)
    return ChainRef(f"Banana100/{name}", "hf://datasets/o/Banana100",
                    ChainFormat.ROWS if rows else ChainFormat.FOLDER, files, 0, tuple(paths))


def test_step_numbers_come_from_the_names_not_the_order() -> None:
    from_1 = numbered(ref("chains/7", [f"chains/7/{k}.png" for k in (3, 1, 10, 2, 4, 5, 6, 7, 8,
                                                                       9)]))
    assert isinstance(from_1, Numbered) and not from_1.has_input
    assert from_1.steps == tuple(range(1, 11)) and from_1.files[0] == "chains/7/1.png"
    assert from_1.files[9] == "chains/7/10.png"  # natural order: 10 after 9
    rows = numbered(ref("x", ["x/frame_002.png", "x/frame_000.png", "x/frame_001.png"], True))
    assert rows.has_input and rows.files == ("data/train-0.parquet#1", "data/train-0.parquet#2",
                                             "data/train-0.parquet#0")
    assert "not one run of step numbers" in numbered(ref("g", ["g/1.png", "g/2.png",
                                                                "g/4.png"]))
    assert "not one run of step numbers" in numbered(ref("g", ["g/2.png", "g/3.png"]))
    assert "has no step number" in numbered(ref("g", ["g/1.png", "g/cover.png"]))


def test_a_folder_named_after_the_chains_is_their_starts_and_found_by_name() -> None:
    chains = [ref(f"chains/{n}", [f"chains/{n}/{k}.png" for k in range(1, 4)])
              for n in ("0001", "0002")]
    starts = ref("starts", ["starts/0001.png", "starts/0002.png"])
    refs = [*chains, starts]
    assert starts_folders(refs) == {"Banana100/starts"}
    assert find_start(chains[1], refs) == (starts, "starts/0002.png")
    assert find_start(chains[0], chains) is None


def test_neighbours_that_are_not_copies_are_named() -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (32, 48, 3)).astype(np.uint8)
    copy = np.clip(base + rng.normal(0, 4, base.shape), 0, 255).astype(np.uint8)
    other = rng.integers(0, 256, (32, 48, 3)).astype(np.uint8)
    image = Image.fromarray
    assert not_copies([(0, image(base)), (1, image(copy)), (5, image(other))]) == ""
    why = not_copies([(0, image(base)), (1, image(copy)), (2, image(other))])
    assert why.startswith("steps 1 and 2 are ") and why.endswith("copies are more than 18 dB")


def test_model_and_prompt_are_read_from_the_metadata_only_where_it_agrees() -> None:
    chain = ref("chains/7", ["chains/7/1.png", "chains/7/2.png"])
    rows = [{"file_name": "chains/7/1.png", "model": "Editor X", "prompt": "copy"},
            {"file_name": "chains/7/2.png", "model_name": "Editor X"},
            {"file_name": "chains/8/1.png", "model": "Editor Y", "prompt": "other"}]
    assert described(chain, rows) == ("Editor X", "copy")
    rows[1]["prompt"] = "another"  # two prompts for one chain: the metadata does not say one
    assert described(chain, rows) == ("Editor X", "")
    assert described(chain, []) == ("", "")
