"""The README's two commands, its configuration table and .ci/run cannot drift apart."""

import re
from pathlib import Path

from oro_assets.settings import ENV_VARS

ROOT = Path(__file__).resolve().parents[1]


def readme_command(name: str) -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(rf"<!-- readme-command: {name} -->\s*```bash\n(.+?)\n```", text, re.S)
    assert match, f"README has no '{name}' command block"
    lines = [line for line in match.group(1).splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == 1, f"the {name} command must be one line"
    return lines[0].strip()


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = readme_command("test")
    ci_lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    assert test_command in ci_lines


def test_readme_commands_point_at_existing_scripts():
    for name in ("main", "test"):
        command = readme_command(name)
        script = command.split()[1]
        assert (ROOT / script).is_file(), command


def test_main_script_creates_venv_and_runs_main_job():
    main_script = (ROOT / readme_command("main").split()[1]).read_text()
    assert "setup_venv.sh" in main_script and "oro-assets main" in main_script
    assert "-m venv .venv" in (ROOT / "scripts/setup_venv.sh").read_text()


def test_configuration_table_documents_every_variable():
    text = (ROOT / "README.md").read_text()
    table = text.split("<!-- config-table -->", 1)[1]
    rows = dict(re.findall(r"^\| `([A-Z_0-9]+)` \| ([^|]+) \|", table, re.M))
    assert set(rows) == set(ENV_VARS)
    for name, (default, _doc) in ENV_VARS.items():
        assert rows[name].strip() == default, name


def test_torch_is_pinned_to_the_local_cpu_wheel():
    assert '"torch==2.13.*"' in (ROOT / "pyproject.toml").read_text()
