"""From `python app.py` to a page that answers, and to a first run's first frame.

The app is started in a subprocess on a free port (GRADIO_SERVER_PORT), as a Space starts it.
Three times are taken from the moment the process is spawned: HTTP 200 on /, then the first
frame (frame 0, scored) of a first run and of a second run, each submitted with gradio_client
as soon as the page answers. The first run pays for loading the metrics (torch, pyiqa, BRISQUE
and NIQE weights); the second shows the warm cost, so their difference is the loading.

Heavy imports must not delay the page: a child process imports app.py and reports which heavy
modules that loaded, and `python -X importtime` names the slowest imports of app.py.

    .venv/bin/python bench/startup.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import _setup

HEAVY = ("torch", "pyiqa", "google.genai", "diffusers", "transformers", "scipy", "cv2")
RUN_IMAGE_SIDE = 512
METRICS = ["brisque", "niqe", "piqe", "entropy"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_page(url: str, process: subprocess.Popen, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the app exited before answering")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no answer from {url} within {limit} s")


def first_frame(url: str, image: Path) -> float:
    """Submit a 1-step simulate run through the page's own streaming event; return when an
    update holds frame 0."""
    from gradio_client import Client, handle_file

    from page.run_tab.form import RunForm

    client = Client(url, verbose=False)
    # /run is undocumented (view_api does not list it): its inputs in the Run form's order
    # (page/run_tab/form.py), each option at its page default.
    form = RunForm.named(upload=handle_file(str(image)), steps=1, metrics=METRICS,
                         judge_at="every")
    job = client.submit(*form.inputs(), api_name="/run")
    for update in job:
        if update[2]:  # the strip holds frame 0
            job.cancel()
            return time.perf_counter()
    raise RuntimeError(f"the run ended without a frame: {job.status()}")


def serve_times(root: Path) -> dict[str, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    image = root / "input.png"
    _setup.photo(RUN_IMAGE_SIDE).save(image)
    environment = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1",
                   "GRADIO_SERVER_PORT": str(port), "BANANA_RUNS_DIR": str(root / "runs")}
    started = time.perf_counter()
    with (root / "app.log").open("w") as log:
        process = subprocess.Popen([sys.executable, "app.py"], cwd=_setup.REPO, env=environment,
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_page(url, process)
        page = time.perf_counter()
        first = first_frame(url, image)
        clicked = time.perf_counter()
        second = first_frame(url, image)
        return {"page": page - started, "first run, frame 0": first - started,
                "first run from its click": first - page,
                "second run from its click": second - clicked}
    finally:
        process.terminate()
        process.wait(timeout=30)


def heavy_modules_after_import() -> dict[str, bool]:
    code = ("import json, sys; import app; app.build(); "
            f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))")
    child = subprocess.run([sys.executable, "-c", code], cwd=_setup.REPO, capture_output=True,
                           text=True, check=True)
    return json.loads(child.stdout.strip().splitlines()[-1])


def slowest_imports(count: int = 6) -> list[tuple[str, float]]:
    """The modules app.py imports itself, by cumulative import time (-X importtime prints
    each module's imports before it, indented one level deeper)."""
    child = subprocess.run([sys.executable, "-X", "importtime", "-c", "import app"],
                           cwd=_setup.REPO, capture_output=True, text=True, check=True)
    direct: dict[str, float] = {}
    for line in child.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| ( *)(\S+)", line)
        if not match:
            continue
        level, name, seconds = len(match.group(2)) // 2, match.group(3), int(match.group(1))
        if level == 0 and name == "app":
            break
        if level == 0:
            direct = {}
        elif level == 1:
            direct[name] = seconds / 1e6
    return sorted(direct.items(), key=lambda item: -item[1])[:count]


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="banana-bench-startup-"))
    try:
        imports = heavy_modules_after_import()
        slowest = slowest_imports()
        times = serve_times(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(_setup.describe_machine())
    _setup.print_table(f"Start-up of `python app.py` ({RUN_IMAGE_SIDE}px run, "
                       f"metrics {', '.join(METRICS)} + psnr, ssim)", ["moment", "seconds"],
                       [[name, round(seconds, 2)] for name, seconds in times.items()])
    _setup.print_table("Heavy modules loaded by `import app`", ["module", "loaded"],
                       [[name, "yes" if loaded else "no"] for name, loaded in imports.items()])
    _setup.print_table("Slowest imports of app.py (cumulative, -X importtime)",
                       ["module", "seconds"], [[n, round(s, 2)] for n, s in slowest])


if __name__ == "__main__":
    main()
