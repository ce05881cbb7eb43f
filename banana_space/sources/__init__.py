"""The sources wing: every way frames come in, read with the same checks.

`images` turns any upload into clean RGB or a clear refusal (`frame_count` counts a TIFF's
pages and a GIF's frames from the file first); `frames` reads local folders, zips, animations
and run folders; `listing` finds which files make a chain; `chain_layout` reads a dataset's
chains defensively (step numbers from names, starts by name); `hub` and `shards` read the
Hugging Face hub and parquet/arrow shards; `dispatch` is the one door: any source -> frames.
"""

__all__ = ["chain_layout", "dispatch", "frame_count", "frames", "hub", "images", "listing",
           "shards"]
