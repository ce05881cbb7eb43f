"""The sources wing: every way frames come in, read with the same checks.

`images` turns any upload into clean RGB or a clear refusal (`frame_count` counts a TIFF's
pages and a GIF's frames from the file first); `frames` reads local folders, zips, animations
and run folders; `chain_layout` reads any chain's steps from its names, the same for every
source (the input by name, gaps kept, neighbours that are copies); `listing` finds which files
make a chain, and `discover` every chain in a folder or a hub dataset by that rule;
`dataset_layout` reads a dataset's chains defensively (starts by name, its metadata); `hub` and
`shards` read the Hugging Face hub and parquet/arrow shards, through `hub_client` (where, who,
at which commit; the listing and downloads); `dispatch` is the one door: any source -> frames.
"""

__all__ = ["chain_layout", "dataset_layout", "discover", "dispatch", "frame_count", "frames",
           "hub", "hub_client", "images", "listing", "shards"]
