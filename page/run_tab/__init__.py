"""The Run tab: one chain at a time, streamed as it is made.

`form` is the Run form (one field per control, and how it becomes a `RunSpec`); `outputs`
the one output contract of every event that shows a run; `handlers` what each button and
page load does.
"""

__all__ = ["form", "handlers", "outputs"]
