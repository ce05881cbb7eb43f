"""The chain wing: a replication chain, from its settings to its saved run.

`spec` is a run's typed settings (`RunSpec`); `loop` the replication loop itself (generate,
score and show, overlapped in threads); `runs` the front door (start, resume, prune, open a
saved run); `quota` a run's ZeroGPU seconds before it runs; `remake` re-makes a recording's
dropped frames from its seed; `persist` keeps runs across a restart (bundled recordings, a
dataset repo); `real_chains` scores a few steps of Banana100's own chains; `offered` is what
the first screen opens at once (real chains, then the recordings, damage first) and the
dataset's starts; `pace` a running chain's progress in words (steps made, seconds a step, time
left).
"""

__all__ = ["loop", "offered", "pace", "persist", "quota", "real_chains", "remake", "runs", "spec"]
