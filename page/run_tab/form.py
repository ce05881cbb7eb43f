"""The Run form: one field per control that Run sends, and how the form becomes a `RunSpec`.

A new control on the page is one widget in app.py (`form["name"] = gr.…`) plus one field of
`RunForm` here; a new backend option is one `Option` in its backend, from which its control, its
CLI flag and its place in the spec all follow (`option_control`, `cli.BACKEND_FLAGS`,
`spec_of`). The order of `field_names()` is the order of `/run`'s inputs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import gradio as gr

from banana_space.backends import OPTIONS
from banana_space.backends import REGISTRY as BACKENDS
from banana_space.backends.base import Option
from banana_space.chain.quota import default_judge_at
from banana_space.chain.spec import RunSpec, keyed
from banana_space.judges import REGISTRY as JUDGES
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.sources.images import load_image
from page.door.access import visitor_metric_names, whole_number

# The backend options with a control on the page (a replayed `source` is the upload itself).
FORM_OPTIONS: list[Option] = [option for option in OPTIONS.values() if option.label]


@dataclass(frozen=True)
class RunForm:
    """What the page's Run sends, one field per control; `options` holds the backends'
    options by name (`FORM_OPTIONS`), blank where the visitor left them blank."""

    upload: str | None = None  # the input image (for `replay`: a zip, animated GIF/WebP)
    steps: float = 10  # how many times the output is fed back in (1-100)
    prompt: str = DEFAULT_PROMPT  # the instruction sent with every step (the paper's)
    backend: str = "simulate"  # the generator's name (see /list_options)
    metrics: Sequence[str] = ()  # pyiqa no-reference metric names, ours, plug-ins; presets
    judges: Sequence[str] = ()  # VLM judge names
    seed: float = 0  # 0 .. 2**32-1; same seed, same simulated frames
    raw: bool = False  # one chart of raw scores per metric instead of the shared delta axis
    judge_at: str = ""  # "checkpoints" or "every" frame (blank: checkpoints on ZeroGPU)
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_values(cls, values: Sequence[Any]) -> RunForm:
        """The form from the values gradio sends, in `field_names()` order."""
        named = dict(zip(field_names(), values, strict=True))
        options = {option.name: named.pop(option.name) for option in FORM_OPTIONS}
        return cls(**named, options=options)

    @classmethod
    def named(cls, **values: Any) -> RunForm:
        """A form from its fields and backend options by name (a script's or a test's `/run`);
        an option left out has its control's starting value. An unknown name is a TypeError."""
        options = {option.name: values.pop(option.name, starting_value(option))
                   for option in FORM_OPTIONS}
        return cls(**values, options=options)

    def inputs(self) -> list[Any]:
        """The form as `/run`'s inputs, in `field_names()` order."""
        own = [getattr(self, f.name) for f in fields(self) if f.name != "options"]
        return own + [self.options.get(option.name, starting_value(option))
                      for option in FORM_OPTIONS]

    @property
    def key(self) -> str:
        """The visitor's key for this run only (its generator's and its judges'): what they
        typed in a secret control (`Option.secret`)."""
        return next((str(value) for name, value in self.options.items()
                     if OPTIONS[name].secret and value), "")


def starting_value(option: Option) -> Any:
    """An option's value before the visitor touches its control (a password box starts empty)."""
    return "" if option.secret else option.default


def field_names() -> list[str]:
    """The form's inputs in order: its own fields, then one per backend option control."""
    own = [f.name for f in fields(RunForm) if f.name != "options"]
    return own + [option.name for option in FORM_OPTIONS]


def inputs_of(controls: dict[str, Any]) -> list[Any]:
    """app.py's controls in the form's order; a control missing or left over is a mistake in
    app.py, said at start-up rather than found by a visitor."""
    names = field_names()
    missing, extra = set(names) - set(controls), set(controls) - set(names)
    if missing or extra:
        raise ValueError(f"the Run form's controls do not match RunForm: missing "
                         f"{sorted(missing)}, not fields {sorted(extra)}")
    return [controls[name] for name in names]


def form_event(handler: Callable[[RunForm, gr.Request], Any]) -> Callable[..., Any]:
    """`handler(form, request)` as a gradio event whose inputs are the form's controls: its
    signature names each field (gradio documents and counts inputs by it) and asks for the
    request, so the handler itself takes one `RunForm`. A generator stays a generator (gradio
    streams what it yields)."""
    if inspect.isgeneratorfunction(handler):
        def event(*values: Any) -> Any:
            *form, request = values
            yield from handler(RunForm.from_values(form), request)
    else:
        def event(*values: Any) -> Any:
            *form, request = values
            return handler(RunForm.from_values(form), request)

    parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY)
                  for name in field_names()]
    parameters.append(inspect.Parameter("request", inspect.Parameter.POSITIONAL_ONLY,
                                        annotation=gr.Request))
    event.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    event.__annotations__ = {"request": gr.Request}  # gradio finds the request by its type
    event.__name__, event.__doc__ = handler.__name__, handler.__doc__
    return event


def option_control(option: Option) -> Any:
    """A backend option's control on the page: a dropdown for choices, a slider for a range,
    a password box for a secret, else a number or text box (blank: the model's default)."""
    common = {"label": option.label, "elem_id": option.name.replace("_", "-")}
    if option.choices:
        return gr.Dropdown(list(option.choices), value=option.default,
                           info=option.help or None, **common)
    if option.low is not None and option.high is not None:
        return gr.Slider(option.low, option.high, value=option.default, step=option.step,
                         info=option.help or None, buttons=[], **common)
    if option.secret:
        return gr.Textbox(type="password", placeholder=option.help, **common)
    if option.kind in (int, float):
        # No precision for a whole number: gradio would round 2.5; `chosen_options` refuses it.
        return gr.Number(option.default, info=option.help or None, **common)
    return gr.Textbox(option.default, info=option.help or None, **common)


def chosen_options(form: RunForm, backend: str) -> dict[str, Any]:
    """The options the form sets for `backend`: those it takes, each as its kind, blanks left
    to the backend's own default."""
    entry = BACKENDS.get(backend)
    if entry is None:
        return {}
    chosen = {}
    for option in entry.info.options:
        value = form.options.get(option.name)
        if value in (None, ""):
            continue
        name = option.label.split(" (")[0]  # "Open editors: inference steps"
        chosen[option.name] = whole_number(value, name) if option.kind is int else (
            float(value) if option.kind is float else value)
    return chosen


def spec_of(form: RunForm, source: str) -> RunSpec:
    """The run the form asks for, from a `source` already checked (an upload gradio received,
    or an hf:// path). Bad input raises the engine's own errors (`access.REFUSALS`)."""
    steps, seed = whole_number(form.steps, "Steps"), whole_number(form.seed, "The seed")
    entry = BACKENDS.get(form.backend)
    chosen = {"seed": seed, "prompt": form.prompt,
              "metrics": visitor_metric_names(form.metrics, blank=()),
              "judges": list(form.judges or []),
              # The judges share one set of options, each taking those it names.
              "judge_options": keyed(form.backend, JUDGES, form.key)[1],
              "judge_at": form.judge_at or default_judge_at()}
    if entry is not None and entry.info.plays_recording:
        return RunSpec.replay(source, steps, **chosen)
    return RunSpec.of_image(load_image(source), steps, form.backend,
                            backend_options=chosen_options(form, form.backend), **chosen)
