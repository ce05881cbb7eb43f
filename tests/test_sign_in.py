"""Sign in with Hugging Face (issue 42, item 2), through gradio's real OAuth routes (authlib's
client, as on a Space: SYSTEM=spaces and SPACE_ID, which gradio reads as "on a Space", and
OAUTH_CLIENT_ID and OPENID_PROVIDER_URL set) against a local
stand-in OpenID provider (tests/fake_openid.py), never gradio's mocked dev-mode route. A
signed-in visitor's runs are their account's in any browser; anyone else's browser, signed in
or not, does not list them; a provider that fails mid-sign-in leaves one line and the page
working."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest
from app_server import running_app
from fake_openid import FakeOpenID
from raw_api import call, dependencies
from visitors import file_data, noise

from page.door.identity import SECURE_COOKIE as COOKIE  # the app runs as on a Space

pytestmark = pytest.mark.app

CLIENT_ID, CLIENT_SECRET = "banana-space-client", "the-oauth-secret-" + secrets.token_hex(8)


class Browser:
    """A browser's cookie jar and its visits, redirects followed by hand. The app marks its
    cookies Secure (a Space is https, and the page an iframe on huggingface.co); a real browser
    keeps them on http://127.0.0.1 too, httpx's jar would not, so this jar keeps every one."""

    def __init__(self) -> None:
        self.jar: dict[str, str] = {}
        self.http = httpx.Client(timeout=120)

    def get(self, url: str, follow: bool = True) -> httpx.Response:
        for _ in range(10):
            answer = self.http.get(url, headers=self.headers())
            for line in answer.headers.get_list("set-cookie"):
                # By hand: http.cookies drops a cookie with an attribute it does not know
                # (Partitioned), as old browsers ignore only the attribute.
                name, _, value = line.split(";", 1)[0].strip().partition("=")
                self.jar[name] = value
            if not (follow and answer.is_redirect):
                return answer
            url = urljoin(url, answer.headers["location"])
        raise AssertionError("too many redirects")

    def headers(self) -> dict[str, str]:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.jar.items())} if self.jar else {}


def sign_in(app: str, provider: FakeOpenID, user: str) -> Browser:
    """A fresh browser that opens the page and signs in as `user`."""
    browser = Browser()
    assert browser.get(app).status_code == 200 and COOKIE in browser.jar
    provider.user = user
    landed = browser.get(f"{app}login/huggingface")
    assert landed.status_code == 200 and str(landed.url).startswith(app), landed.url
    assert "session" in browser.jar
    return browser


def run_chain(app: str, browser: Browser, photo: Path) -> str:
    uploaded = browser.http.post(f"{app}gradio_api/upload", headers=browser.headers(),
                                 files={"files": photo.open("rb")}).json()[0]
    answer = call(app, dependencies(app)["run_chain"],
                  [file_data(uploaded), 1, "simulate", "entropy", 0, "", ""],
                  headers=browser.headers())
    assert answer.success, answer.error
    return json.loads(answer.data[0])["run"]


def past_runs(app: str, browser: Browser) -> str:
    answer = call(app, dependencies(app)["past_runs"], [], headers=browser.headers())
    assert answer.success, answer.error
    return json.dumps(answer.data)


def test_a_signed_in_visitors_runs_are_their_accounts_in_any_browser(tmp_path) -> None:
    photo = noise(tmp_path / "in.png", 64, 48)
    with FakeOpenID(CLIENT_ID, CLIENT_SECRET) as provider:
        space = {"SYSTEM": "spaces", "SPACE_ID": "me/banana", "OAUTH_CLIENT_ID": CLIENT_ID,
                 "OAUTH_CLIENT_SECRET": CLIENT_SECRET, "OAUTH_SCOPES": "openid profile",
                 "OPENID_PROVIDER_URL": provider.url, "GRADIO_SSR_MODE": "False",
                 "BANANA_OWNER_KEY": "the-operators-key-" + secrets.token_hex(8),
                 "BANANA_REAL_CHAINS": "off"}
        with running_app(tmp_path / "runs", **space) as app:
            offered = httpx.get(f"{app}config", timeout=60).text  # what the page draws
            # Only this host, over https, may set the browser's secret (no sibling Space).
            given = httpx.get(app, timeout=60).headers["set-cookie"].split("; ")
            assert given[0].startswith(f"{COOKIE}=") and COOKIE.startswith("__Host-")
            assert {"Secure", "Path=/"} <= set(given) and not any(
                a.lower().startswith("domain") for a in given)
            assert "Sign in with Hugging Face" in offered and "own ZeroGPU quota" in offered
            laptop = sign_in(app, provider, "ada")
            made = run_chain(app, laptop, photo)
            assert {"/oauth/authorize", "/oauth/token", "/oauth/jwks"} <= set(provider.requests)
            phone = sign_in(app, provider, "ada")  # another browser, the same account
            assert phone.jar[COOKIE] != laptop.jar[COOKIE]
            assert made in past_runs(app, phone)
            assert made not in past_runs(app, sign_in(app, provider, "grace"))
            anonymous = Browser()
            anonymous.get(app)
            assert made not in past_runs(app, anonymous)
            assert run_chain(app, anonymous, photo)  # no sign-in needed
            # The provider goes down mid-sign-in: one line, and the page works as before.
            provider.user = "ada"
            stranded = Browser()
            stranded.get(app)
            to_provider = stranded.get(f"{app}login/huggingface", follow=False)
            back = httpx.get(to_provider.headers["location"], follow_redirects=False)
            provider.__exit__(None, None, None)
            failed = stranded.get(urljoin(app, back.headers["location"]), follow=False)
            assert failed.status_code == 503 and "did not work" in failed.text
            assert failed.text.count("\n") == 0 and "Traceback" not in failed.text
            assert stranded.get(app).status_code == 200
            assert made not in past_runs(app, stranded)
