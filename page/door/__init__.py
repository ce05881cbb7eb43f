"""The door: who asks, what they may send, and how much they may hold.

`identity` tells a browser, an account or a token (and the address, for ceilings only);
`guard` admits a chain against the per-visitor caps and holds every stop flag; `access`
words refusals and confines run ids to the runs folder; `body_limit` caps every request body;
`served` keeps a run's private files off gradio's file routes; `url_inputs` fetches an https
image from public addresses only; `disk` is a visitor's share of the disk; `gradio_patches`
is everything this app does to gradio's internals, each patch saying why.
"""

__all__ = ["access", "body_limit", "disk", "gradio_patches", "guard", "identity", "served",
           "url_inputs"]
