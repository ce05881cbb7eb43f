"""The page's own CSS, browser scripts and theme, as strings for app.py: layout only.

The frame strip (a row of thumbnails that follows the newest frame), the share control (copies
`?run=<id>&frame=<i>`; whoever opens it is scrolled to the result),
the compare slider's alt text (gr.ImageSlider has none of its own), the summary
line's type, the scroll to the result, and a theme in the system's font whose help, label and
button text read at >= 4.5:1 (WCAG AA).
"""

from __future__ import annotations

import gradio as gr

from banana_space.store.run import FRAME_STEP_JS
from banana_space.verdict.columns import phone_hidden

# ---- Sharing: one control that copies the link to this view (run + compared frame) ----
SHARE_HTML = """<div class="share">${value ? `<button type="button">🔗 Copy a link to this view
</button> <a href="${value}" target="_top" rel="noopener">${value}</a>
<span role="status"></span>` :
'<span class="none">A link to share appears here once a run has frames.</span>'}</div>"""
SHARE_CSS = """.share {display: flex; flex-wrap: wrap; gap: 8px; align-items: center}
.share button {padding: 6px 12px; border-radius: 6px; border: 1px solid var(--border-color-primary);
               background: var(--button-secondary-background-fill);
               color: var(--button-secondary-text-color); cursor: pointer}
.share a {color: var(--link-text-color); word-break: break-all; font-size: 13px}
.share .none, .share span {color: var(--body-text-color-subdued); font-size: 13px}"""
# The clipboard needs a secure page (https or localhost); elsewhere the link is selected, so
# Ctrl+C copies it.
SHARE_JS = """element.addEventListener('click', async (event) => {
  if (!event.target.closest('button')) return;
  const link = element.querySelector('a');
  const said = element.querySelector('[role=status]');
  const url = new URL(link.getAttribute('href'), window.location.href).href;
  try {
    await navigator.clipboard.writeText(url);
    said.textContent = 'Copied ✓';
  } catch (error) {
    window.getSelection().selectAllChildren(link);
    said.textContent = 'Selected: press Ctrl+C (or ⌘C) to copy';
  }
});"""
# ---- The chain as an animation, once the run has ended: its own component, its value the
# picture's address. Not a second template prop of the share card: Gradio 6.31's page drops an
# HTML component's own props on any update that does not name them (a gr.skip() too), and the
# card's template then failed with "animation is not defined".
ANIMATION_HTML = """${value ? `<figure>
<img src="${value}" alt="The chain as an animation, step by step">
<figcaption><a href="${value}" download>⬇ Download the chain as an animation (WebP)</a>
</figcaption></figure>` : ''}"""
ANIMATION_CSS = """figure {margin: 0}
figure img {max-width: min(100%, 480px); height: auto; border-radius: 6px}
figure a {color: var(--link-text-color); font-size: 13px}"""


def scroll_to_js(query: str, selector: str) -> str:
    """Opened from a shared link (`?<query>=…`), the page scrolls to its result (`selector`),
    which otherwise starts a screen and a half down on a phone, or on a tab not yet drawn: it
    waits, up to thirty seconds, for the result to be drawn, then keeps it in view while
    pictures and charts above it finish drawing (they push it down), until the visitor scrolls,
    types or clicks, or fifteen seconds have passed."""
    return f"""() => {{
  if (!new URLSearchParams(window.location.search).has('{query}')) return;
  let tries = 0, moved = false;
  for (const kind of ['wheel', 'touchstart', 'keydown', 'mousedown'])
    window.addEventListener(kind, () => {{ moved = true; }}, {{once: true, passive: true}});
  const scroll = () => {{
    const result = document.querySelector('{selector}');
    if (result && result.getBoundingClientRect().height > 0) {{
      result.scrollIntoView({{block: 'start'}});
      const follow = new ResizeObserver(() => {{
        if (!moved) result.scrollIntoView({{block: 'start'}});
      }});
      follow.observe(document.body);
      setTimeout(() => follow.disconnect(), 15000);
    }} else if (tries++ < 600) setTimeout(scroll, 50);
  }};
  setTimeout(scroll, 50);
}}"""


SCROLL_TO_RESULT_JS = scroll_to_js("run", "#summary")
SCROLL_TO_COMPARISON_JS = scroll_to_js("compare", "#compare-status")


# Charts in the page's colour scheme: the figures are drawn on the server, in light colours
# (`verdict.plots`), before anyone knows the visitor's scheme; in dark mode the page's CSS
# repaints them as plotly.js draws them (inline styles, which an !important rule overrides),
# so every redraw of a streaming run follows too. Backgrounds go clear, text takes the page's
# colour, grid lines dim, and the curves drawn dark (the references' black and greys, the
# indigo and wine metrics, the compared step's line) are drawn light.
DARK_CURVES = {"#000000": "#f3f4f6", "#6b6b6b": "#b0b0b0", "#404040": "#d4d4d4",
               "#595959": "#bdbdbd", "#332288": "#a99cf5", "#882255": "#e583b1",
               "#374151": "#d1d5db"}


def _rgb(colour: str) -> str:
    """"#374151" as plotly.js writes it in a style: "rgb(55, 65, 81)"."""
    return "rgb({}, {}, {})".format(*(int(colour[i:i + 2], 16) for i in (1, 3, 5)))


DARK_PLOTS_CSS = """.dark .js-plotly-plot .main-svg {background: transparent !important}
.dark .js-plotly-plot .bg {fill: transparent !important}
.dark .js-plotly-plot text {fill: var(--body-text-color) !important}
.dark .js-plotly-plot .gridlayer path, .dark .js-plotly-plot .zerolinelayer path {
  stroke: rgba(255, 255, 255, .16) !important}
""" + "".join(
    f'.dark .js-plotly-plot [style*="{prop}: {_rgb(light)};"] {{{prop}: {dark} !important}}\n'
    for light, dark in DARK_CURVES.items() for prop in ("stroke", "fill"))
# The verdict table's columns a phone leaves out (the zip and wider screens have them), as the
# column table marks them (`verdict.columns`).
# gradio draws the header as a table and the rows as divs (`[role=gridcell]`, virtual rows):
# both are named, or a hidden header leaves its cells 0 px wide and each row ~120 px tall.
PHONE_HIDDEN = ", ".join(f"#verdict th:nth-child({n}), #verdict td:nth-child({n}), "
                         f"#verdict [role=row] > [role=gridcell]:nth-child({n})"
                         for n in phone_hidden())
# ---- Page-wide CSS and JS: the summary's type, alt text, grids that fit a phone ----
# The Vote tab: big buttons for a phone, and a class link's voting view alone (`vote-only`).
VOTE_CSS = """#vote-panel .vote-button {font-size: 1.35em; min-height: 64px}
#vote-reveal p {font-size: 1.15em}
body.vote-only #vote-panel {position: fixed; inset: 0; z-index: 1000; overflow: auto;
  background: var(--body-background-fill); padding: 8px}
body.vote-only * {visibility: hidden}
body.vote-only #vote-panel, body.vote-only #vote-panel *,
body.vote-only .toast-wrap, body.vote-only .toast-wrap * {visibility: visible}
#class-qr svg {width: min(100%, 360px); height: auto}"""
PAGE_CSS = """#claim h1 {margin: 0 0 4px; font-size: 1.6em}
#claim p {margin: 0; font-size: 1.1em}
#run-note p {margin: 2px 0 0; font-size: 14px; color: var(--body-text-color-subdued)}
#status {scroll-margin-top: 4px}
#summary {font-size: 1.15em; line-height: 1.45; scroll-margin-top: 8px}
#summary p {margin: 4px 0}
#summary details {font-size: 0.87em}
#summary summary {cursor: pointer; color: var(--link-text-color)}
#status, #summary, #status .prose, #summary .prose {overflow: visible !important}
#plot {min-height: 440px}
#examples .grid-container {grid-template-columns: repeat(auto-fill, minmax(76px, 1fr))}
/* The label chips sit above the pictures, never on them. */
#magnifier [data-testid=block-label], #frame [data-testid=block-label],
#compare [data-testid=block-label], #first-look-picture [data-testid=block-label] {
  position: static; margin-bottom: 4px}
#first-look-headline p {margin: 0; font-size: 1.1em}
/* Text that gradio draws at under 4.5:1 (WCAG AA): the theme's subdued colour, which THEME
   sets to read at >= 4.5:1 in both schemes. */
.or, [data-testid=min-value], [data-testid=max-value], footer, footer a, footer button,
.show-api, .built-with, .settings, #leaderboard-tab-button {
  color: var(--body-text-color-subdued) !important}
@media (max-width: 640px) {
  #verdict {font-size: 13px}
  #plot .modebar-container {display: none}
  /* A phone's first screen is the claim, the headline and the picture; the curves are the
     result's, a screen below. */
  #first-look-curves {display: none}
  /* The picture at a height a phone can read (its four parts side by side were ~64 px tall),
     swiped sideways. */
  #first-look-picture .image-container {overflow-x: auto}
  #first-look-picture .image-frame, #first-look-picture .image-container button {
    width: max-content}
  #first-look-picture img {height: 200px; width: auto; max-width: none}
  #examples .grid-container {grid-template-columns: repeat(auto-fill, minmax(64px, 1fr))}
}
@media (max-width: 640px) {""" + PHONE_HIDDEN + " {display: none}}\n" + DARK_PLOTS_CSS
PAGE_JS = r"""() => {
  // Every picture says what it shows to a reader that cannot see it (gr.ImageSlider has no
  // alt text of its own; the file names say which frames it compares).
  const describe = () => {
    const images = document.querySelectorAll('#compare img');
    if (images.length < 2) return;
    const step = images[1].src.match(/FRAME_STEP/)?.[1] ?? 'i';
    images[0].alt = 'the input, step 0 (left of the slider)';
    images[1].alt = `frame ${step} of the chain (right of the slider)`;
  };
  // gradio's empty picture and plot placeholders carry an aria-label on a plain div, which
  // ARIA does not allow (axe: aria-prohibited-attr); they say nothing a reader needs.
  // The recorded-chain picker's radios as one group: one tab stop, arrow keys inside; the
  // plot's toolbar is the mouse's (its download is in the zip's plot.html): out of Tab's way.
  const unlabel = () => {
    document.querySelectorAll('.empty[aria-label]').forEach(e => e.removeAttribute('aria-label'));
    document.querySelectorAll('#recorded input[type=radio]').forEach(r => r.name = 'recorded');
    document.querySelectorAll('#plot .modebar-btn, #first-look-plot .modebar-btn')
      .forEach(b => b.tabIndex = -1);
  };
  // The example pictures are named by what they show: gradio names each "Thumbnail k of 8",
  // leaving out the caption a sighted visitor reads and may say aloud (WCAG 2.5.3 Label in
  // Name; axe 4.14: label-content-name-mismatch).
  const nameExamples = () => {
    const items = document.querySelectorAll('#examples .thumbnail-item');
    items.forEach((item, k) => {
      const caption = item.querySelector('.caption-label')?.textContent.trim();
      const name = `${caption}: example picture ${k + 1} of ${items.length}`;
      if (caption && item.getAttribute('aria-label') !== name)
        item.setAttribute('aria-label', name);
    });
  };
  new MutationObserver(() => { describe(); unlabel(); nameExamples(); }).observe(document.body,
    {subtree: true, childList: true, attributes: true,
     attributeFilter: ['src', 'value', 'aria-label']});
  unlabel();
  nameExamples();
  document.body.dataset.pageScript = 'ready';  // the browser test waits for it before axe
  // A click on Run, Stop, Resume, Replay or a recorded chain brings the result (its status line
  // first) into view at once, on every screen: otherwise it streams in a screen away.
  document.addEventListener('click', (event) => {
    if (!event.target.closest('#run-button, #stop-button, #resume-button, #recorded label, '
                              + '#hub-replay'))
      return;
    document.querySelector('#status')?.scrollIntoView({block: 'start', behavior: 'instant'});
  });
}""".replace("FRAME_STEP", FRAME_STEP_JS)  # the step from a frame's file name
# Gradio's Soft theme writes help text at 2.5:1 on white and labels in indigo at 3.6:1 on
# their pale chips; these read at >= 4.5:1. gradio follows the visitor's colour scheme
# (`?__theme=dark`, or the system's), so every colour is set for both, and the page's CSS
# names the theme's variables (--body-text-color-subdued, --link-text-color, …), never a
# colour of its own that suits one scheme.
# The page's font is the system's own (Soft's Montserrat draws N and Q like "Ŋ" and "Ɋ"); the
# primary button is a shade darker, so its white text reads at >= 4.5:1.
SYSTEM_FONTS = ["system-ui", "-apple-system", "Segoe UI", "Roboto", "Helvetica Neue", "Arial",
                "sans-serif"]
THEME = gr.themes.Soft(font=SYSTEM_FONTS,
                       font_mono=["ui-monospace", "Consolas", "monospace"]).set(
    block_info_text_color="#4b5563", block_info_text_color_dark="#d1d5db",
    body_text_color_subdued="#4b5563", body_text_color_subdued_dark="#d1d5db",
    link_text_color="#1d4ed8", link_text_color_dark="#93c5fd",
    block_title_text_color="*primary_700", block_label_text_color="*primary_700",
    button_primary_background_fill="*primary_700",
    checkbox_label_background_fill_selected="*primary_700",
    button_primary_background_fill_hover="*primary_800")

# The frame strip: fixed-size thumbnails in one row that scrolls sideways as frames arrive,
# keeping the newest in view unless the visitor has scrolled back to look at an older one.
STRIP_CSS = """.strip {display: flex; gap: 6px; overflow-x: auto; min-height: 92px; padding: 2px 0}
.strip:empty::before {content: "Each frame appears here as soon as it is made.";
                      color: var(--body-text-color-subdued);
                      align-self: center}
.strip a {position: relative; flex: 0 0 auto; margin: 0}
.strip img {width: 88px; height: 88px; margin: 0; object-fit: cover; border-radius: 6px;
            display: block}
.strip span {position: absolute; right: 4px; bottom: 4px; padding: 0 5px; border-radius: 4px;
             font-size: 11px; background: rgba(255, 255, 255, .85); color: #222}"""
STRIP_JS = """let left = null;  // where the visitor scrolled the strip to; null: follow the newest
element.addEventListener('scroll', (event) => {
  const s = event.target;
  left = s.scrollLeft + s.clientWidth >= s.scrollWidth - 4 ? null : s.scrollLeft;
}, true);
watch('value', () => {
  const s = element.querySelector('.strip');
  if (s) s.scrollLeft = left ?? s.scrollWidth;
});
// One tab stop for the strip; the arrow keys (and Home, End) move between its frames.
element.addEventListener('keydown', (event) => {
  const links = [...element.querySelectorAll('.strip a')];
  const at = links.indexOf(document.activeElement);
  const to = {ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: links.length - 1}[event.key];
  if (at < 0 || to === undefined || !links[to]) return;
  event.preventDefault();
  links.forEach((link, i) => link.tabIndex = i === to ? 0 : -1);
  links[to].focus();
});"""
