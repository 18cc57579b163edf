"""What a release ships: the license its metadata names, every package and data file.

CI (``.ci/run``) builds the wheel and sdist, checks their contents and smoke-tests the installed
wheel; these checks catch the usual causes early, without a build.
"""

from __future__ import annotations

import configparser
import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dreamgym_env"


def _setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config


def test_license_file_matches_the_metadata():
    config = _setup_cfg()
    assert config["metadata"]["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 dreamgym-env developers" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


def test_every_package_directory_is_a_package():
    """``packages = find:`` ships only directories with an ``__init__.py``."""
    missing = [
        str(directory.relative_to(ROOT))
        for directory in [PACKAGE, *PACKAGE.rglob("*")]
        if directory.is_dir()
        and directory.name != "__pycache__"
        and any(directory.glob("*.py"))
        and not (directory / "__init__.py").exists()
    ]
    assert missing == []


def test_package_data_patterns_cover_every_data_file():
    """Files that are not Python must match ``[options.package_data]`` to reach the wheel."""
    patterns = [p.strip() for p in _setup_cfg()["options.package_data"]["dreamgym_env"].split(",")]
    data = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".py", ".pyc")
    ]
    uncovered = [
        name
        for name in data
        if not any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(name, p.removeprefix("**/")) for p in patterns)
    ]
    assert "py.typed" in data and uncovered == []


def test_ci_builds_installs_and_smoke_tests_the_wheel():
    script = (ROOT / ".ci" / "run").read_text()
    assert script.index("make test") < script.index("python -m build")
    for step in (
        'pip install --quiet --disable-pip-version-check "$wheel"',
        "dreamgym envs",
        "dreamgym episode --reference",
    ):
        assert step in script
    assert "build>=" in _setup_cfg()["options.extras_require"]["dev"]
