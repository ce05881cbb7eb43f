"""The Run tab: one chain at a time, streamed as it is made.

`tab` lays the tab out and wires it; `form` is the Run form (one field per control, and how it
becomes a `RunSpec`); `handlers` what Run, Stop, Resume, opening a run and the compared frame
do; `pictures` what a visitor starts from (recordings, real chains, example pictures, the
upload's preview and its condition); `recordings` the bundled recordings' downloads, made at
start-up; `first_look` the decay shown before any click (the first damage recording's input
beside a late copy, magnified, its curves and headline); `past` a visitor's past runs, newest
first, each with what it is; `outputs` the one output contract of every event that shows a run.
"""

__all__ = ["first_look", "form", "handlers", "outputs", "past", "pictures", "recordings", "tab"]
