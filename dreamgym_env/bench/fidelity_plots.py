"""PNG plots of a fidelity measurement (matplotlib, the ``bench`` extra): by action type and by state field."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dreamgym_env.errors import ConfigurationError

if TYPE_CHECKING:
    from dreamgym_env.bench.fidelity_runs import FidelityResults

ACTION_MEASURES = (
    ("exact_match", "next state exact"),
    ("reward_agreement", "reward"),
    ("accuracy", "all three"),
)
"""What the by-action plot shows, one panel each: the report field and its title."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ConfigurationError(
            "the fidelity plots need matplotlib: pip install 'dreamgym-env[bench]'"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _bars(ax: Any, groups: Sequence[str], series: dict[str, list[float]]) -> None:
    """Grouped bars: one group per name in ``groups``, one bar per series."""
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        ax.bar(
            [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))], values, width, label=label
        )
    ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.grid(axis="y", alpha=0.3)


def _legend(fig: Any, ax: Any, entries: int) -> None:
    """The runs' legend in a row under the panels."""
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=max(1, entries), fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))


def plot_by_action(results: FidelityResults, path: Path) -> Path:
    """Next-state exact match, reward agreement and accuracy per action type, one bar per run."""
    plt = _pyplot()
    actions = list(dict.fromkeys(name for row in results.rows for name in row.by_action))
    fig, axes = plt.subplots(1, len(ACTION_MEASURES), figsize=(5 * len(ACTION_MEASURES), 4.2), sharey=True)
    for ax, (measure, title) in zip(axes, ACTION_MEASURES, strict=True):
        series = {
            row.key: [getattr(row.by_action[a], measure) if a in row.by_action else 0.0 for a in actions]
            for row in results.rows
        }
        _bars(ax, actions, series)
        ax.set_title(title)
    axes[0].set_ylabel("share of transitions")
    _legend(fig, axes[0], len(results.rows))
    fig.suptitle(f"Fidelity by action type: {results.model} on {results.domain}")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_by_field(results: FidelityResults, path: Path) -> Path | None:
    """Exact agreement of each abstract-state field, one bar per structured run; ``None`` without one."""
    structured = [row for row in results.rows if row.report.fields]
    if not structured:
        return None
    plt = _pyplot()
    fields = list(dict.fromkeys(name for row in structured for name in row.report.fields))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(fields) + 2), 4.2))
    _bars(ax, fields, {row.key: [row.report.fields.get(f, 0.0) for f in fields] for row in structured})
    ax.set_ylabel("exact agreement")
    _legend(fig, ax, len(structured))
    ax.set_title(f"Fidelity by state field: {results.model} on {results.domain}")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
