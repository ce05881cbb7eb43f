"""The chain wing: a replication chain of one side (a run) or two (a comparison), from its
settings to its saved runs.

`spec` is a run's typed settings (`RunSpec`), `sides` a comparison's two sides (`Side`) and
`comparison` its spec and record (`PairSpec`; compare.json, the A/B table, its zip);
`lifecycle` starts a chain of one side or two and opens it to go on; `runs` does so for one
run (and plays existing frames into one); `producers` is where a chain's frames come from (an
editor, or frames that exist: a recording, a dataset's sampled chain, a folder); `loop` is the
one loop every chain runs through (make, score and show, overlapped in threads; the only maker
of a run's events); `quota` is a run's ZeroGPU seconds before it runs; `remake` re-makes a
recording's dropped frames from its seed; `persist` keeps runs across a restart (bundled
recordings, a dataset repo); `real_chains` scores a few steps of Banana100's own chains;
`offered` is what the first screen opens at once (real chains, then the recordings, damage
first) and the dataset's starts; `pace` a running chain's progress in words (steps made,
seconds a step, time left).
"""

__all__ = ["comparison", "lifecycle", "loop", "offered", "pace", "persist", "producers",
           "quota", "real_chains", "remake", "runs", "sides", "spec"]
