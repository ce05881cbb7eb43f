"""gradio's internals in one room (issue 42, item 6): the installed gradio is the one
`page/door/gradio_patches.py` was written for, each function it patches or reads still has the
shape it expects (this test fails the day an upgrade changes one), and the start-up check
stops the app on a gradio it does not know."""

from __future__ import annotations

import gradio as gr
import gradio.oauth
import pytest
from gradio.queueing import Queue

from page.door import gradio_patches


def test_the_installed_gradio_is_the_one_the_patches_were_written_for() -> None:
    gradio_patches.check()  # raises, naming the function, if gradio changed under a patch
    for name, (function, _) in gradio_patches.SHAPES.items():
        owner, attribute = name.split(".")
        home = {"Queue": Queue, "File": gr.File, "oauth": gradio.oauth}[owner]
        assert getattr(home, attribute) is function, name


def test_a_changed_function_or_version_stops_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    async def push(self, body, request):  # gradio dropped `username`
        return None

    shapes = dict(gradio_patches.SHAPES)
    shapes["Queue.push"] = (push, shapes["Queue.push"][1])
    monkeypatch.setattr(gradio_patches, "SHAPES", shapes)
    with pytest.raises(RuntimeError, match="Queue.push now takes"):
        gradio_patches.check()
    monkeypatch.undo()
    monkeypatch.setattr(gr, "__version__", "7.0.0")
    with pytest.raises(RuntimeError, match="written for gradio 6.31.0, not 7.0.0"):
        gradio_patches.check()
