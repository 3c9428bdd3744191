"""Named points where tests can crash or stall a real process (``LAKECTL_FAILPOINTS``).

``LAKECTL_FAILPOINTS="load.before_commit=crash"`` makes the process exit abruptly (as ``kill -9``
would) when it reaches that point; ``=sleep:5`` stalls it for 5 seconds; ``=touch:PATH`` creates a
file and ``=wait:PATH`` waits for one, so tests can order steps of two processes. Unset in normal use,
where each check is one dictionary lookup.
"""

from __future__ import annotations

import os
import time


def failpoint(name: str) -> None:
    """Crash or stall here if the environment asks for it."""
    spec = os.environ.get("LAKECTL_FAILPOINTS")
    if not spec:
        return
    for item in spec.split(","):
        point, _, action = item.partition("=")
        if point.strip() != name:
            continue
        action = action.strip()
        if action == "crash":
            os._exit(137)
        if action.startswith("sleep:"):
            time.sleep(float(action.split(":", 1)[1]))
        if action.startswith("touch:"):  # tell another process this point was reached
            open(action.split(":", 1)[1], "a").close()
        if action.startswith("wait:"):  # until another process touches the file (at most 10 min)
            deadline = time.time() + 600
            while not os.path.exists(action.split(":", 1)[1]) and time.time() < deadline:
                time.sleep(0.2)
