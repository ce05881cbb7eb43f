"""The operator's key that runs' owners are hashed with (`identity.operator_key`), kept across
restarts even when no one set it.

`BANANA_OWNER_KEY` (a Space secret; `banana-space deploy` sets one on a new Space) wins. Without
it, a key drawn once is kept in a private file beside the runs, `<runs folder>/.operator_key`
(mode 0600), as Jupyter keeps its cookie secret in a private runtime file: a key drawn at every
start would strip every visitor of their runs at each restart, and a Space sleeps, rebuilds and
restarts often. Kept in the runs folder, the key lives exactly as long as the runs it owns (on a
mounted bucket, across rebuilds; on a wiped disk, gone with them). It is never served: the file
routes answer 404 for a dot-name (`served.py`), and it is no run's file, so it is never pushed
to the runs' dataset (`persist.py`) nor pruned (`retention.py`).
"""

from __future__ import annotations

import os
import secrets
import stat
import sys
import tempfile
from pathlib import Path

KEY_FILE = ".operator_key"
KEY_BYTES = 32


def operator_key(configured: str, runs_root: Path) -> bytes:
    """The key: `configured` if set, else the one kept in `runs_root` (drawn and kept there
    the first time). Where it cannot be kept (a read-only folder, a damaged file), a key for
    this start only, and one line in the log saying so."""
    if configured:
        return configured.encode()
    path = Path(runs_root) / KEY_FILE
    try:
        return _kept(path)
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) else str(error)
        print(f"BANANA_OWNER_KEY is not set and no key can be kept in {path} ({reason}): who "
              "owns which run is known until this server restarts.", file=sys.stderr)
        return secrets.token_bytes(KEY_BYTES)


def _kept(path: Path) -> bytes:
    """The key in `path`, written there first if there is none (atomically: two servers
    starting at once on one runs folder agree on the first one written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        descriptor, drawn = tempfile.mkstemp(dir=path.parent, prefix=f"{KEY_FILE}.")  # 0600
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_hex(KEY_BYTES) + "\n")
            os.link(drawn, path)  # fails if another server kept its key first: that one wins
        except FileExistsError:
            pass
        finally:
            os.unlink(drawn)
    if stat.S_IMODE(path.stat().st_mode) & 0o077:  # readable by others: made private again
        os.chmod(path, 0o600)
    text = path.read_text().strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < KEY_BYTES:
        raise ValueError(f"it does not hold a key of {KEY_BYTES} bytes in hex")
    return key
