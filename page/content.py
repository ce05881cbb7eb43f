"""The page's words and pictures, read once: the claim, the About and Help texts
(assets/copy.md), the licences (docs/licences.md, one text shown in the footer), and the example
pictures in the order the page offers them.

The default example is chosen by the paper's conditions, never by the verdicts a run on it
gives: the bundled start of 2K or more whose BRISQUE at the run's size is nearest the paper's
example start (`conditions.nearest_to_the_paper`; the numbers in docs/start_smoothness.md,
checked by tests/test_conditions.py).
"""

from __future__ import annotations

from pathlib import Path

from page.settings import REPO

INTRO, HELP = (REPO / "assets" / "copy.md").read_text().split("---HELP---")
CLAIM, ABOUT = INTRO.split("---ABOUT---")
LICENCES = (REPO / "docs" / "licences.md").read_text()
FOOTER = ("Banana Space · code under Apache-2.0 · **for non-commercial use**, because every "
          "metric comes from pyiqa (PolyForm Noncommercial 1.0.0 and NTU S-Lab License 1.0) · "
          "[Licences and terms](#licences-and-terms) · "
          "[Banana100 paper](https://arxiv.org/abs/2604.03400)")
SIGN_IN_NOTE = ("Signing in keeps your runs on any device, gives you your own share of this "
                "Space and spends your own ZeroGPU quota, not the anonymous one.")
# Said in the About panel where there is no sign-in here: a local user learns it exists.
SIGN_IN_ON_A_SPACE = ("**Sign in** is offered where this app runs as a Hugging Face Space with "
                      "sign-in on (`hf_oauth: true` in its card): a button beside Run. "
                      + SIGN_IN_NOTE)
DUPLICATE_LABEL = "Duplicate this Space: your own copy, on your own quota"
DEFAULT_EXAMPLE = "photo-moss.png"
# The default first, then the other photographs, the flat synthetic renders, and the small
# sample photos.
EXAMPLES = sorted((str(p) for p in (REPO / "assets" / "examples").glob("*.*") if p.suffix != ".md"),
                  key=lambda path: (Path(path).name != DEFAULT_EXAMPLE,
                                    not Path(path).name.startswith("photo-"),
                                    not Path(path).name.startswith("clean-"), path))
