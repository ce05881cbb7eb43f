"""Shared plumbing for Google's Gemini API through the official `google-genai` SDK.

Used by the Nano Banana generators (`backends/gemini.py`) and the Gemini judge
(`judges/gemini_judge.py`), so the key rules, the one retry policy and the reading of an answer
live in one place. Request and response shapes: https://ai.google.dev/api/generate-content;
image options: https://ai.google.dev/gemini-api/docs/image-generation.

The key is a secret: it is resolved here, handed to the SDK, and scrubbed ("***") from every
message that leaves this module. The SDK is imported lazily, so importing this file is cheap.
"""

from __future__ import annotations

import importlib
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from PIL import Image

from ..backends.base import GenerationFailed, Report
from ..files import png_bytes
from ..settings import engine_settings

KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")  # first one set wins, after an explicit key
MISSING_KEY = ("needs a key: set GEMINI_API_KEY (a Space secret) or paste your key under "
               "Advanced")
# Google's REST docs for image generation, thinking and preview models all use v1beta; the SDK's
# own default (v1) may lack them, so we pin it.
API_VERSION = "v1beta"
# Finish reasons that mean "refused", even if some image came back (e.g. a partial one).
BLOCKING_FINISH_REASONS = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION",
                           "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"}

T = TypeVar("T")


def resolve_key(api_key: str | None) -> str | None:
    """The key to use: the one given, else GEMINI_API_KEY, else GOOGLE_API_KEY, else None."""
    for candidate in (api_key, *(os.environ.get(name) for name in KEY_VARS)):
        if candidate and candidate.strip():
            return candidate.strip()
    return None


def key_missing() -> str | None:
    """Registry check, before the user types anything: None when a key is in the environment."""
    return None if resolve_key(None) else MISSING_KEY


# Real Gemini keys are 39 characters. Scrubbing a toy key such as "k" (a fake server's) would
# turn every "k" in a message into "***", so shorter strings are left alone.
MIN_SCRUB_LENGTH = 8


def scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret and len(secret) >= MIN_SCRUB_LENGTH else text


def make_client(api_key: str, base_url: str | None, timeout_s: float) -> Any:
    """A `genai.Client` for the Gemini Developer API, with the SDK's own retry switched off so
    that `call_with_retries` is the only one (two stacked retry loops multiply waits)."""
    from google import genai
    from google.genai import types

    options = types.HttpOptions(api_version=API_VERSION, timeout=round(timeout_s * 1000),
                                retry_options=types.HttpRetryOptions(attempts=1))
    if base_url:
        options.base_url = base_url
    return genai.Client(vertexai=False, api_key=api_key, http_options=options)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter for 429 and 5xx, bounded in count and in total wait."""

    max_retries: int = 4
    first_delay_s: float = 2.0
    max_delay_s: float = 30.0
    max_total_wait_s: float = 120.0
    sleep: Callable[[float], None] = time.sleep  # injectable: tests do not really wait
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, retry: int, server_hint_s: float | None) -> float:
        # The API's own RetryInfo ("retry in 13s") beats our guess when it gives one.
        base = server_hint_s if server_hint_s is not None else self.first_delay_s * 2 ** (retry - 1)
        # Up to 25 % jitter so that parallel runs do not retry in lock step.
        return min(self.max_delay_s, base) * self.rng.uniform(1.0, 1.25)


def _server_delay_s(error: Any) -> float | None:
    """The wait the API asks for in a google.rpc.RetryInfo detail of a 429, if any."""
    details = error.details.get("error", {}).get("details", []) \
        if isinstance(error.details, dict) else []
    for detail in details:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            try:
                return float(str(detail.get("retryDelay", "")).rstrip("s"))
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class _Failure:
    what: str  # for the report: "answered 429", "could not be reached"
    problem: str  # for the error message, key scrubbed
    retryable: bool
    server_delay_s: float | None = None


def _classify(error: Exception, secret: str | None) -> _Failure:
    from google.genai import errors

    if isinstance(error, errors.APIError):
        return _Failure(f"answered {error.code}",
                        scrub(f"{error.code} {error.status}: {error.message}", secret),
                        retryable=error.code == 429 or error.code >= 500,
                        server_delay_s=_server_delay_s(error))
    return _Failure("could not be reached", scrub(f"{type(error).__name__}: {error}", secret),
                    retryable=True)


def _http_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(timeouts, other transport errors) of httpx and httpx2. google-genai sends through httpx2
    when it is installed, else httpx, and the two packages' exception classes are unrelated."""
    timeouts, transport = [], []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


def call_with_retries(call: Callable[[], T], *, policy: RetryPolicy, report: Report,
                      secret: str | None, timeout_s: float) -> tuple[T, int]:
    """Run `call` (one SDK request); returns its answer and the number of calls made.

    429, 5xx and network errors are retried; a timeout is not (a hung request retried five times
    would stall a run for minutes). Every failure becomes `GenerationFailed` with the key scrubbed
    and the SDK's exception left unchained (raised outside its handler), since its text may hold
    what we scrubbed.
    """
    from google.genai import errors

    timeouts, transport_errors = _http_errors()
    waited = 0.0
    for attempt in range(1, policy.max_retries + 2):
        try:
            return call(), attempt
        except timeouts:
            raise GenerationFailed(
                f"Gemini did not answer within {timeout_s:g} s (attempt {attempt})") from None
        except (errors.APIError, *transport_errors) as error:
            failure = _classify(error, secret)
        if not failure.retryable:
            raise GenerationFailed(f"Gemini refused the request: {failure.problem}")
        delay = policy.delay(attempt, failure.server_delay_s)
        if attempt > policy.max_retries or waited + delay > policy.max_total_wait_s:
            raise GenerationFailed(
                f"Gemini still failing after {attempt} attempts: {failure.problem}")
        report(f"Gemini {failure.what}, retrying in {delay:.1f} s "
               f"(attempt {attempt + 1} of {policy.max_retries + 1})…")
        policy.sleep(delay)
        waited += delay
    raise AssertionError("unreachable: the loop returns or raises")


@dataclass
class Answer:
    """Every part of the first candidate, sorted by kind, in the order the model wrote them."""

    images: list[bytes]  # final images (not thought images), in order
    texts: list[str]
    thoughts: list[str]  # thought summaries (part.thought is True)
    thought_images: int  # interim images Nano Banana Pro drafts while thinking
    finish_reason: str | None

    def words(self) -> str:
        """The model's own words for the user: thoughts labelled, then its text."""
        return "\n".join([f"[thought] {t}" for t in self.thoughts] + self.texts)


def _name(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "value", value))


def read_answer(response: Any, secret: str | None) -> Answer:
    """Read every part; raise `GenerationFailed` for a blocked prompt, no candidate, or a
    candidate stopped for safety. A missing image is the caller's call (a judge wants none)."""
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        message = f" ({feedback.block_reason_message})" if feedback.block_reason_message else ""
        raise GenerationFailed(scrub(
            f"Gemini blocked the prompt: {_name(feedback.block_reason)}{message}", secret))
    if not response.candidates:
        raise GenerationFailed("Gemini returned no candidate (an empty answer)")
    candidate = response.candidates[0]
    answer = Answer([], [], [], 0, _name(candidate.finish_reason))
    for part in (candidate.content.parts if candidate.content else None) or []:
        data = part.inline_data
        if data is not None and data.data and (data.mime_type or "").startswith("image/"):
            if part.thought:
                answer.thought_images += 1
            else:
                answer.images.append(data.data)
        elif part.text:
            (answer.thoughts if part.thought else answer.texts).append(part.text)
    if answer.finish_reason in BLOCKING_FINISH_REASONS:
        said = f"; it said: {answer.words()}" if answer.words() else ""
        detail = f" ({candidate.finish_message})" if candidate.finish_message else ""
        raise GenerationFailed(scrub(
            f"Gemini stopped: finish reason {answer.finish_reason}{detail}{said}", secret))
    return answer


class GeminiConnection:
    """One caller's way to the API, shared by the generators and the judge: its key (resolved
    once, never shown), endpoint, timeout and retry policy. The SDK client is made on the first
    request, so a backend without a key can still be listed and asked why."""

    def __init__(self, *, api_key: str | None, client: Any, base_url: str | None,
                 timeout_s: float, max_retries: int, sleep: Callable[[float], None]) -> None:
        self.base_url = base_url or engine_settings().gemini_base_url
        self.timeout_s = float(timeout_s)
        self.retry = RetryPolicy(max_retries=max_retries, sleep=sleep)
        self._key = resolve_key(api_key)
        self._client = client

    def unavailable_reason(self) -> str | None:
        return None if self._client is not None or self._key else MISSING_KEY

    def settings(self) -> dict[str, Any]:
        """What run.json records of the connection (never the key)."""
        return {"timeout_s": self.timeout_s, "max_retries": self.retry.max_retries,
                **({"base_url": self.base_url} if self.base_url else {})}

    def ask(self, model: str, prompt: str, image: Image.Image, config: Any,
            report: Report) -> tuple[Answer, int]:
        """Send the prompt and the image (PNG) with retries; every part of the answer, read,
        and the number of calls made."""
        from google.genai import types

        if self._client is None:
            self._client = make_client(self._key or "", self.base_url, self.timeout_s)
        contents = [types.Part.from_text(text=prompt),
                    types.Part.from_bytes(data=png_bytes(image), mime_type="image/png")]
        response, calls = call_with_retries(
            lambda: self._client.models.generate_content(model=model, contents=contents,
                                                         config=config),
            policy=self.retry, report=report, secret=self._key, timeout_s=self.timeout_s)
        return read_answer(response, self._key), calls
