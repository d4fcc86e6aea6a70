import os
import subprocess
import sys

import pytest

from oro_assets.settings import SettingsError, load_settings


def test_defaults(data_dir):
    settings = load_settings()
    assert settings.data_dir == data_dir.resolve()
    assert settings.uses_embedded_firehose
    assert settings.model_profile == "tiny"
    assert settings.partitions_start == "2026-01-01"
    assert settings.mlflow_tracking_uri == f"sqlite:///{data_dir.resolve() / 'mlflow' / 'mlflow.db'}"
    assert settings.judge == "rule"


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("ORO_MODEL_PROFILE", "qwen9", "tiny, qwen3-4b"),
        ("ORO_PARTITIONS_START", "01/02/2026", "YYYY-MM-DD"),
        ("ORO_SIM_TRACES_PER_DAY", "many", "not an integer"),
        ("ORO_SCHEDULE_HOUR", "24", "0..23"),
        ("ORO_FIREHOSE_DIR", "/definitely/not/here", "readable directory"),
        ("ORO_JUDGE", "llm", "ORO_JUDGE_BASE_URL"),
        ("ORO_PROBLEMS", "/nope/problems.jsonl", "does not exist"),
        ("ORO_NATIVE", "maybe", "not a switch"),
        ("ORO_ARROW_MEMORY_POOL", "tcmalloc", "system, jemalloc, mimalloc"),
    ],
)
def test_bad_values_fail_with_one_line_naming_the_variable(data_dir, monkeypatch, name, value, fragment):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as err:
        load_settings()
    message = str(err.value)
    assert name.split("=")[0] in message or "ORO_JUDGE" in message
    assert fragment in message
    assert "\n" not in message


def test_cli_reports_bad_config_on_one_line(data_dir, monkeypatch):
    env = {"ORO_DATA_DIR": str(data_dir), "ORO_MODEL_PROFILE": "huge", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "oro_assets.cli", "config"], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == ["oro-assets: configuration error: ORO_MODEL_PROFILE='huge' is not a known value; accepted: tiny, qwen3-4b"]


def test_firehose_dir_is_resolved(data_dir, tmp_path, monkeypatch):
    firehose = tmp_path / "dumps"
    firehose.mkdir()
    monkeypatch.setenv("ORO_FIREHOSE_DIR", str(firehose))
    settings = load_settings()
    assert not settings.uses_embedded_firehose
    assert settings.firehose_root == str(firehose.resolve())


def _python(code: str, env: dict[str, str]) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("ORO_ARROW_MEMORY_POOL", "ARROW_DEFAULT_MEMORY_POOL")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**clean, **env}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "system"),
        ({"ORO_ARROW_MEMORY_POOL": "jemalloc"}, "jemalloc"),
        ({"ORO_ARROW_MEMORY_POOL": "MIMALLOC"}, "mimalloc"),
        ({"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}, "jemalloc"),  # Arrow's own variable is left to Arrow
        ({"ARROW_DEFAULT_MEMORY_POOL": "jemalloc", "ORO_ARROW_MEMORY_POOL": "system"}, "system"),
        ({"ORO_ARROW_MEMORY_POOL": "tcmalloc"}, None),  # a bad value leaves pyarrow's own default (config fails)
    ],
)
def test_arrow_allocator_in_use_after_importing_storage(env, expected):
    """The allocator a fresh process's Arrow arrays come from once ``oro_assets.storage`` is imported."""
    own_default = _python("import pyarrow as pa; print(pa.default_memory_pool().backend_name)", {})[0]
    if expected is None:
        expected = own_default
    if not env:  # else the default case would prove nothing
        assert own_default != "system"
    code = ("import pyarrow as pa, oro_assets.storage as s; pool = pa.default_memory_pool(); "
            "before = pool.bytes_allocated(); values = pa.array(range(100_000)); "
            "print(s.MEMORY_POOL, pool.backend_name, pool.bytes_allocated() - before >= 800_000)")
    assert _python(code, env) == [expected, expected, "True"]
