"""Settings read once (issue 34): the engine's variables are read into one frozen value
(`banana_space.settings`), the page's into another (`page.settings`); no other module touches
the environment when it is imported, and the few that read it later say why (a secret, another
library's own variable). A worker process is handed what it must differ in as an argument."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from banana_space.settings import EngineSettings

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(REPO / "banana_space").rglob("*.py"), *(REPO / "page").rglob("*.py"),
                  REPO / "app.py"])
SETTINGS_MODULES = {"banana_space/settings.py", "page/settings.py"}
ENVIRONMENT = {"environ", "getenv", "putenv", "unsetenv"}
# Who may read the environment after import, outside the settings modules, and why.
CALL_TIME_READERS = {
    # a secret: GEMINI_API_KEY, never kept
    ("banana_space/backends/gemini_client.py", "resolve_key"),
    ("banana_space/deploy.py", "check_no_secrets"),  # secrets: never uploaded as a file,
    ("banana_space/deploy.py", "deploy"),  # but copied into the Space's secrets
    ("banana_space/deploy.py", "run_deploy"),
    ("banana_space/sources/hub_client.py", "endpoint"),  # huggingface_hub's own HF_ENDPOINT
    ("banana_space/scores/catalog.py", "pyiqa_cache"),  # torch's own TORCH_HOME, read as torch does
    # a write, at the start: uvicorn's FORWARDED_ALLOW_IPS, which gradio passes no other way
    ("page/door/gradio_patches.py", "trust_no_proxy"),
}


def environment_uses(path: Path) -> list[tuple[str, str]]:
    """(scope, how) for each use of os.environ / os.getenv in `path`: scope is the enclosing
    function, or "<import>" for what runs when the module is imported (its body, class bodies,
    decorators and default arguments); how is "write" for `os.environ[...] = …`, else "read"."""
    tree = ast.parse(path.read_text(), str(path))
    writes = {id(target.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Subscript)}
    uses: list[tuple[str, str]] = []

    def visit(node: ast.AST, scope: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for outer in [*getattr(node, "decorator_list", []), *node.args.defaults,
                          *[d for d in node.args.kw_defaults if d is not None]]:
                visit(outer, scope)
            inner = getattr(node, "name", "<lambda>") if scope == "<import>" else scope
            for child in (node.body if isinstance(node.body, list) else [node.body]):
                visit(child, inner)
            return
        named = (isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT
                 and isinstance(node.value, ast.Name) and node.value.id == "os")
        if named or (isinstance(node, ast.Name) and node.id in ENVIRONMENT):
            uses.append((scope, "write" if id(node) in writes else "read"))
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, "<import>")
    return uses


def all_uses() -> dict[tuple[str, str], set[str]]:
    found: dict[tuple[str, str], set[str]] = {}
    for path in SOURCES:
        name = path.relative_to(REPO).as_posix()
        for scope, how in environment_uses(path):
            found.setdefault((name, scope), set()).add(how)
    return found


def test_nothing_but_the_settings_reads_the_environment_at_import() -> None:
    at_import = {key: how for key, how in all_uses().items()
                 if key[1] == "<import>" and key[0] not in SETTINGS_MODULES}
    # The start's one write: gradio's upload folder, from the page's settings, before gradio.
    assert at_import == {("app.py", "<import>"): {"write"}}


def test_the_few_who_read_the_environment_later_are_known() -> None:
    later = {key for key in all_uses() if key[1] != "<import>" and key[0] not in SETTINGS_MODULES}
    assert later == CALL_TIME_READERS


def test_the_scanner_sees_each_kind_of_use(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom os import environ\nA = os.environ.get('X')\n"
                      "def f(x=os.getenv('Y')):\n    return environ['Z']\n"
                      "class C:\n    B = os.environ['W']\nos.environ['V'] = '1'\n")
    assert environment_uses(sample) == [("<import>", "read"), ("<import>", "read"),
                                        ("f", "read"), ("<import>", "read"),
                                        ("<import>", "write")]


def test_the_engines_settings_keep_their_names_and_defaults() -> None:
    default = EngineSettings.from_env({})
    assert (default.max_side, default.metric_load_s, default.memory_gb) == (2048, 30.0, None)
    assert default.scoring_threads == (os.cpu_count() or 1)
    assert (default.runs_repo, default.weights_dir, default.preload, default.zero_gpu) == (
        None, None, None, False)
    given = EngineSettings.from_env({
        "BANANA_MAX_SIDE": "512", "BANANA_METRIC_LOAD_S": "2.5", "BANANA_SCORING_THREADS": "1",
        "BANANA_MEMORY_GB": "0.5", "BANANA_REAL_CHAINS": " off ", "BANANA_RUNS_REPO": " me/runs ",
        "BANANA_WEIGHTS_DIR": "/w", "BANANA_QREALIGN_MODEL": "/m",
        "BANANA_GEMINI_BASE_URL": "http://x", "BANANA_PRELOAD": "", "SPACES_ZERO_GPU": "true"})
    assert given == EngineSettings(512, 2.5, 1, 0.5, "off", "me/runs", Path("/w"), "/m",
                                   "http://x", "", True)
    with pytest.raises(ValueError, match="BANANA_MAX_SIDE must be a whole number"):
        EngineSettings.from_env({"BANANA_MAX_SIDE": "big"})
    assert default.runs_commit_s == 300.0
    assert EngineSettings.from_env({"BANANA_RUNS_COMMIT_S": "60"}).runs_commit_s == 60.0


def test_no_secret_is_a_setting() -> None:
    env = {"GEMINI_API_KEY": "gm-secret-1", "GOOGLE_API_KEY": "gm-secret-2",
           "HF_TOKEN": "hf_secret_3"}
    from page.settings import Settings

    shown = repr(EngineSettings.from_env(env)) + repr(Settings.from_env(env))
    assert not any(secret in shown for secret in env.values())


def test_the_ray_actor_is_handed_the_load_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from banana_space.scores.pool import POOL
    from banana_space.table.ray_driver import ChainWorker

    monkeypatch.setattr(POOL, "load_seconds", POOL.load_seconds)
    ChainWorker(("entropy",), torch.get_num_threads(), load_seconds=7.0)
    assert POOL.load_seconds == 7.0


def test_the_table_hands_its_workers_the_load_time(tmp_path: Path, photo, weights_dir) -> None:
    """A spawned worker waits as long as the caller says (here: not at all, so brisque is
    unavailable), and the caller's environment is left as it was."""
    from banana_space.table import ChainResult, find_chains, run_table

    chain = tmp_path / "chain"
    chain.mkdir()
    for step in range(2):
        photo.save(chain / f"{step}.png")
    before = dict(os.environ)
    results: list[ChainResult] = []
    assert run_table(find_chains([str(chain)]), ["brisque"], tmp_path / "out", workers=1,
                     load_seconds=0.0, on_chain=results.append)
    assert dict(os.environ) == before
    [result] = results
    assert "within 0 s" in result.unavailable["brisque"], result.unavailable
