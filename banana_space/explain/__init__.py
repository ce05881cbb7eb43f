"""The explain wing: why a classic metric is fooled, in numbers that add up (ours, not the
paper's).

`shapley` splits BRISQUE's and NIQE's change between two frames over their models' own feature
groups (Shapley values, which sum to the change); `why` explains a run's step from it in a
sentence written from those numbers, and reads what the models see in a frame (the MSCN
coefficients and their fitted generalised Gaussian); `plots` draws both for the Compare tab's
"Why is it fooled?" panel. The `why` command (`cli`) prints the same.
"""

__all__ = ["plots", "shapley", "why"]
