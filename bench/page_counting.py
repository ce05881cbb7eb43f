"""What answering a many-page TIFF (or a many-frame GIF) costs `load_image`, in CPU seconds
(issue 41): Pillow's own count of the pages (what `load_image` read before) beside
`load_image` now (`banana_space/sources/frame_count.py` counts them from the file's structure, with
a cap, and refuses the file). The files are built byte by byte (tests/hostile_files.py), 64 x 64
pages of ~106 bytes each.

    .venv/bin/python bench/page_counting.py [--pages 32000] [--frames 200000]
"""

from __future__ import annotations

import argparse
import io
import sys
import time

import _setup

sys.path.insert(0, str(_setup.REPO / "tests"))

from hostile_files import many_frame_gif, many_page_tiff  # noqa: E402  (tests/ on the path)
from PIL import Image  # noqa: E402

from banana_space.sources.images import BadImage, load_image  # noqa: E402


def cpu_s(action) -> tuple[float, str]:
    started = time.process_time()
    try:
        answer = f"{action()}"
    except BadImage as error:
        answer = f"refused: {error}"
    return time.process_time() - started, answer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=32_000)
    parser.add_argument("--frames", type=int, default=200_000)
    args = parser.parse_args()
    print(_setup.describe_machine())
    rows = []
    for name, data in ((f"TIFF, {args.pages:,} pages", many_page_tiff(args.pages)),
                       (f"GIF, {args.frames:,} frames", many_frame_gif(args.frames))):
        pillow, count = cpu_s(lambda data=data: Image.open(io.BytesIO(data)).n_frames)
        ours, answer = cpu_s(lambda data=data: load_image(data))
        rows.append((name, f"{len(data) / 1e6:.1f} MB", f"{count} pages", pillow, ours,
                     answer[:60]))
    _setup.print_table("CPU seconds to answer the file",
                       ["file", "size", "Pillow counts", "Pillow's count (before)",
                        "load_image (after)", "load_image says"], rows)


if __name__ == "__main__":
    main()
