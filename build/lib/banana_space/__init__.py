"""Banana Space's engine: replication chains, pyiqa scores and the paper's verdicts.

Banana100 (arXiv 2604.03400) asked an image editor 100 times in a row for an exact replica of
its own output; the images degraded while no-reference quality metrics called them better.
This package runs such chains (`runs.start_run`), scores every frame with pyiqa, and writes one
run-directory format that the CLI, the Gradio app and the tests share. It never imports gradio.
"""
