"""Banana Space: the Gradio app. It reads the settings, composes the page from its tabs and
launches it; each tab builds itself (`page/run_tab/tab.py`, `page/compare_tab/tab.py`,
`page/leaderboard_tab.py`), the documented API and MCP tools are `page/api.py`'s, who may come
in is `page/door/`'s, and all the work is in `banana_space/`.

Start it with `bash scripts/start.sh` (or `python app.py` inside the venv). Host and port come
from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT, as on a Space; runs are written under
BANANA_RUNS_DIR (default ./runs) and kept within BANANA_KEEP_RUNS / BANANA_KEEP_GB
(`page/settings.py`).
"""

from __future__ import annotations

import os

from page.settings import SETTINGS

# The start's one write to the environment, before gradio is imported: gradio reads its upload
# folder (GRADIO_TEMP_DIR) then, and ours is the settings' (page/door/disk.py counts what is in
# it).
os.environ["GRADIO_TEMP_DIR"] = str(SETTINGS.uploads)

# isort: split
import gradio as gr
from starlette.middleware import Middleware

import page.zerogpu  # noqa: F401  (first: installs the spaces.GPU runner; plain off ZeroGPU)
from banana_space.chain.real_chains import start_preparing
from page import api, leaderboard_tab, lesson_prompts
from page.compare_tab import tab as compare_tab
from page.content import EXAMPLES, FOOTER, LICENCES
from page.door import body_limit, disk, gradio_patches, guard, identity, join, served, uploads
from page.run_tab import tab as run_tab
from page.run_tab.recordings import prepare_recordings
from page.style import PAGE_CSS, PAGE_JS, THEME, VOTE_CSS
from page.vote_tab import tab as vote_tab

DELETE_CACHE = (min(3600, SETTINGS.uploads_keep_s), SETTINGS.uploads_keep_s)  # see disk.py
# Sessions whose values gradio keeps (its default is 10,000): the page keeps nothing in them
# that a request does not send again (the run id rides in a hidden field), so this bounds their
# memory, each at most a request body (`page/door/body_limit.py`), for as many tabs as a small
# Space sees.
SESSIONS_KEPT = 256
# The page's events a client may still call by name; every other undocumented one is private.
STREAMING = {"run", "resume", "open", "replay_hub"}


def build() -> gr.Blocks:
    """The page, composed from its tabs (nothing is built or written before this is called)."""
    # Frames are written once and never change, so gradio serves them where they lie instead
    # of hashing and copying the current frame into its cache on every streamed update (~8 ms
    # per 1024 px frame; bench/streaming.py). Like allowed_paths, this serves all under it.
    gr.set_static_paths([SETTINGS.runs_root])
    with gr.Blocks(title="Banana Space", delete_cache=DELETE_CACHE) as demo:
        shown = run_tab.build(demo)
        api.build()
        lesson_prompts.build()  # the lessons as MCP prompts
        with gr.Tabs() as tabs:
            leaderboard_tab.build()  # the committed results of `banana-space leaderboard`
            # two chains side by side, the lessons (one of them the Vote tab's)
            vote_first = compare_tab.build(demo, EXAMPLES[0], tabs)
            vote_tab.build(demo, tabs, shown, vote_first)  # `?vote=<id>` opens it alone
        with gr.Accordion("Licences and terms", open=False, elem_id="licences-and-terms"):
            gr.Markdown(LICENCES)
        gr.Markdown(FOOTER, elem_id="footer")
        # gradio's own helpers register undocumented events that a client can call by name
        # (the share button's `/lambda`, the examples' loader): plumbing too, so private.
        for event in demo.fns.values():
            if event.api_visibility == "undocumented" and event.api_name not in STREAMING:
                event.api_visibility = "private"
    return demo


def main() -> None:
    """Serve the page: what a killed process left behind is cleared first (before the page is
    built, since building it puts the example pictures' thumbnails into that same folder)."""
    disk.clear_stale(guard.ORPHAN_GRACE_S)
    SETTINGS.runs_root.mkdir(parents=True, exist_ok=True)
    demo = build()
    # No queue size: cheap events are never refused; chains are bounded by join.py. Every
    # event goes through the queue (`api_open=False`): gradio's /run/<api_name> route would
    # skip it, and every check made where an event joins it (gradio opens that route
    # everywhere but on a Space).
    demo.queue(max_size=None, default_concurrency_limit=8, api_open=False)
    join.install(demo)
    gradio_patches.trust_no_proxy()  # who a visitor is: page/door/identity.py, never uvicorn's
    start_preparing(SETTINGS.runs_root)  # Banana100's own chains, where the hub is reachable
    prepare_recordings()  # ours, zipped and animated before anyone clicks one
    # Outermost first: a body too large is refused before anything reads it; an MCP call's
    # caller is sealed before anything reads who asks.
    middleware = [Middleware(body_limit.BodyLimit), Middleware(identity.SignInErrors),
                  Middleware(identity.McpCaller), Middleware(identity.BrowserCookie),
                  Middleware(served.PrivateFiles), Middleware(uploads.UploadGuard)]
    demo.launch(allowed_paths=[str(SETTINGS.runs_root)], theme=THEME,
                css=PAGE_CSS + VOTE_CSS, js=PAGE_JS,
                # a 64-Mpx PNG, or ~70 frames of 1024 px PNGs in a zip; gradio refuses more
                max_file_size=body_limit.UPLOAD_BYTES, mcp_server=True,
                state_session_capacity=SESSIONS_KEPT, app_kwargs={"middleware": middleware})


if __name__ == "__main__":
    main()
