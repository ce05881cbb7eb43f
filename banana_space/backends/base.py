"""The one tiny interface every generator backend implements.

A backend declares what it is (`BackendInfo`) and does one thing: image + prompt + seed -> image
(`edit`); while it waits it may say so (`Report`), and it says it cannot run here
(`BackendUnavailable`) or gave no image (`GenerationFailed`) in words a person reads (judges
say the same, in the same words). The chain in `banana_space.chain.loop` feeds each output back
in, so a backend never sees the loop. Heavy SDKs are imported lazily inside the backend that
needs them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from PIL import Image

# A backend or judge may call this while it waits (e.g. "429 from the API, retrying in 2.1 s…").
# The chain turns each call into a `Notice` event that the UI and CLI show at once.
Report = Callable[[str], None]


def report_nothing(message: str) -> None:
    """The default `Report`: used where nobody listens (tests, one-off calls)."""


class BackendUnavailable(RuntimeError):
    """Raised when a backend (or judge) cannot run here (no key, no GPU, missing package).

    The message is shown to the user as is, so it must say what to do, and must never contain
    a secret.
    """


class GenerationFailed(RuntimeError):
    """Raised by `edit` when the generator answered but gave no usable image (a safety block,
    an empty candidate, text only). The chain ends the run as *failed at step k* with this
    message and keeps every frame made before.
    """


@dataclass(frozen=True)
class Option:
    """One keyword option a backend (or judge) takes: the constructor's keyword, the CLI's
    `--flag` and the page's control are all made from this one row (`cli.BACKEND_FLAGS`,
    `page/run_tab/form.py`).

    A `label` puts a control on the page (a slider with `low`/`high`/`step`, a dropdown with
    `choices`, else a number or text box); without one the option is set some other way (a
    replayed `source` is the upload). A `secret` (an API key) is never a flag, never recorded
    and never shown back; `flag=False` keeps an option off the command line.
    """

    name: str
    kind: type = str  # float, int or str: what a flag or a form value is turned into
    label: str = ""
    help: str = ""
    default: Any = None  # the page control's starting value (None: blank, the model's default)
    choices: tuple[tuple[str, str], ...] = ()  # (label, value)
    low: float | None = None
    high: float | None = None
    step: float | None = None
    secret: bool = False
    flag: bool = True


@dataclass(frozen=True)
class BackendInfo:
    name: str  # registry and CLI name, e.g. "simulate"
    label: str  # what the UI shows, e.g. "Simulated (offline)"
    description: str  # one line for the UI's help text
    needs_key: bool = False
    needs_gpu: bool = False
    # The keyword options the page and the CLI may pass to the constructor (e.g. "strength").
    options: tuple[Option, ...] = ()
    # True for a backend that plays back a recording: its input is a `source` (folder, zip,
    # animated image), not an image, and it brings frame 0 itself (`first_frame()`) and the
    # steps it has frames for (`steps`: a gap is not made).
    plays_recording: bool = False

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(option.name for option in self.options)

    def takes(self, name: str) -> bool:
        """Does the constructor take the keyword option `name`?"""
        return name in self.option_names


@dataclass(frozen=True)
class Edit:
    """What one call to a generator gave back."""

    image: Image.Image
    text: str = ""  # the model's own words (text and thought-summary parts), if any
    calls: int = 1  # API or pipeline calls this step took (retries included)
    cost_usd: float | None = None  # estimated spend of this step, where a price is known
    extra: dict[str, Any] = field(default_factory=dict)  # small JSON-able facts for run.json


class Backend(Protocol):
    info: BackendInfo

    def unavailable_reason(self) -> str | None:
        """None when the backend can run here; otherwise a one-line how-to for the user."""
        ...

    def settings(self) -> dict[str, Any]:
        """The settings that shape the output, for run.json. Never a secret."""
        ...

    def edit(self, image: Image.Image, prompt: str, *, seed: int, step: int,
             report: Report = report_nothing) -> Edit:
        """Produce frame `step` (1-based) from frame `step - 1`."""
        ...


@dataclass(frozen=True)
class Entry:
    """One row of the backend registry."""

    info: BackendInfo
    create: Callable[..., Backend]  # keyword options -> a ready backend
    # Can it run on this machine before the user types anything? None = yes, else a one-line
    # how-to ("needs a key: set GEMINI_API_KEY or paste one under Advanced"). Cheap: loads nothing.
    unavailable_reason: Callable[[], str | None] = lambda: None


def options_of(infos: list[BackendInfo]) -> dict[str, Option]:
    """Every option the backends take, by name, in the registry's order: one CLI flag and one
    page control each. Two backends may share an option only by sharing its one definition."""
    found: dict[str, Option] = {}
    for info in infos:
        for option in info.options:
            if found.setdefault(option.name, option) != option:
                raise ValueError(f"option {option.name!r} of backend {info.name!r} differs "
                                 "from another backend's option of that name")
    return found
