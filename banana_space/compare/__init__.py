"""The compare wing: two chains from one upload, side by side, and what explains them.

`pair` starts both sides from one input and writes the comparison; `lessons` are the pairs
set up in one click, with a sentence written from their verdicts; `why` says what moved
BRISQUE's and NIQE's score and what their models see; `plots` draws a comparison's figures.
"""

__all__ = ["lessons", "pair", "plots", "why"]
