"""The page: everything between a visitor and the engine (`banana_space/`), as one package.

- `settings.py`   every setting of the page, read once into a frozen `Settings` (imported first)
- `content.py`    the page's words and pictures: the claim, About, Help, licences, examples
- `door/`         who asks, what they may send and how much they may hold: identity, the
                  queue's join check, shares and caps, stop flags, uploads, URL inputs, request
                  bodies, private files, the disk, gradio's patched internals, refusals
- `runner.py`     the one runner: every chain's lifecycle, one side or two (claim, admit,
                  start or resume, owner), and its two ends (`stream` to a page's view,
                  `until_end` for the API)
- `run_tab/`      the Run section: its layout and wiring (`tab.py`), the form, the handlers,
                  the first screen's pictures, the output contract
- `compare_tab/`  the Compare tab: two chains side by side, the lessons, the Why panel; the
                  sides from what a visitor sends
- `vote_tab/`     the Vote tab: the class's voting view, who may vote and how often, which
                  pair comes next, the teacher's QR code and live count
- `leaderboard_tab.py`  the Leaderboard tab: the committed results
- `api.py`        the documented API, which is also the MCP server's tools
- `lesson_prompts.py`  the Compare tab's lessons as MCP prompts
- `style.py`      every tab's CSS, the browser scripts and the theme
- `zerogpu.py`    the app's side of the GPU seam: `spaces.GPU` on the few calls that need a
                  GPU (one edit step or one judged frame each), imported first by app.py

app.py (at the repository's root, the Space's entry) composes the tabs and launches the page.
"""
