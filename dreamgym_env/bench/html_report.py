"""The fidelity report as one self-contained HTML page, with a trajectory viewer.

The page needs no network: its CSS, its script and its plots (PNG data URIs) are inline. The
viewer walks the sampled episodes one at a time; each sampled step shows the action, the
reference next state beside the model's (as the agent would see them; what differs is marked,
``<del>`` on the reference side and ``<ins>`` on the model's) and the reward and episode end,
predicted against true, for the run (mode and grounding) chosen in a menu.

Example:
    >>> write_html(results, Path("runs/fidelity/fidelity.html"), images=[plot])  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from html import escape
from itertools import zip_longest
from pathlib import Path

from dreamgym_env.bench.fidelity import TransitionScore
from dreamgym_env.bench.fidelity_runs import FidelityResults, Table
from dreamgym_env.bench.sampling import Sample

_TOKENS = re.compile(r"(\s+)")
_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1240px;padding:12px 20px;color:#1f2328}
h1{font-size:22px;margin:6px 0}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}td,th{border:1px solid #d0d7de;padding:3px 7px}
th{background:#f6f8fa}td{text-align:right}td:first-child,td.text{text-align:left}
.controls{display:flex;gap:12px;align-items:center;background:#f6f8fa;padding:8px;border-radius:6px}
.episode{display:none}.episode.current{display:block}.step{display:none;border:1px solid #d0d7de;
border-radius:6px;margin:10px 0;padding:8px}.step.shown{display:block}.step.mismatch{border-left:5px solid #cf222e}
.step.match{border-left:5px solid #1a7f37}.cols{display:grid;grid-template-columns:1fr 1fr;gap:10px}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:6px;margin:4px 0;max-height:230px;
overflow:auto;font-size:12px}del{background:#ffd7d5;text-decoration:line-through}ins{background:#ccffd8;
text-decoration:none}.ok{color:#1a7f37}.bad{color:#cf222e;font-weight:600}h4{margin:2px 0;font-size:13px}
.error{color:#cf222e}img{max-width:100%;border:1px solid #d0d7de;margin:6px 0}
"""
_SCRIPT = """
const episodes=[...document.querySelectorAll('.episode')];let current=0;
const run=document.getElementById('run'),only=document.getElementById('only-diff');
function show(){episodes.forEach((e,i)=>e.classList.toggle('current',i===current));
document.querySelectorAll('.step').forEach(s=>s.classList.toggle('shown',s.dataset.run===run.value&&
(!only.checked||s.classList.contains('mismatch'))));
document.getElementById('position').textContent=`episode ${current+1} of ${episodes.length}`;}
function go(d){current=(current+d+episodes.length)%episodes.length;show();}
document.getElementById('prev').onclick=()=>go(-1);document.getElementById('next').onclick=()=>go(1);
run.onchange=show;only.onchange=show;
const first=episodes.findIndex(e=>e.querySelector(`.step.mismatch[data-run="${run.value}"]`));
current=Math.max(0,first);show();
"""


def _tokens_diff(reference: str, predicted: str) -> tuple[str, str]:
    """One line pair with its differing words marked."""
    a, b = _TOKENS.split(reference), _TOKENS.split(predicted)
    left, right = [], []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        old, new = escape("".join(a[i1:i2])), escape("".join(b[j1:j2]))
        if tag == "equal":
            left.append(old)
            right.append(new)
            continue
        if old:
            left.append(f"<del>{old}</del>")
        if new:
            right.append(f"<ins>{new}</ins>")
    return "".join(left), "".join(right)


def diff_html(reference: str, predicted: str) -> tuple[str, str]:
    """Both texts as escaped HTML, what differs marked: ``<del>`` in the reference, ``<ins>`` in the prediction."""
    a, b = reference.splitlines(), predicted.splitlines()
    left: list[str] = []
    right: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            left += map(escape, a[i1:i2])
            right += map(escape, b[j1:j2])
            continue
        for old, new in zip_longest(a[i1:i2], b[j1:j2]):
            if old is not None and new is not None:
                pair = _tokens_diff(old, new)
                left.append(pair[0])
                right.append(pair[1])
            elif old is not None:
                left.append(f"<del>{escape(old)}</del>")
            elif new is not None:
                right.append(f"<ins>{escape(new)}</ins>")
    return "\n".join(left), "\n".join(right)


def _table(table: Table) -> str:
    headers, rows = table
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _mark(agrees: bool) -> str:
    return '<span class="ok">✓</span>' if agrees else '<span class="bad">✗</span>'


def _verdict(name: str, predicted: str, true: str, agrees: bool) -> str:
    return f"{name}: predicted {escape(predicted)} / true {escape(true)} {_mark(agrees)}"


def _step(sample: Sample, key: str, score: TransitionScore) -> str:
    truth = sample.reference.truth
    head = f"step {sample.step} · <code>{escape(sample.reference.request.action)}</code> · {escape(score.action_type)}"
    if score.predicted is None:
        left, right = (
            escape(score.true_text),
            f'<em class="error">no answer: {escape(score.error or "")}</em>',
        )
        verdicts = "the model gave no transition"
    else:
        predicted = score.predicted
        left, right = diff_html(score.true_text, score.predicted_text or "")
        if not score.valid:
            right = f'<em class="error">not a state of the domain:</em>\n{right}'
        verdicts = " · ".join(
            [
                f"next state: {'same' if score.exact else f'differs ({score.similarity:.2f} similar)'} "
                + _mark(score.exact),
                _verdict("reward", f"{predicted.reward:g}", f"{truth.reward:g}", score.reward_agrees),
                _verdict("done", str(predicted.terminated), str(truth.terminated), score.done_agrees),
            ]
        )
    status = "match" if score.accurate else "mismatch"
    return (
        f'<div class="step {status}" data-run="{escape(key)}"><div>{head}</div><div>{verdicts}</div>'
        f'<div class="cols"><div><h4>reference</h4><pre>{left}</pre></div>'
        f"<div><h4>model</h4><pre>{right}</pre></div></div></div>"
    )


def _episodes(results: FidelityResults) -> Iterable[str]:
    groups: dict[str, list[int]] = {}
    for index, sample in enumerate(results.samples):
        groups.setdefault(sample.episode_key, []).append(index)
    for key, indices in groups.items():
        first = results.samples[indices[0]]
        task = first.reference.request.task
        steps = "".join(
            _step(results.samples[i], row.key, row.scores[i]) for i in indices for row in results.rows
        )
        yield (
            f'<article class="episode" data-episode="{escape(key)}"><h3>{escape(first.policy)} episode '
            f"{first.episode} · task {escape(task.id)}: {escape(task.instruction)}</h3>{steps}</article>"
        )


def _image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{escape(path.stem)}" src="data:image/png;base64,{data}">'


def render_html(results: FidelityResults, images: Sequence[Path] = ()) -> str:
    """The whole page (see the module docstring); ``images`` are PNG files shown under the tables."""
    title = f"Fidelity of {results.model} on {results.domain}"
    options = "".join(f'<option value="{escape(row.key)}">{escape(row.key)}</option>' for row in results.rows)
    fields = results.field_table()
    return "".join(
        [
            f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>',
            f"<style>{_CSS}</style></head><body><h1>{escape(title)}</h1>",
            f"<p>{len(results.samples)} {escape(results.origin)}, seed {results.seed}, supply "
            f"{results.supply}, {results.history_len} past steps in each request.</p>",
            f"<h2>Summary</h2>{_table(results.overall_table())}",
            '<h2>Trajectory viewer</h2><div class="controls"><label>run <select id="run">',
            f'{options}</select></label><button id="prev">◀ previous</button><span id="position"></span>',
            '<button id="next">next ▶</button><label><input type="checkbox" id="only-diff"> only steps '
            'that differ</label></div><div id="episodes">',
            *_episodes(results),
            f"</div><h2>By action type</h2>{_table(results.action_table())}",
            f"<h2>By state field: exact match (similarity)</h2>{_table(fields)}" if fields[1] else "",
            *(_image(path) for path in images),
            f"<script>{_SCRIPT}</script></body></html>",
        ]
    )


def write_html(results: FidelityResults, path: Path, images: Sequence[Path] = ()) -> Path:
    """Write :func:`render_html`'s page to ``path``."""
    path.write_text(render_html(results, images), encoding="utf-8")
    return path
