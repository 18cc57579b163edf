"""The documentation site: ``mkdocs build --strict`` passes offline, every registered id has its env
page stating its spaces and arguments, and a built page renders in headless Chromium."""

from __future__ import annotations

import html
import inspect
import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import gymnasium as gym
import pytest

import dreamgym_env  # noqa: F401  (registers the DreamGym/* ids)

pytest.importorskip("mkdocs", reason="needs the extra `docs`: pip install -e '.[docs]'")
pytest.importorskip("material", reason="needs the extra `docs`: pip install -e '.[docs]'")
pytest.importorskip("mkdocstrings_handlers.python", reason="needs the extra `docs`: pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parents[2]
ENV_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("DreamGym/"))
# How the test builds each kind of id offline, to compare its page with the env's spaces and
# arguments: a real-server env sends no request before its first reset, so any URL does.
OFFLINE_ENTRY_POINTS = {
    "dreamgym_env.envs.synthetic:DreamEnv": {"experience_model": "oracle"},
    "dreamgym_env.envs.registry:make_reference_env": {},
    "dreamgym_env.envs.registry:make_real_env": {"base_url": "http://127.0.0.1:9"},
}
SCREENSHOT_SIZE = (1200, 900)
THEME_INDIGO = (64, 81, 181)  # mkdocs-material's `primary: indigo` top bar (#4051b5)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built from the repository's ``mkdocs.yml``, strict, into a temporary directory."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner, not a build warning
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


def _page_slug(env_id: str) -> str:
    """``DreamGym/WebShop-Ref-v0`` -> ``webshop-ref-v0`` (the page ``docs/envs/webshop-ref-v0.md``)."""
    return env_id.split("/", 1)[1].lower()


def _text(fragment: str) -> str:
    """The visible text of an HTML fragment, without the headings' permalink signs."""
    fragment = re.sub(r'<a class="headerlink".*?</a>', "", fragment, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def _table_row(page: str, name: str) -> str:
    """The text of the summary table's cell beside ``name`` (``Action Space``, ``Make``, ...)."""
    match = re.search(rf"<td>{re.escape(name)}</td>\s*<td>(.*?)</td>", page, flags=re.DOTALL)
    assert match is not None, f"the page's summary table has no {name!r} row"
    return _text(match[1])


def _section(page: str, heading: str) -> str:
    """The HTML of the page's ``<h2>`` section ``heading``, up to the next ``<h2>``."""
    match = re.search(
        rf"<h2 id=\"[^\"]*\">{re.escape(heading)}.*?</h2>(.*?)(?=<h2 |\Z)", page, flags=re.DOTALL
    )
    assert match is not None, f"the page has no {heading!r} section"
    return match[1]


def test_the_site_builds_with_the_api_reference(site):
    assert (site / "index.html").is_file() and (site / "envs" / "index.html").is_file()
    api = (site / "api" / "envs" / "index.html").read_text(encoding="utf-8")
    assert 'id="dreamgym_env.envs.synthetic.DreamEnv"' in api
    # The docstrings' Sphinx roles became links or code, not literal ``:class:`` text.
    assert ":class:`" not in api and ":meth:`" not in api


def test_every_registered_id_is_listed():
    assert {"DreamGym/WebShop-v0", "DreamGym/WebShop-Ref-v0", "DreamGym/ALFWorld-Ref-v0"} <= set(ENV_IDS)


def _constructor_parameters(cls: type) -> list[inspect.Parameter]:
    """A constructor's parameters; a ``**kwargs`` that passes the rest on stands for its base class's."""
    parameters: list[inspect.Parameter] = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        own = [p for p in inspect.signature(vars(klass)["__init__"]).parameters.values() if p.name != "self"]
        forwards = any(p.kind is inspect.Parameter.VAR_KEYWORD and p.name == "kwargs" for p in own)
        parameters += [p for p in own if not (forwards and p.kind is inspect.Parameter.VAR_KEYWORD)]
        if not forwards:
            return parameters
    return parameters


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_registered_id_has_a_page_with_its_spaces(site, env_id):
    path = site / "envs" / _page_slug(env_id) / "index.html"
    assert path.is_file(), (
        f"no page for {env_id}: write docs/envs/{_page_slug(env_id)}.md and add it to mkdocs.yml's nav"
    )
    page = path.read_text(encoding="utf-8")
    assert _text(re.search(r"<h1[^>]*>(.*?)</h1>", page, flags=re.DOTALL)[1]) == env_id
    action_space, observation_space = _table_row(page, "Action Space"), _table_row(page, "Observation Space")
    assert action_space and observation_space
    assert f'gym.make("{env_id}")' in _table_row(page, "Make")

    spec = gym.spec(env_id)
    kwargs = OFFLINE_ENTRY_POINTS.get(str(spec.entry_point))
    if kwargs is None:
        return  # an id that needs the outside world: the page states its spaces, checked above
    env = gym.make(env_id, **kwargs)
    try:
        assert action_space.startswith(str(env.action_space))
        assert observation_space.startswith(str(env.observation_space))
        parameters = _constructor_parameters(type(env.unwrapped))
    finally:
        env.close()
    arguments = _text(_section(page, "Arguments"))
    for parameter in parameters:
        name = f"**{parameter.name}" if parameter.kind is inspect.Parameter.VAR_KEYWORD else parameter.name
        assert name in arguments, f"the page of {env_id} does not describe the argument {name!r}"
    assert _section(page, "Version History").strip() and _section(page, "The real benchmark").strip()


def _png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """Width, height and the pixels of an 8-bit, non-interlaced RGB or RGBA PNG (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks = 8, {}
    idat = b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        chunks.setdefault(kind, body)
        if kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8 and colour in (2, 6) and interlace == 0, "an unexpected PNG format"
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up, up_left = previous[x], previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else up_left
                line[x] = (line[x] + predictor) & 0xFF
        rows.append(line)
        previous = line
    pixels = [tuple(row[x : x + 3]) for row in rows for x in range(0, stride, channels)]
    return width, height, pixels


def test_an_env_page_renders_in_headless_chromium(site, headless_chromium, tmp_path):
    page = site / "envs" / "webshop-v0" / "index.html"
    shot = tmp_path / "page.png"
    width, height = SCREENSHOT_SIZE
    result = subprocess.run(
        [
            *headless_chromium,
            "--hide-scrollbars",
            f"--screenshot={shot}",
            f"--window-size={width},{height}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert shot.is_file(), f"chromium wrote no screenshot:\n{result.stderr}"
    got_width, got_height, pixels = _png_pixels(shot.read_bytes())
    assert (got_width, got_height) == SCREENSHOT_SIZE
    # Not blank: text, tables and the theme's colours give hundreds of distinct colours.
    assert len(set(pixels)) > 50
    # The theme's stylesheet loaded from the built site (offline): its indigo top bar.
    assert pixels[10 * width + width // 2] == THEME_INDIGO
