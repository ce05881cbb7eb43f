"""What the "Why is it fooled?" decomposition costs (banana_space/explain/shapley.py): for
BRISQUE and NIQE, the features of one frame of the page's default example (photo-moss.png,
2048 x 1280, and a simulated copy of it) and the 64 model evaluations that split the change
between them over the six feature groups. Each metric's network is built first (not timed).

    .venv/bin/python bench/why.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import _setup

EXAMPLE = _setup.REPO / "assets" / "examples" / "photo-moss.png"  # app.DEFAULT_EXAMPLE


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3, help="best of this many")
    repeat = parser.parse_args().repeat

    import os

    from PIL import Image

    from banana_space.backends.simulate import SimulateBackend
    from banana_space.explain import shapley as explain

    with Image.open(EXAMPLE) as image:
        start = image.convert("RGB")
    copy = SimulateBackend().edit(start, "replica", seed=0, step=1).image
    rows = []
    for metric in sorted(explain.EXPLAINED):
        explain._network(metric)  # built once per process, as the page's cache keeps it
        features, split = [], []
        for _ in range(repeat):
            began = time.perf_counter(), time.process_time()
            pair = [explain.frame_features(metric, frame) for frame in (start, copy)]
            features.append(_since(began, 2))
            began = time.perf_counter(), time.process_time()
            explain.decompose(metric, *pair)
            split.append(_since(began))
        rows.append([metric, f"{start.width} x {start.height}", *min(features), *min(split)])
    print(_setup.describe_machine())
    print(f"load average {os.getloadavg()[0]:.1f}")
    _setup.print_table(f"The decomposition's cost (s, best of {repeat})",
                       ["metric", "frame", "features of one frame: wall", "CPU",
                        "64 evaluations + Shapley: wall", "CPU"], rows)


def _since(began: tuple[float, float], frames: int = 1) -> tuple[float, float]:
    """Wall and CPU seconds (all threads) since `began`, per frame."""
    return ((time.perf_counter() - began[0]) / frames, (time.process_time() - began[1]) / frames)


if __name__ == "__main__":
    main()
