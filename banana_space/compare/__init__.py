"""The compare wing: what a comparison of two chains shows (the pair itself, one spec of two
sides, runs through the chain wing: `chain.sides`, `chain.comparison`, `chain.lifecycle`).

`lessons` are the pairs set up in one click, with a sentence written from their verdicts;
`plots` draws a comparison's figure (both sides' curves on one chart per score).
"""

__all__ = ["lessons", "plots"]
