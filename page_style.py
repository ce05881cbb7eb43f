"""The page's own CSS, browser scripts and theme, as strings for app.py: layout only.

The share control (copies `?run=<id>&frame=<i>`; whoever opens it is scrolled to the result),
the compare slider's alt text (gr.ImageSlider has none of its own), the summary
line's type, and a theme whose help and label text read at >= 4.5:1 (WCAG AA).
"""

from __future__ import annotations

import gradio as gr

# ---- Sharing: one control that copies the link to this view (run + compared frame) ----
SHARE_HTML = """<div class="share">${value ? `<button type="button">🔗 Copy a link to this view
</button> <a href="${value}" rel="noopener">${value}</a> <span role="status"></span>` :
'<span class="none">A link to share appears here once a run has frames.</span>'}</div>"""
SHARE_CSS = """.share {display: flex; flex-wrap: wrap; gap: 8px; align-items: center}
.share button {padding: 6px 12px; border-radius: 6px; border: 1px solid #6b7280;
               background: white; color: #111827; cursor: pointer}
.share a {color: #1d4ed8; word-break: break-all; font-size: 13px}
.share .none, .share span {color: #4b5563; font-size: 13px}"""
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
# Opened from a shared link, the page scrolls to the result, which otherwise starts a screen
# and a half down on a phone.
SCROLL_TO_RESULT_JS = """() => {
  if (!new URLSearchParams(window.location.search).has('run')) return;
  const summary = document.querySelector('#summary');
  if (summary) setTimeout(() => summary.scrollIntoView({block: 'start'}), 50);
}"""

# ---- Page-wide CSS and JS: the summary's type, alt text, grids that fit a phone ----
PAGE_CSS = """#summary {font-size: 1.15em; line-height: 1.45; scroll-margin-top: 8px}
#summary p {margin: 4px 0}
#plot {min-height: 380px}
#examples .grid-container {grid-template-columns: repeat(auto-fill, minmax(76px, 1fr))}
@media (max-width: 640px) {#verdict {font-size: 12px}}"""
PAGE_JS = r"""() => {
  // Every picture says what it shows to a reader that cannot see it (gr.ImageSlider has no
  // alt text of its own; the file names say which frames it compares).
  const describe = () => {
    const images = document.querySelectorAll('#compare img');
    if (images.length < 2) return;
    const step = images[1].src.match(/step_0*(\d+)\.png/)?.[1] ?? 'i';
    images[0].alt = 'the input, step 0 (left of the slider)';
    images[1].alt = `frame ${step} of the chain (right of the slider)`;
  };
  new MutationObserver(describe).observe(document.body,
    {subtree: true, childList: true, attributes: true, attributeFilter: ['src', 'value']});
}"""
# Gradio's Soft theme writes help text at 2.5:1 on white and labels in indigo at 3.6:1 on
# their pale chips; these read at >= 4.5:1.
THEME = gr.themes.Soft().set(block_info_text_color="#4b5563",
                             block_info_text_color_dark="#d1d5db",
                             block_title_text_color="*primary_700",
                             block_label_text_color="*primary_700")
