"""`banana-space deploy`'s Space settings: a new Space is created with its hardware, secrets,
variables and volumes in one `create_repo` and builds once; a re-deploy sets only what changed
and keeps the volumes the Space's owner mounted; a token that may not create repos deploys to
a Space that is there.

Through the real `huggingface_hub` client in a subprocess, against `FakeHubWrite`, which builds a
Space on each commit and restarts it on each settings change after its first build, as the Hub
does (`builds`).
"""

from __future__ import annotations

from conftest import REPO
from fake_hub_write import FakeHubWrite
from test_space import SPACE, _deploy

from banana_space.deploy import space_files

TOKEN = "hf_fake_token_for_tests_0001"  # the token _deploy gives the client
GEMINI = "gm-fake-key-for-the-deploy-test-42"
SETTINGS = ("/secrets", "/variables", "/volumes", "/hardware")


def bucket_volume(bucket: str) -> dict:
    return {"type": "bucket", "source": bucket, "mountPath": "/data", "readOnly": False}


def test_a_new_space_is_created_with_all_its_settings_and_builds_once() -> None:
    with FakeHubWrite() as hub:
        done = _deploy(hub.url, "--hardware", "zero-a10g", "--secrets", "--bucket", "banana-runs",
                       GEMINI_API_KEY=GEMINI)
    assert done.returncode == 0, done.stdout + done.stderr
    asked = hub.repos[f"space/{SPACE}"]
    assert asked["hardware"] == "zero-a10g"
    *copied, drawn = asked["secrets"]  # the owner key, drawn for a new Space, goes in too
    assert copied == [{"key": "GEMINI_API_KEY", "value": GEMINI},
                      {"key": "HF_TOKEN", "value": TOKEN}]
    assert drawn["key"] == "BANANA_OWNER_KEY" and len(drawn["value"]) == 64
    assert [(v["key"], v["value"]) for v in asked["variables"]] == [
        ("BANANA_RUNS_DIR", "/data/runs")]
    assert asked["volumes"] == [bucket_volume("banana-lab/banana-runs")]
    # The bucket exists before the Space that mounts it; nothing is set after the creation.
    requests = [request.split(" ", 1)[1] for request in hub.requests]
    assert requests.index("/api/buckets/banana-lab/banana-runs") < requests.index(
        "/api/repos/create")
    assert [r for r in requests if r.endswith(SETTINGS)] == []
    assert hub.builds[SPACE] == ["build"]
    assert hub.secrets[SPACE] == {"GEMINI_API_KEY": GEMINI, "HF_TOKEN": TOKEN,
                                  "BANANA_OWNER_KEY": drawn["value"]}
    assert hub.variables[SPACE] == {"BANANA_RUNS_DIR": "/data/runs"}
    for secret in (GEMINI, TOKEN, drawn["value"]):
        assert secret not in done.stdout + done.stderr


def test_a_redeploy_keeps_the_owners_volumes_and_sets_only_what_changed() -> None:
    """The owner mounted a model at /models in the Space's settings: every re-deploy keeps it.
    The same deploy again changes no setting, so nothing restarts (and the same files make no
    commit); a new bucket takes /data and a new hardware is asked for, each once."""
    weights = {"type": "model", "source": "someone/weights", "mountPath": "/models",
               "readOnly": True}
    with FakeHubWrite() as hub:
        first = _deploy(hub.url, "--bucket", "banana-runs")
        hub.volumes[SPACE].append(weights)
        hub.requests.clear()
        same = _deploy(hub.url, "--bucket", "banana-runs", "--hardware", "zero-a10g")
        unchanged = [request for request in hub.requests if request.endswith(SETTINGS)]
        moved = _deploy(hub.url, "--bucket", "banana-lab/other-runs", "--hardware", "cpu-basic")
    for done in (first, same, moved):
        assert done.returncode == 0, done.stdout + done.stderr
    assert unchanged == [f"GET api/spaces/{SPACE}/variables"]  # read, not set
    assert hub.volumes[SPACE] == [weights, bucket_volume("banana-lab/other-runs")]
    assert hub.hardware[SPACE] == "cpu-basic"
    assert hub.buckets.keys() == {"banana-lab/banana-runs", "banana-lab/other-runs"}
    assert hub.builds[SPACE] == ["build", "restart (hardware)", "restart (volumes)"]


def test_a_token_that_may_not_create_repos_still_deploys_to_its_space() -> None:
    """A fine-grained token may write to one Space and create nothing: the Hub answers 403 to
    the creation, and the Space, being there, is updated. Where it is not, the Hub's refusal
    is the answer, in one line."""
    with FakeHubWrite(may_create=False) as hub:
        missing = _deploy(hub.url)
        hub.spaces[SPACE] = {}  # made by its owner on the Hub's site
        done = _deploy(hub.url, "--bucket", "banana-runs")
    assert missing.returncode == 1 and "rights to create" in missing.stdout, missing.stdout
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(hub.spaces[SPACE]) == {f.path for f in space_files(REPO)}
    assert hub.volumes[SPACE] == [bucket_volume("banana-lab/banana-runs")]
    assert hub.variables[SPACE] == {"BANANA_RUNS_DIR": "/data/runs"}
