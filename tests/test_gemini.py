"""The Nano Banana backends and the Gemini judge, with the real google-genai client talking to a
local fake of the Gemini REST API (tests/fake_gemini.py). Offline, and nothing really sleeps."""

from __future__ import annotations

import io
import json
import logging
import math
import subprocess
import sys

import numpy as np
import pytest
from fake_gemini import (
    REPLICA_TEXT,
    FakeGemini,
    answer,
    blocked,
    empty,
    error,
    hang,
    image_part,
    rate_limited,
    server_error,
    stopped,
    text_only,
    text_part,
)
from PIL import Image

from banana_space.backends import REGISTRY, BackendUnavailable, backend_names, create_backend
from banana_space.backends.base import GenerationFailed
from banana_space.backends.gemini import closest_aspect_ratio
from banana_space.backends.gemini_client import MISSING_KEY
from banana_space.files import png_bytes
from banana_space.judges import REGISTRY as JUDGES
from banana_space.judges import create_judge
from banana_space.judges.answer import PROMPT, read_rating
from banana_space.prompts import DEFAULT_PROMPT, PRESETS, repeats_for

KEY = "AIzaTEST-secret-key-0123456789"


@pytest.fixture
def server():
    with FakeGemini() as fake:
        yield fake


@pytest.fixture
def no_env_key(monkeypatch, engine_env):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "BANANA_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    engine_env(BANANA_GEMINI_BASE_URL=None)


def photo(width: int = 64, height: int = 48, seed: int = 0) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


def make(server, name: str = "nano-banana-pro", **options):
    sleeps: list[float] = []
    backend = create_backend(name, api_key=KEY, base_url=server.base_url, timeout_s=5,
                             sleep=sleeps.append, **options)
    return backend, sleeps


def edit(backend, image=None, **kwargs):
    return backend.edit(image or photo(), DEFAULT_PROMPT, seed=7, step=1, **kwargs)


def test_registry_lists_the_models_after_the_offline_backends():
    names = backend_names()
    assert names[:2] == ["simulate", "replay"]
    assert {"nano-banana-pro", "nano-banana", "nano-banana-2"} <= set(names)
    assert REGISTRY["nano-banana-pro"].info.needs_key
    assert "gemini-3-pro-image-preview" in REGISTRY["nano-banana-pro"].info.label
    assert REGISTRY["nano-banana-pro"].info.takes("resolution")
    assert not REGISTRY["nano-banana"].info.takes("resolution")


def test_importing_the_registries_does_not_load_the_sdk():
    code = ("import sys, banana_space.backends, banana_space.judges; "
            "print('google.genai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_request_carries_prompt_image_and_settings(server, no_env_key):
    backend, _ = make(server, temperature=0.4, resolution="2K")
    source = photo(64, 48)
    result = edit(backend, source)
    (request,) = server.requests
    assert request.path == "/v1beta/models/gemini-3-pro-image-preview:generateContent"
    assert request.headers["x-goog-api-key"] == KEY
    assert request.prompt == DEFAULT_PROMPT
    sent = np.asarray(Image.open(io.BytesIO(request.image_bytes)).convert("RGB"))
    assert np.array_equal(sent, np.asarray(source))  # lossless round trip of the frame
    config = request.config
    assert config["seed"] == 7 and config["temperature"] == pytest.approx(0.4)
    assert config["responseModalities"] == ["TEXT", "IMAGE"]
    assert config["imageConfig"] == {"imageSize": "2K", "aspectRatio": "4:3"}
    # The fake raises red by 1: the answer is the frame it sent back, not the input.
    delta = np.asarray(result.image, dtype=int) - np.asarray(source, dtype=int)
    assert delta[..., 1:].max() == 0 and delta[..., 0].max() == 1
    assert result.text == REPLICA_TEXT
    assert result.calls == 1 and result.cost_usd == pytest.approx(0.134)
    assert backend.settings()["aspect_ratio"] == "4:3"


@pytest.mark.parametrize(("size", "ratio"), [((1920, 1080), "16:9"), ((1000, 1000), "1:1"),
                                             ((1080, 1920), "9:16"), ((2520, 1080), "21:9"),
                                             ((800, 1000), "4:5"), ((3000, 2000), "3:2")])
def test_closest_aspect_ratio(size, ratio):
    assert closest_aspect_ratio(*size) == ratio


def test_fixed_size_model_sends_no_size_and_refuses_one(server, no_env_key):
    backend, _ = make(server, "nano-banana")
    edit(backend)
    assert "imageSize" not in server.requests[0].config["imageConfig"]
    assert server.requests[0].model == "gemini-2.5-flash-image"
    with pytest.raises(ValueError, match="fixed"):
        make(server, "nano-banana", resolution="2K")


def test_final_image_found_after_thoughts_and_text(server, no_env_key):
    draft, final = Image.new("RGB", (64, 48), "red"), Image.new("RGB", (64, 48), "blue")
    server.script(answer(text_part("Planning a faithful copy.", thought=True),
                         image_part(png_bytes(draft), thought=True),
                         text_part("Done."), image_part(png_bytes(final))))
    backend, _ = make(server)
    result = edit(backend)
    assert result.image.getpixel((5, 5)) == (0, 0, 255)
    assert result.text == "[thought] Planning a faithful copy.\nDone."
    assert result.extra["thought_images"] == 1


def test_429_twice_then_success(server, no_env_key):
    server.script(rate_limited(), rate_limited())
    backend, sleeps = make(server)
    reports: list[str] = []
    result = edit(backend, report=reports.append)
    assert len(server.requests) == 3 and result.calls == 3
    assert [r.split(",")[0] for r in reports] == ["Gemini answered 429"] * 2
    assert "(attempt 2 of 5)" in reports[0] and "(attempt 3 of 5)" in reports[1]
    assert 2.0 <= sleeps[0] <= 2.5 and 4.0 <= sleeps[1] <= 5.0  # backoff doubles, plus jitter
    assert f"retrying in {sleeps[0]:.1f} s" in reports[0]


def test_retry_waits_as_long_as_the_api_asks(server, no_env_key):
    server.script(rate_limited(retry_delay="7s"))
    backend, sleeps = make(server)
    edit(backend)
    assert 7.0 <= sleeps[0] <= 8.75


def test_500_until_retries_run_out(server, no_env_key):
    server.script(*[server_error()] * 3)
    backend, sleeps = make(server, max_retries=2)
    with pytest.raises(GenerationFailed, match="after 3 attempts: 500 INTERNAL"):
        edit(backend)
    assert len(server.requests) == 3 and len(sleeps) == 2


@pytest.mark.parametrize(("reply", "reason"), [
    (blocked("SAFETY"), "blocked the prompt: SAFETY"),
    (blocked("PROHIBITED_CONTENT"), "blocked the prompt: PROHIBITED_CONTENT"),
    (stopped("IMAGE_SAFETY", "I can't make that image."),
     "finish reason IMAGE_SAFETY; it said: I can't make that image."),
    (text_only("I cannot copy this image."), "without an image .*I cannot copy this image"),
    (stopped("NO_IMAGE"), r"without an image \(finish reason NO_IMAGE\)"),
    (empty(), "no candidate"),
])
def test_refusals_fail_the_step_with_the_reason(server, no_env_key, reply, reason):
    server.script(reply)
    backend, sleeps = make(server)
    with pytest.raises(GenerationFailed, match=reason):
        edit(backend)
    assert len(server.requests) == 1 and sleeps == []  # a refusal is not retried


def test_a_hang_fails_at_the_timeout_without_retrying(server, no_env_key):
    server.script(hang(3600))  # ended by the fake's teardown
    backend = create_backend("nano-banana-pro", api_key=KEY, base_url=server.base_url,
                             timeout_s=0.5)
    with pytest.raises(GenerationFailed, match="did not answer within 0.5 s"):
        edit(backend)
    assert not server.hang_ended.is_set()  # it gave up while the server still hung
    assert len(server.requests) == 1


def test_bad_key_fails_without_retrying(no_env_key):
    with FakeGemini(api_key="the-right-key") as fake:
        backend, sleeps = make(fake)
        with pytest.raises(GenerationFailed, match="refused the request: 400 .*API key not valid"):
            edit(backend)
        assert len(fake.requests) == 1 and sleeps == []


def test_missing_key_says_how_and_sends_nothing(server, no_env_key):
    assert REGISTRY["nano-banana-pro"].unavailable_reason() == MISSING_KEY
    backend = create_backend("nano-banana-pro", base_url=server.base_url)
    assert backend.unavailable_reason() == MISSING_KEY
    with pytest.raises(BackendUnavailable, match="set GEMINI_API_KEY"):
        edit(backend)
    assert server.requests == []


def test_key_and_url_come_from_the_environment(server, no_env_key, monkeypatch, engine_env):
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google-var")
    engine_env(BANANA_GEMINI_BASE_URL=server.base_url)
    assert REGISTRY["nano-banana-2"].unavailable_reason() is None
    edit(create_backend("nano-banana-2"))
    assert server.requests[0].headers["x-goog-api-key"] == "from-google-var"
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini-var")  # GEMINI_API_KEY wins
    edit(create_backend("nano-banana-2"))
    assert server.requests[1].headers["x-goog-api-key"] == "from-gemini-var"


def test_the_key_never_leaks(server, no_env_key, caplog):
    caplog.set_level(logging.DEBUG)
    # A proxy that echoes the key in its error text, after a 429 whose report we also check.
    server.script(rate_limited(), error(403, f"key {KEY} is not allowed", "PERMISSION_DENIED"))
    backend, _ = make(server)
    reports: list[str] = []
    with pytest.raises(GenerationFailed) as failure:
        edit(backend, report=reports.append)
    message = str(failure.value)
    assert "key *** is not allowed" in message
    assert failure.value.__cause__ is None and failure.value.__context__ is None
    seen = [message, repr(backend), json.dumps(backend.settings()), *reports, caplog.text]
    assert server.requests[0].headers["x-goog-api-key"] == KEY  # the key was really used
    assert not [text for text in seen if KEY in text]


def test_a_toy_key_is_not_scrubbed_out_of_words(server, no_env_key):
    server.script(blocked("SAFETY"))
    backend = create_backend("nano-banana-pro", api_key="k", base_url=server.base_url)
    with pytest.raises(GenerationFailed, match="blocked the prompt"):
        edit(backend)


def test_fail_at_step_k_keeps_earlier_steps(server, no_env_key):
    server.fail_at(3)
    backend, _ = make(server)
    frame = photo()
    for step in (1, 2):
        frame = backend.edit(frame, DEFAULT_PROMPT, seed=7, step=step).image
        judge(server).rate(frame)  # judge requests between steps do not shift k
    with pytest.raises(GenerationFailed, match="SAFETY"):
        backend.edit(frame, DEFAULT_PROMPT, seed=7, step=3)
    assert np.asarray(frame)[..., 0].astype(int).sum() > np.asarray(photo())[..., 0].sum()


@pytest.mark.parametrize(("text", "score"), [
    ("<answer>3.42</answer>", 3.42),
    ("<think>Sharp edges, but fine static noise in the sky; maybe 4.</think>\n"
     "<answer> 2.75 </answer>", 2.75),
    ("<answer>2.00</answer> On reflection: <answer>3.10</answer>", 3.10),
    ("4.5", 4.5),
    ("<answer>5</answer>", 5.0),
])
def test_read_rating_reads_the_last_answer(text, score):
    verdict = read_rating(text)
    assert verdict.score == pytest.approx(score) and verdict.warning is None


@pytest.mark.parametrize(("text", "why"), [
    ("The picture looks good, I would say 4 out of 5.", "no <answer> tag"),
    ("Score: 3.5", "no <answer> tag"),
    ("<answer>about 3</answer>", "the last <answer> holds"),
    ("<answer>3.5</answer> then <answer>nine</answer>", "the last <answer> holds"),
    ("<answer>6.20</answer>", "outside 1-5"),
    ("<answer>0.5</answer>", "outside 1-5"),
    ("", "no <answer> tag"),
])
def test_read_rating_refuses_to_guess(text, why):
    verdict = read_rating(text)
    assert math.isnan(verdict.score) and why in verdict.warning and verdict.text == text


def judge(server, **options):
    return create_judge("judge_gemini", api_key=KEY, base_url=server.base_url, timeout_s=5,
                        sleep=lambda s: None, **options)


def test_judge_asks_the_visualquality_question_and_caches(server, no_env_key):
    server.judge_text = "Mostly clean, slight blur.\n<answer>3.42</answer>"
    rater = judge(server)
    assert rater.info.name == "judge_gemini" and "gemini-2.5-flash" in rater.info.label
    image = photo()
    assert rater.rate(image).score == pytest.approx(3.42)
    (request,) = server.requests
    assert request.model == "gemini-2.5-flash" and request.prompt == PROMPT
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(request.image_bytes))),
                          np.asarray(image))
    assert not request.wants_image
    assert rater.rate(image.copy()).score == pytest.approx(3.42)  # same pixels: no request
    assert len(server.requests) == 1
    rater.rate(photo(seed=1))
    assert len(server.requests) == 2


def test_judge_garbage_and_failures_give_nan(server, no_env_key):
    server.judge_text = "I think it is quite nice."
    rater = judge(server, max_retries=1)
    garbage = rater.rate(photo())
    assert math.isnan(garbage.score) and "no <answer> tag" in garbage.warning
    server.script(server_error(), server_error())
    failed = rater.rate(photo(seed=2))
    assert math.isnan(failed.score) and "500" in failed.warning
    server.judge_text = "<answer>4.00</answer>"
    assert rater.rate(photo(seed=2)).score == 4.0  # a failure is not cached


def test_judge_needs_a_key(no_env_key):
    assert JUDGES["judge_gemini"].unavailable_reason() == MISSING_KEY
    with pytest.raises(BackendUnavailable, match="GEMINI_API_KEY"):
        create_judge("judge_gemini").rate(photo())


def test_prompt_presets():
    assert PRESETS["replicate"].text == DEFAULT_PROMPT
    assert repeats_for(PRESETS["mirror_twice"].text) == 2
    assert repeats_for(DEFAULT_PROMPT) == 1 and repeats_for("free text") == 1
    assert len({preset.text for preset in PRESETS.values()}) == len(PRESETS)
