"""Reports of benchmark runs: a markdown table, JSON, and a plot of success with its intervals.

The plot needs matplotlib (the ``bench`` extra: ``pip install 'dreamgym-env[bench]'``); the
table and the JSON need nothing more than the core install.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from dreamgym_env.bench.episodes import BenchResult, sim_to_real_gaps
from dreamgym_env.errors import ConfigurationError

BENCH_EXTRA_HINT: Final = "pip install 'dreamgym-env[bench]'"
JSON_NAME: Final = "bench.json"
MARKDOWN_NAME: Final = "bench.md"
PLOT_NAME: Final = "bench.png"


def _tokens(count: int) -> str:
    return f"{count:,}" if count else "-"


def _cap_line(results: Sequence[BenchResult]) -> str | None:
    caps = sorted({r.max_steps for r in results if r.max_steps is not None})
    if not caps:
        return None
    return f"Episodes capped at {', '.join(map(str, caps))} step(s) (cut episodes are truncated, not won)."


def markdown_report(results: Sequence[BenchResult]) -> str:
    """One row per (agent, env id), then the sim-to-real gap of each agent run on both ids of a domain.

    A ``--max-steps`` cap is stated above the table; each row gives its episodes' step limit
    and its errored episodes (the experience model failed; they count as failures).
    """
    if not results:
        return "(no results)\n"
    level = f"{results[0].confidence:.0%}"
    cap = _cap_line(results)
    lines = [cap, ""] if cap else []
    lines += [
        f"| Agent | Env | Model | Episodes | Success ({level} CI) | Mean reward | Mean steps | Step limit "
        "| Invalid actions | Invalid outputs | Errored | Agent tokens | Model tokens | Wall (s) |",
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.agent} | {r.env_id} | {r.experience_model or '-'} | {r.episodes} "
            f"| {r.success_rate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] | {r.mean_reward:.3f} "
            f"| {r.mean_steps:.1f} | {r.step_limit or '-'} | {r.invalid_action_rate:.1%} "
            f"| {r.invalid_output_rate:.1%} | {r.errored} ({r.errored_rate:.1%}) "
            f"| {_tokens(r.agent_tokens)} | {_tokens(r.model_tokens)} | {r.seconds:.2f} |"
        )
    gaps = sim_to_real_gaps(results)
    if gaps:
        lines += [
            "",
            "| Agent | Synthetic | Reference | Success (synthetic) | Success (reference) | Gap |",
            "|---|---|---|---:|---:|---:|",
        ]
        for g in gaps:
            lines.append(
                f"| {g.agent} | {g.synthetic_id} | {g.reference_id} | {g.synthetic_success:.3f} "
                f"| {g.reference_success:.3f} | {g.gap:+.3f} |"
            )
    return "\n".join(lines) + "\n"


def report_data(results: Sequence[BenchResult], *, episodes: bool = True) -> dict[str, Any]:
    """The JSON report: each result (with its episodes unless ``episodes`` is False) and the gaps."""
    return {
        "results": [r.to_dict(episodes=episodes) for r in results],
        "sim_to_real_gaps": [g.to_dict() for g in sim_to_real_gaps(results)],
    }


def plot_success(results: Sequence[BenchResult], path: Path) -> Path:
    """Bars of success per (agent, env id) with their interval as error bars, saved to ``path``."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ConfigurationError(f"the benchmark plot needs matplotlib: {BENCH_EXTRA_HINT}") from exc
    agents = list(dict.fromkeys(r.agent for r in results))
    env_ids = list(dict.fromkeys(r.env_id for r in results))
    width = 0.8 / max(1, len(agents))
    figure = Figure(figsize=(max(6.0, 1.4 * len(env_ids) * max(1, len(agents)) ** 0.5 + 2), 4.5))
    axes = figure.add_subplot()
    for k, agent in enumerate(agents):
        rows = [(env_ids.index(r.env_id), r) for r in results if r.agent == agent]
        xs = [x + (k - (len(agents) - 1) / 2) * width for x, _ in rows]
        ys = [r.success_rate for _, r in rows]
        errors = [[r.success_rate - r.ci_low for _, r in rows], [r.ci_high - r.success_rate for _, r in rows]]
        axes.bar(xs, ys, width=width, yerr=errors, capsize=4, label=agent)
    axes.set_xticks(range(len(env_ids)))
    axes.set_xticklabels([i.removeprefix("DreamGym/") for i in env_ids], rotation=20, ha="right")
    level = f"{results[0].confidence:.0%}" if results else "95%"
    axes.set(ylim=(0, 1.05), ylabel=f"success rate ({level} Wilson interval)", title="Agent success per env")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    return path


def write_report(results: Sequence[BenchResult], out: Path, *, plot: bool = True) -> dict[str, Path]:
    """Write ``bench.md``, ``bench.json`` and (with ``plot``) ``bench.png`` into ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / MARKDOWN_NAME, "json": out / JSON_NAME}
    paths["markdown"].write_text(markdown_report(results), encoding="utf-8")
    paths["json"].write_text(json.dumps(report_data(results), indent=2) + "\n", encoding="utf-8")
    if plot:
        paths["plot"] = plot_success(results, out / PLOT_NAME)
    return paths
