from __future__ import annotations

import subprocess

from dreamgym_env.envs.webarena.reference_env import WebArenaRefEnv


def _product_page() -> tuple[WebArenaRefEnv, str]:
    env = WebArenaRefEnv(split="test", render_mode="html")
    task = next(t for t in env.tasks if t.metadata["template"] == "shopping.price")
    env.reset(options={"task": task})
    product = task.metadata["slots"]["product"]
    env.step(f"type [6] [{product}]")
    env.step("click [12]")
    return env, product


def test_html_render_is_a_standalone_page():
    env, product = _product_page()
    page = env.render()
    assert isinstance(page, str) and page.startswith("<!DOCTYPE html>")
    assert f"<h2>{product}</h2>" in page and "<button>Add to Cart</button>" in page
    assert 'data-id="6"' in page and "http://shopping.local/product/" in page


def test_html_render_opens_in_headless_chromium(headless_chromium, tmp_path):
    env, product = _product_page()
    path = tmp_path / "page.html"
    path.write_text(env.render() or "", encoding="utf-8")
    dom = subprocess.run(
        [*headless_chromium, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=60
    )
    assert product in dom.stdout and "Add to Cart" in dom.stdout
    shot = tmp_path / "page.png"
    subprocess.run(
        [*headless_chromium, f"--screenshot={shot}", "--window-size=1200,900", path.as_uri()],
        capture_output=True,
        timeout=60,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
