"""The door: who asks, what they may send, and how much they may hold.

`identity` tells a browser, an account or a token (and the address, for ceilings only);
`join` checks every event as it joins gradio's queue (numbers, URL files, chains and previews
in flight); `guard` holds each visitor's shares (cost in flight, runs kept, owners);
`stop_flags` who may stop a chain in flight; `uploads` the files a visitor sends and their
share; `url_inputs` fetches an https image from public addresses only; `body_limit` caps every
request body; `served` keeps a run's private files off gradio's file routes; `disk` is a
visitor's share of the disk; `access` words refusals and confines run ids to the runs folder;
`gradio_patches` is everything this app does to gradio's internals, each patch saying why;
`operator_key` keeps the key owners are hashed with across restarts when none is configured.
"""

__all__ = ["access", "body_limit", "disk", "gradio_patches", "guard", "identity", "join",
           "operator_key", "served", "stop_flags", "uploads", "url_inputs"]
