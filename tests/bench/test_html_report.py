"""The self-contained HTML fidelity report, as headless Chromium shows it."""

from __future__ import annotations

import html
import re
import subprocess

import pytest

from dreamgym_env.bench.fidelity_runs import FidelityResults, run_fidelity
from dreamgym_env.bench.html_report import diff_html, render_html, write_html
from dreamgym_env.bench.sampling import sample_transitions
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain


@pytest.fixture(scope="module")
def results() -> FidelityResults:
    domain = get_domain("webshop")
    samples = sample_transitions(domain, 24, seed=1)
    model = OracleExperienceModel(domain, error_rate=0.4, seed=1)
    try:
        rows = run_fidelity(model, domain, samples, groundings=["none"])
    finally:
        model.close()
    return FidelityResults(domain.name, "oracle (error rate 0.4)", 1, 4, samples, rows)


def test_diff_marks_what_differs_and_escapes_the_rest():
    left, right = diff_html("a <b> c\nsame\ngone", "a <x> c\nsame")
    assert left == "a <del>&lt;b&gt;</del> c\nsame\n<del>gone</del>"
    assert right == "a <ins>&lt;x&gt;</ins> c\nsame"
    assert diff_html("one\ntwo", "one\ntwo") == ("one\ntwo", "one\ntwo")


def test_the_page_holds_every_sampled_step_of_every_run(results):
    page = render_html(results)
    assert page.count('<div class="step ') == len(results.samples) * len(results.rows) == 48
    assert page.count('data-run="text/none"') == len(results.samples)
    for sample in results.samples:
        assert html.escape(sample.reference.request.task.instruction) in page
    mismatches = sum(not s.accurate for row in results.rows for s in row.scores)
    assert page.count('class="step mismatch"') == mismatches > 0
    assert "http://" not in page.split("<body>")[0] and "<link" not in page and 'src="http' not in page


def test_headless_chromium_shows_the_viewer_on_a_step_that_differs(results, tmp_path, headless_chromium):
    plot = tmp_path / "plot.png"
    plot.write_bytes(b"\x89PNG\r\n\x1a\n")
    path = write_html(results, tmp_path / "fidelity.html", images=[plot])
    dom = subprocess.run(
        [*headless_chromium, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=90
    ).stdout
    episodes = len({s.episode_key for s in results.samples})
    assert re.search(rf'<span id="position">episode \d+ of {episodes}</span>', dom)
    # the script shows one episode, the first with a difference in the chosen run
    current = re.findall(
        r'<article class="episode current" data-episode="([^"]+)">(.*?)</article>', dom, re.S
    )
    assert len(current) == 1
    shown = re.findall(r'<div class="step (match|mismatch) shown" data-run="structured/none">', current[0][1])
    assert "mismatch" in shown and len(shown) == sum(s.episode_key == current[0][0] for s in results.samples)
    assert '<span class="bad">✗</span>' in current[0][1]
    # a next state that differs is marked on both sides
    differs = [i for i, s in enumerate(results.rows[0].scores) if s.valid and not s.exact]
    assert differs and "<del>" in dom and "<ins>" in dom and "next state: differs" in dom
    assert "reward: predicted" in current[0][1] and 'src="data:image/png;base64,' in dom
