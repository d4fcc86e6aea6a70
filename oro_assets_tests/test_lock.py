"""requirements.lock pins the environment the README's figures were measured in, and this environment is it."""

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def _locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"requirements.lock: {line!r} is not an exact pin"
            pins[canonicalize_name(name)] = version
    return pins


def test_every_declared_dependency_is_locked_within_its_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _locked()
    for spec in [*project["dependencies"], *project["optional-dependencies"]["dev"]]:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is declared but not locked"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req.name}=={pins[name]} is outside {spec}"


def test_the_installed_environment_is_the_locked_one():
    pins = _locked()
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    drift = {name: (version, installed.get(name)) for name, version in pins.items()
             if name in installed and installed[name].split("+")[0] != version}
    assert drift == {}, f"installed versions differ from requirements.lock: {drift}"
    assert installed.get("torch", "").startswith("2.13."), "torch must stay the 2.13 CPU wheel"
