"""Make the photographic starts in assets/examples/photo-*.png from Debian's packaged wallpapers.

Banana100 (arXiv 2604.03400) starts its chains from clean images of 2K or more with texture
(skyscrapers, food, moss, peacock feathers, dunes; no faces). These are photographs of those
kinds, each shipped by a Debian package whose debian/copyright licenses it for redistribution
(credited, with the licence, in assets/examples/CREDITS.md). Each is scaled so its long side is
`LONG_SIDE` px with a Lanczos filter (which also averages away the source's 8 x 8 JPEG blocks:
each is 1.25-2.9x larger than the result) and saved as lossless PNG. Fetch and unpack the
packages first (any directory; nothing is downloaded by this script):
    apt-get download mate-backgrounds plasma-workspace-wallpapers lomiri-wallpapers-20.04
    for f in *.deb; do n=${f%%_*}; mkdir -p x/$n; dpkg-deb -x $f x/$n; done
    .venv/bin/python scripts/photo_starts.py x
"""

from __future__ import annotations

import argparse
from pathlib import Path

from PIL import Image

TARGET = Path(__file__).resolve().parent.parent / "assets" / "examples"
LONG_SIDE = 2048  # px: the paper's starts are 2K or more
PLASMA = "plasma-workspace-wallpapers/usr/share/wallpapers"
# start name -> the source file, relative to the unpacked packages' directory
SOURCES = {
    "photo-moss": f"{PLASMA}/OneStandsOut/contents/images/2560x1600.jpg",
    "photo-nuthatch": "lomiri-wallpapers-20.04/usr/share/backgrounds/Kleiber_by_Lukas_Baubkus.jpg",
    "photo-flower": "mate-backgrounds/usr/share/backgrounds/mate/nature/YellowFlower.jpg",
    "photo-lake": f"{PLASMA}/EveningGlow/contents/images/2560x1600.jpg",
    "photo-facade": f"{PLASMA}/Grey/contents/images/2560x1600.jpg",
}


def make(source: Path, target: Path) -> tuple[int, int]:
    with Image.open(source) as opened:
        image = opened.convert("RGB")
    scale = LONG_SIDE / max(image.size)
    if scale > 1:
        raise SystemExit(f"{source} is {image.size}: under {LONG_SIDE} px on its long side")
    size = (round(image.width * scale), round(image.height * scale))
    image.resize(size, Image.Resampling.LANCZOS).save(target, optimize=True)
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("unpacked", type=Path, help="where the .deb packages were unpacked")
    args = parser.parse_args()
    for name, relative in SOURCES.items():
        size = make(args.unpacked / relative, TARGET / f"{name}.png")
        print(f"{name}.png {size[0]}x{size[1]} <- {relative}")


if __name__ == "__main__":
    main()
