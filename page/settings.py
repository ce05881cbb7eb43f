"""The page's settings: every variable the page reads, read once, into one frozen value.

`SETTINGS` is made when this module is first imported (app.py imports it first, to point
gradio's upload folder at `uploads`); nothing else in `page/` reads the environment. The
engine's own variables (`BANANA_MEMORY_GB`, `BANANA_SCORING_THREADS`, `BANANA_REAL_CHAINS`, …)
are the engine's settings value (`banana_space.settings`), read once the same way;
docs/settings.md lists them all. No gradio here.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from banana_space.settings import number

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / "assets" / "recorded"  # finished runs that open instantly (no key, no GPU)


@dataclass(frozen=True)
class Settings:
    """What this server keeps, for how long, and how much one visitor may ask of it."""

    runs_root: Path  # BANANA_RUNS_DIR: where runs are written (and served from)
    keep_runs: int  # BANANA_KEEP_RUNS: older run directories are deleted
    keep_bytes: int  # BANANA_KEEP_GB: everything a visitor can put on disk (page/door/disk.py)
    runs_per_visitor: int  # BANANA_RUNS_PER_VISITOR: one visitor's share of the runs
    run_min_age_s: int  # BANANA_RUN_MIN_AGE_S: a younger run is never evicted for another's
    uploads: Path  # BANANA_UPLOADS_DIR: gradio's upload folder (default: named after the runs)
    uploads_keep_s: int  # BANANA_UPLOADS_KEEP_S: an upload is deleted after this long
    trust_proxy: bool  # BANANA_TRUST_PROXY: read the client from X-Forwarded-For (on a Space)
    # BANANA_OWNER_KEY: the key runs' owners are hashed with (a Space secret; never shown)
    owner_key: str = field(repr=False)
    chains_per_visitor: int  # BANANA_CHAINS_PER_VISITOR: queued or running, per browser/account
    chains_per_address: int  # BANANA_CHAINS_PER_ADDRESS: the same, all of one address's visitors
    chains_waiting: int  # BANANA_CHAINS_WAITING: queued chains, all visitors together
    cost_per_visitor: float  # BANANA_COST_PER_VISITOR: pixel-steps in flight per visitor
    cost_per_address: float  # BANANA_COST_PER_ADDRESS: the same, one address's visitors together
    upload_bytes_per_visitor: int  # BANANA_UPLOAD_MB_PER_VISITOR: per visitor per upload window
    upload_bytes_per_address: int  # BANANA_UPLOAD_MB_PER_ADDRESS: one address's visitors together
    hub_bytes_per_visitor: int  # BANANA_HUB_MB_PER_VISITOR: hub files replays fetch, per window
    visitor_metrics: tuple[str, ...]  # BANANA_VISITOR_METRICS: names/presets visitors may add
    space_id: str | None  # SPACE_ID: OWNER/NAME of the Space, set by Hugging Face on a Space
    # Sign in with Hugging Face: on a Space whose card says `hf_oauth: true` (Hugging Face then
    # sets OAUTH_CLIENT_ID and the rest, which gradio's OAuth routes read).
    sign_in: bool

    # Shares of `keep_bytes`: uploads a quarter, previews a hundredth, the hub files of replays
    # a tenth, runs the rest, and one visitor a tenth of the runs' share.
    @property
    def uploads_bytes(self) -> int:
        return self.keep_bytes // 4

    @property
    def previews_bytes(self) -> int:
        return self.keep_bytes // 100

    @property
    def hub_bytes(self) -> int:
        return self.keep_bytes // 10

    @property
    def runs_bytes(self) -> int:
        return self.keep_bytes - self.uploads_bytes - self.previews_bytes - self.hub_bytes

    @property
    def run_bytes_per_visitor(self) -> int:
        return self.runs_bytes // 10

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Settings:
        """The settings from `env` (the process's environment by default), with the defaults
        a free CPU Space wants; a malformed number raises ValueError naming the variable."""
        runs_root = Path(env.get("BANANA_RUNS_DIR", REPO / "runs")).resolve()
        keep_runs = number(env, "BANANA_KEEP_RUNS", "200", int)
        uploads = env.get("BANANA_UPLOADS_DIR") or Path(tempfile.gettempdir()) / (
            "banana-uploads-" + hashlib.sha256(str(runs_root).encode()).hexdigest()[:12])
        return cls(
            runs_root=runs_root,
            keep_runs=keep_runs,
            keep_bytes=int(number(env, "BANANA_KEEP_GB", "20", float) * 1e9),
            runs_per_visitor=number(env, "BANANA_RUNS_PER_VISITOR", str(max(1, keep_runs // 10)),
                                     int),
            run_min_age_s=number(env, "BANANA_RUN_MIN_AGE_S", "3600", int),
            uploads=Path(uploads),
            uploads_keep_s=number(env, "BANANA_UPLOADS_KEEP_S", "86400", int),
            trust_proxy=env.get("BANANA_TRUST_PROXY", "1" if env.get("SPACE_ID") else "0") == "1",
            owner_key=env.get("BANANA_OWNER_KEY", ""),
            chains_per_visitor=number(env, "BANANA_CHAINS_PER_VISITOR", "2", int),
            # A lecture hall behind one address: 30 browsers each get a chain into the queue.
            chains_per_address=number(env, "BANANA_CHAINS_PER_ADDRESS", "32", int),
            chains_waiting=number(env, "BANANA_CHAINS_WAITING", "64", int),
            # One maximal run (a 2048 x 2048 input, 100 steps) is 419 megapixel-steps.
            cost_per_visitor=number(env, "BANANA_COST_PER_VISITOR", "420", float) * 1e6,
            cost_per_address=number(env, "BANANA_COST_PER_ADDRESS", "2100", float) * 1e6,
            upload_bytes_per_visitor=int(
                number(env, "BANANA_UPLOAD_MB_PER_VISITOR", "500", float) * 1e6),
            upload_bytes_per_address=int(
                number(env, "BANANA_UPLOAD_MB_PER_ADDRESS", "3000", float) * 1e6),
            hub_bytes_per_visitor=int(
                number(env, "BANANA_HUB_MB_PER_VISITOR", "1000", float) * 1e6),
            visitor_metrics=tuple(name.strip() for name in
                                  env.get("BANANA_VISITOR_METRICS", "").split(",")
                                  if name.strip()),
            space_id=env.get("SPACE_ID") or None,
            sign_in=bool(env.get("SPACE_ID") and env.get("OAUTH_CLIENT_ID")),
        )


SETTINGS = Settings.from_env()
