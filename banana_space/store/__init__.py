"""The store wing: a run on disk.

`run` is a run folder's layout (the one place it is spelled), loading, status, owner and
writer lock; `rundir` writes a run's events as they happen, `archive` its zip and `animation`
the chain as an animated WebP to share; `runids` turns a visitor's run id into a run inside the
runs folder, or a refusal; `retention` decides which runs are kept (by count, bytes and
shares); `diskspace` checks there is room for the next frame.
"""

__all__ = ["animation", "archive", "diskspace", "retention", "run", "rundir", "runids"]
