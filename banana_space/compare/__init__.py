"""The compare wing: two chains from one upload, side by side, and what explains them.

`sides` are the two sides' settings, checked before anything is written; `pair` starts both
from one input (`start_pair`); `record` is the typed `Comparison` (compare.json, the A/B
verdict table, its zip), built once as the pair runs; `lessons` are the pairs set up in one
click, with a sentence written from their verdicts; `why` says what moved BRISQUE's and NIQE's
score and what their models see; `plots` draws a comparison's figures.
"""

__all__ = ["lessons", "pair", "plots", "record", "sides", "why"]
