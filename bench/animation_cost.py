"""The memory one animated frame costs to decode: `budget.ANIMATION_FRAME_BYTES_PER_PIXEL`.

A fresh child process per measurement writes a 3-frame GIF of SIDE x SIDE (a few KB: the cost is
in the decoded pixels, not the file), opens it through `banana_space.sources.dispatch`, and decodes
the frame given (2 by default, so the decoder composes the ones before it), under a budget large
enough to let it. The cost is the growth of the kernel's high-water mark (VmHWM) over that
decode, per pixel of the animation.

    .venv/bin/python bench/animation_cost.py 2000 [4000 ...]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import _setup  # noqa: F401  (puts the repository on sys.path)

CHILD = """
import sys
from pathlib import Path
from PIL import Image
from banana_space.sources.frames import frames_in_animation

side, path = int(sys.argv[1]), Path(sys.argv[2])
first, second = Image.new("P", (side, side), 0), Image.new("P", (side, side), 1)
second.putpixel((5, 5), 2)
first.save(path, save_all=True, append_images=[second, first], optimize=False)
hwm = lambda: int([l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1])
frames = frames_in_animation(path)
before = hwm()
frames.frame(2)
print(f"{side}: {(hwm() - before) * 1024 / side / side:.1f} bytes per pixel")
"""


def main(sides: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for side in sides:
            subprocess.run([sys.executable, "-c", CHILD, str(side), str(Path(folder) / "a.gif")],
                           check=True, env={"BANANA_MEMORY_GB": "16", "PATH": "",
                                            "PYTHONPATH": str(Path(__file__).parent.parent)})


if __name__ == "__main__":
    main([int(side) for side in sys.argv[1:]] or [2000])
