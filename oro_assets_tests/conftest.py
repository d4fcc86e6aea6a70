"""Test-wide environment: offline, quiet, and every test gets its own data root."""

from __future__ import annotations

import os

import pytest

from oro_assets_tests.native_support import require_kernels

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """An isolated ORO_DATA_DIR (and no firehose/judge variables leaking in from the shell)."""
    root = tmp_path / "data"
    monkeypatch.setenv("ORO_DATA_DIR", str(root))
    for name in ("ORO_FIREHOSE_DIR", "ORO_PROBLEMS", "ORO_JUDGE", "ORO_JUDGE_BASE_URL", "ORO_JUDGE_MODEL",
                 "MLFLOW_TRACKING_URI", "DAGSTER_HOME", "ORO_MODEL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def kernels():
    """The native kernels, for a test comparing them with their Python references (skipped where not built;
    a failure under CI)."""
    return require_kernels()


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: without it installed the suite still runs, serially
def pytest_xdist_make_scheduler(config, log):
    """``pytest -n 2 --dist loadscope`` (pytest-xdist; ``scripts/test.sh`` runs the suite so): a scope is a folder of
    tests, so the session and module fixtures a folder shares (a materialised data root, a simulated firehose, the
    tiny model) are built once, and its tests run in their serial order on one worker; each file at the top level is
    a scope of its own. (``--dist loadgroup`` cannot do it here: xdist 3.8 puts a group into the test id through an
    attribute pytest 9 no longer reads.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FolderScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return folder_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            # xdist queues the scopes by their number of tests: the one-test fresh-clone scope would start last and
            # run alone at the end. The longest scopes go first instead.
            for scope in reversed(LONGEST_SCOPES):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return FolderScheduling(config, log)


#: Scopes started before the others under ``-n``, longest first: the fresh clone's main command (277 s), the
#: reliability tests (165 s) and the training tests (136 s) of the suite's 821 s on two workers (2026-12-07); no other
#: scope takes 50 s.
LONGEST_SCOPES = ("oro_assets_tests/test_fresh_clone.py", "oro_assets_tests/reliability", "oro_assets_tests/training")


def folder_scope(nodeid: str) -> str:
    """``oro_assets_tests/<folder>/test_x.py::test_y`` -> ``oro_assets_tests/<folder>``; a top-level file -> itself."""
    parts = nodeid.split("::", 1)[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else "/".join(parts)
