"""An inter-process lock around load → assign → save of the persistent leak-cluster registry.

Two partitions curated at once (the run queue allows two runs) must not both rewrite the registry.
"""


import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def registry_lock(state_dir: Path) -> Iterator[None]:
    lock_path = Path(state_dir) / "leak_clusters" / "registry.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
