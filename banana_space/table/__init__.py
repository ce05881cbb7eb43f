"""The dataset table: the paper's central result (Banana100, arXiv 2604.03400, Table 2) rerun
on any set of chains, on one machine or a Ray cluster.

    python -m banana_space table SOURCE... --metrics LIST --out DIR [--workers N] [--ray [ADDR]]

`make` finds the chains (`sources.discover`: folders, zips, GIFs, run directories and hub
datasets) and makes the table; `work` scores one chain through the one loop (a plain function,
the same under every driver); `local` and `ray_driver` run it on a process pool or Ray; `store`
writes the CSVs and the resume state; `report` the HTML page.
"""

from ..sources.discover import found_text
from ..sources.listing import ChainRef
from .make import find_chains, run_table, write_report
from .work import ChainResult

__all__ = ["ChainRef", "ChainResult", "find_chains", "found_text", "run_table", "write_report"]
