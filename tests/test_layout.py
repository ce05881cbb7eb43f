"""A chain's layout read defensively (`banana_space.sources.chain_layout`, `dataset_layout`):
step numbers from names in every layout a chain may have, refusals in one line, starts found by
name, and the copy check, on listings and images whose answer is known (the readers:
`test_sources.py`)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from banana_space.sources.chain_layout import (
    EXPECTED,
    Numbered,
    chain_steps,
    not_copies,
    numbered_paths,
)
from banana_space.sources.dataset_layout import described, find_start, numbered, starts_folders
from banana_space.sources.images import BadSource
from banana_space.sources.listing import ChainFormat, ChainRef, chains_in


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
    gap = numbered(ref("g", ["g/1.png", "g/2.png", "g/4.png"]))  # a gap keeps its numbers
    assert gap.steps == (1, 2, 4) and gap.files == ("g/1.png", "g/2.png", "g/4.png")
    assert numbered(ref("g", ["g/2.png", "g/3.png"])).endswith("found frames numbered from 2")
    assert numbered(ref("g", ["g/1.png", "g/cover.png"])).endswith(
        "found 'cover.png', which has no step number")


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


# The layouts a chain's names may have, and the steps they say (`numbered_paths`).
READ = {
    "numbered from 0": (["step_002.png", "step_000.png", "step_001.png"], (0, 1, 2)),
    "bare numbers, natural order": (["10.png", "2.png", "0.png", "1.png"], (0, 1, 2, 10)),
    "copies from 1, the input named apart": (["1.png", "2.png", "input.png"], (0, 1, 2)),
    "an original.jpg beside copies": (["copy_1.png", "original.jpg", "copy_2.png"], (0, 1, 2)),
    "one frame per numbered subfolder": (["1/out.png", "0/out.png", "2/out.png"], (0, 1, 2)),
    "step_NN subfolders": (["step_01/a.png", "step_00/a.png"], (0, 1)),
    "subfolders from 1 beside a start": (["2/x.png", "start.png", "1/x.png"], (0, 1, 2)),
    "a folder above them all": (["chain/1.png", "chain/0.png"], (0, 1)),
    "a gap": (["0.png", "1.png", "2.png", "4.png", "5.png"], (0, 1, 2, 4, 5)),
    "macOS's Duplicate": (["frame copy 2.png", "frame.png", "frame copy.png"], (0, 1, 2)),
    "a browser's downloads": (["frame (2).png", "frame (1).png", "frame.png"], (0, 1, 2)),
    "Windows' copies": (["frame - Copy (2).png", "frame.png", "frame - Copy.png"], (0, 1, 2)),
}


@pytest.mark.parametrize("layout", READ)
def test_each_layout_is_read_with_its_true_step_numbers(layout: str) -> None:
    paths, steps = READ[layout]
    read = numbered_paths(paths)
    assert isinstance(read, Numbered) and read.steps == steps and read.has_input
    assert sorted(read.files) == sorted(paths)
    assert read.files[0] in ("step_000.png", "0.png", "input.png", "original.jpg", "0/out.png",
                             "step_00/a.png", "start.png", "chain/0.png", "frame.png")


# Names that are not a chain's, and what the one line says was found.
REFUSED = {
    "no numbers at all": (["a.png", "b.png", "c.png"],
                          "found no step number in any name ('a.png', 'b.png' …)"),
    "a stray picture": (["0.png", "1.png", "cover.png"], "'cover.png', which has no step number"),
    "numbered from 2": (["2.png", "3.png"], "found frames numbered from 2"),
    "an input and a step 0": (["input.png", "0.png", "1.png"],
                              "found 'input.png' and a frame numbered 0"),
    "two inputs": (["input.png", "start.png", "1.png"], "two inputs, 'input.png' and 'start.png'"),
    "one step twice": (["0.png", "1.png", "01.png"], "'1.png' and '01.png', both step 1"),
    "two frames in a subfolder": (["a/0.png", "a/1.png", "b/0.png"], "found a/ holding 2 frames"),
    "a date for a number": (["0.png", "1.png", "20240101.png"], "found step 20240101"),
    "a duplicate among numbers": (["0.png", "1.png", "1 copy.png"],
                                  "found '1 copy.png', a copy's name, beside '0.png'"),
    "copies of two originals": (["a.png", "a copy.png", "b copy.png"], "a copy's name"),
}


@pytest.mark.parametrize("layout", REFUSED)
def test_names_that_are_not_a_chain_are_refused_in_one_line_saying_what_was_expected(
        layout: str) -> None:
    paths, found = REFUSED[layout]
    why = numbered_paths(paths)
    assert isinstance(why, str) and "\n" not in why and found in why
    assert why.startswith("expected ") and "input named input, original, start or source" in why


def test_copies_from_1_with_no_input_are_refused_where_a_chain_is_scored_from_its_input() -> None:
    """A dataset's sampled chain may lack its input (`real_chains` finds a start by name, or
    scores from step 1); every other reader needs step 0."""
    assert numbered_paths(["1.png", "2.png"]) == Numbered((1, 2), ("1.png", "2.png"))
    with pytest.raises(BadSource) as refused:
        chain_steps(["2.png", "1.png"], "uploaded.zip")
    assert str(refused.value) == (f"uploaded.zip: {EXPECTED}; found copies numbered from 1 "
                                  "and no input")


def test_subfolders_named_by_step_are_one_chain_in_a_listing() -> None:
    listing = [(path, 10) for path in (
        "lab/chain/input.png", *(f"lab/chain/{k}/frame.png" for k in (1, 2, 10)),  # one chain
        "lab/gifs/loop.gif", "lab/stray/only.png",  # a lone animation, a lone picture
        "runs/a/0.png", "runs/a/1.png", "runs/b/0.png")]  # a folder of 2 and one picture
    found = {chain.path: chain.files for chain in chains_in(listing)}
    assert found == {"lab/chain": ("lab/chain/input.png", "lab/chain/1/frame.png",
                                   "lab/chain/2/frame.png", "lab/chain/10/frame.png"),
                     "lab/gifs/loop.gif": ("lab/gifs/loop.gif",),
                     "runs/a": ("runs/a/0.png", "runs/a/1.png")}
    assert numbered_paths(found["lab/chain"]).steps == (0, 1, 2, 10)
