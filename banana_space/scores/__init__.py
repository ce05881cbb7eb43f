"""The scores wing: every number a frame gets, and the one table of their names.

`catalog` maps every score name (pyiqa's, our rulers, plug-ins) to its family, role,
orientation, range and builder; `pool` makes each metric once per process; `scoring` scores one
frame with them; `rulers` are our own measures of one frame; `plugins` reads other people's
metrics from entry points; `equivalents` and `nss` are exact equivalents of pyiqa's code where
pyiqa's way is pathological at 2K (each tested equal to pyiqa), and `planes` what several of
them share: a frame's luma, made once, and the MSCN filter band by band.
"""

__all__ = ["catalog", "equivalents", "nss", "planes", "plugins", "pool", "rulers", "scoring"]
