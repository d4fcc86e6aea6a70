"""PNG plots of an evaluation report (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def plot_asr(stages: Sequence[str], metrics: Mapping[str, Mapping[str, Any]], path: str | Path,
             references: Mapping[str, float] | None = None) -> Path:
    """Bar chart of ASR per stage with Wilson 95 % interval error bars; references as dashed lines."""
    plt = _pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    asr = [100.0 * float(metrics[s]["asr"]) for s in stages]
    lo = [100.0 * float(metrics[s]["asr_ci"][0]) for s in stages]
    hi = [100.0 * float(metrics[s]["asr_ci"][1]) for s in stages]
    err = [[max(0.0, a - low) for a, low in zip(asr, lo, strict=True)],
           [max(0.0, high - a) for a, high in zip(asr, hi, strict=True)]]
    width = max(5.0, 1.2 * len(stages) + 2) + (4.5 if references else 0.0)
    fig, ax = plt.subplots(figsize=(width, 4.2), dpi=100)
    ax.bar(range(len(stages)), asr, yerr=err, capsize=4, color="#4C72B0")
    for i, a in enumerate(asr):
        ax.text(i, min(a + 1.0, 101.0), f"{a:.1f}", ha="center", va="bottom", fontsize=8)
    for j, (label, value) in enumerate(sorted((references or {}).items(), key=lambda kv: kv[1])):
        ax.axhline(100.0 * value, linestyle="--", linewidth=0.8, color=f"C{(j % 8) + 1}",
                   label=f"{label} {100 * value:.1f} (published)")
    ax.set_xticks(range(len(stages)), list(stages), rotation=20)
    ax.set_ylabel("ASR % (production-strict)")
    ax.set_ylim(0, 108)
    ax.set_title("ASR per stage (95% Wilson interval); dashed: published, not measured here", fontsize=9)
    if references:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_pass_at_k(stages: Sequence[str], metrics: Mapping[str, Mapping[str, Any]], path: str | Path) -> Path:
    """pass@k against k (log2 axis), one line per stage that has sampled runs."""
    plt = _pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.0, 4.0), dpi=100)
    drawn = 0
    all_ks: set[int] = set()
    for s in stages:
        pk = metrics[s].get("pass_at_k") or {}
        if not pk:
            continue
        ks = sorted(int(k) for k in pk)
        all_ks.update(ks)
        ax.plot(ks, [100.0 * pk[str(k)] for k in ks], marker="o", label=s)
        drawn += 1
    ax.set_xscale("log", base=2)
    if all_ks:
        ax.set_xticks(sorted(all_ks), [str(k) for k in sorted(all_ks)])
    ax.set_xlabel("k")
    ax.set_ylabel("pass@k %")
    ax.set_ylim(-2, 102)
    ax.set_title("pass@k (unbiased estimator)")
    if drawn:
        ax.legend(fontsize=8, loc="lower right")
    else:
        ax.text(0.5, 0.5, "no sampled runs", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
