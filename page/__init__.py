"""The page: everything between a visitor and the engine (`banana_space/`), as one package.

- `settings.py`  every setting of the page, read once into a frozen `Settings` (imported first)
- `disk.py`      what a visitor may put on disk, and its share (no gradio)
- `guard.py`     who a request comes from, and how much one visitor may hold
- `access.py`    refusals, run ids confined to the runs folder, one chain per browser tab
- `form.py`      the Run form: one field per control, and how it becomes a `RunSpec`
- `outputs.py`   `PageOutputs`: the one output contract of every event that shows a run
- `handlers.py`  what each button, toggle and page load does
- `api.py`       the documented API, which is also the MCP server's tools
- `style.py`     all CSS, browser scripts and the theme
- `leaderboard_tab.py`  the Leaderboard tab

app.py (at the repository's root, the Space's entry) lays the page out and wires it.
"""
