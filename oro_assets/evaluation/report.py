"""Evaluate checkpoints / endpoints / scripted baselines and compare them side by side.

``evaluate_policy`` is the one path every evaluated thing goes through: leak checks (blocking),
rollouts (n samples + one greedy run), production-strict scoring, metrics, JSONL trajectories.
``build_comparison_report`` renders the stages next to the paper's published numbers (clearly
marked as not measured here) as markdown + PNG plots; ``log_report_to_mlflow`` stores them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.evaluation.checks import (
    LeakError,
    check_eval_pool,
    check_no_training_leak,
    check_pass_at_k_monotone,
)
from oro_assets.evaluation.metrics import aggregate, per_problem_rows
from oro_assets.evaluation.plots import plot_asr, plot_pass_at_k
from oro_assets.evaluation.rollout import (
    EvalSettings,
    run_eval_rollouts,
    run_id_for,
    write_rollouts,
)
from oro_assets.training.chain import STAGE_NAMES

STAGE_ORDER = STAGE_NAMES  # the training chain's order (oro_assets.training.chain)
EXPERIMENT = "oro-assets-eval"

# Reference §6 (arXiv 2606.10064): Qwen3-4B on the paper's 75-problem guarded hold-out.
# Published, NOT measured here: shown as reference rows only.
PUBLISHED: tuple[dict[str, Any], ...] = (
    {"label": "paper: Qwen3-4B base", "asr": 0.180},
    {"label": "paper: final (SFT, rejection, teacher-SFT, KTO, Dr. GRPO)", "asr": 0.427,
     "pass_at_1": 0.348, "pass_at_8": 0.533},
    {"label": "paper: SFT-only synthetic baseline", "asr": 0.436},
    {"label": "paper: SFT + GRPO", "asr": 0.487},
    {"label": "paper: Claude Sonnet 4.6", "asr": 0.640},
    {"label": "paper: top miner ensemble", "asr": 0.773},
)
PUBLISHED_NOTE = "published, not measured here"


@dataclass
class EvalResult:
    stage: str
    policy_name: str
    run_id: str
    metrics: dict[str, Any]
    rows: list[dict]                      # one per problem (see metrics.per_problem_rows)
    trajectories_path: str | None
    samples_path: str | None
    checks: dict[str, list[dict]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvalResult:
        return cls(**{k: d[k] for k in ("stage", "policy_name", "run_id", "metrics", "rows", "trajectories_path",
                                        "samples_path")},
                   checks=dict(d.get("checks") or {}), config=dict(d.get("config") or {}))

    def save(self, out_dir: str | Path) -> Path:
        path = Path(out_dir) / "eval_result.json"
        _write_text(path, jsonio.dumps_pretty(self.to_dict()))
        return path

    @classmethod
    def load(cls, path: str | Path) -> EvalResult:
        p = Path(path)
        p = p / "eval_result.json" if p.is_dir() else p
        return cls.from_dict(jsonio.loads_lenient(p.read_text()))


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class LeakRefs:
    """What the blocking leak checks compare against (see :func:`run_leak_checks`); ``enforce`` False reports
    violations instead of refusing."""

    eval_pool_ids: Sequence[str] | None = None
    manifest_problems: Sequence[dict | str] | None = None
    cluster_map: Mapping[str, str] | None = None
    problems_by_id: Mapping[str, Mapping] | None = None
    enforce: bool = True


def _grouped(settings: EvalSettings | None, leak: LeakRefs | None,
             loose: Mapping[str, Any]) -> tuple[EvalSettings, LeakRefs]:
    """``settings`` and ``leak`` with keyword arguments of the old flat signature applied (``n=..``,
    ``manifest_problems=..``, ``enforce_checks=..``); an unknown name is refused."""
    leak_names = {f.name for f in dataclasses.fields(LeakRefs)} | {"enforce_checks"}
    unknown = set(loose) - EvalSettings.field_names() - leak_names
    if unknown:
        raise TypeError(f"unknown evaluation arguments: {sorted(unknown)}")
    s_over = {k: v for k, v in loose.items() if k in EvalSettings.field_names()}
    l_over = {("enforce" if k == "enforce_checks" else k): v for k, v in loose.items() if k in leak_names}
    return (settings or EvalSettings()).replace(**s_over), dataclasses.replace(leak or LeakRefs(), **l_over)


def run_leak_checks(problems: Sequence[dict], *, eval_pool_ids: Sequence[str] | None = None,
                    manifest_problems: Sequence[dict | str] | None = None,
                    cluster_map: Mapping[str, str] | None = None,
                    problems_by_id: Mapping[str, Mapping] | None = None,
                    catalogue: Any = None) -> dict[str, list[dict]]:
    """The blocking checks. ``catalogue`` regenerates the manifest's synthetic problems (``syn_*``);
    without it a manifest holding any fails ``no_training_leak``."""
    checks: dict[str, list[dict]] = {}
    if eval_pool_ids is not None:
        checks["eval_pool"] = check_eval_pool(problems, eval_pool_ids)
    if manifest_problems is not None:
        checks["no_training_leak"] = check_no_training_leak(problems, manifest_problems, cluster_map or {},
                                                            problems_by_id, catalogue=catalogue)
    return checks


def _checked(problems: Sequence[dict], leak: LeakRefs, catalogue: Any) -> dict[str, list[dict]]:
    checks = run_leak_checks(problems, eval_pool_ids=leak.eval_pool_ids, manifest_problems=leak.manifest_problems,
                             cluster_map=leak.cluster_map, problems_by_id=leak.problems_by_id, catalogue=catalogue)
    violations = [v for vs in checks.values() for v in vs]
    if violations and leak.enforce:
        raise LeakError(violations)
    return checks


def evaluate_policy(policy: Any, problems: Sequence[dict], catalogue: Any, *, stage: str,
                    settings: EvalSettings | None = None, leak: LeakRefs | None = None, env: Any = None,
                    out_dir: str | Path | None = None, policy_factory: Callable[[int], Any] | None = None,
                    **flat: Any) -> EvalResult:
    """Evaluate any arena Policy on ``problems`` (all in the eval pool, none leaked into training).

    Leak checks run first and raise :class:`LeakError` when ``leak.enforce`` (nothing is rolled out on a
    leaked set). ``env`` defaults to ``InProcessEnv(catalogue)``. ``flat``: the old keyword arguments
    (``n=``, ``temperature=``, ``manifest_problems=``, ...), applied onto ``settings`` / ``leak``.
    """
    if not problems:
        raise ValueError("no eval problems given")
    s, leak = _grouped(settings, leak, flat)
    problems = list(problems)
    checks = _checked(problems, leak, catalogue)
    if env is None:
        from oro_assets.arena.env import InProcessEnv

        env = InProcessEnv(catalogue)
    policy_name = getattr(policy, "name", stage)
    run_id = run_id_for(f"{stage}:{policy_name}", problems, s.n, s.temperature if s.temperature is not None else -1.0,
                        s.seed, s.greedy)
    rollouts, samples = run_eval_rollouts(policy, problems, env, catalogue, s, policy_factory=policy_factory)
    metrics = aggregate(samples, ks=s.ks)
    checks["pass_at_k_monotone"] = check_pass_at_k_monotone(metrics["pass_at_k"])
    by_id = {p["problem_id"]: p for p in problems}
    rows = [dict(r, query=by_id[r["problem_id"]].get("query")) for r in per_problem_rows(samples)]
    paths: dict[str, Path] = {}
    if out_dir is not None:
        agent_version = stage if policy_name == stage else f"{stage}:{policy_name}"
        paths = write_rollouts(rollouts, samples, out_dir, run_id=run_id, agent_version=agent_version, tools=s.tools)
    result = EvalResult(
        stage=stage, policy_name=policy_name, run_id=run_id, metrics=metrics, rows=rows,
        trajectories_path=str(paths["trajectories"]) if paths else None,
        samples_path=str(paths["samples"]) if paths else None, checks=checks,
        config={"n": s.n, "temperature": s.temperature, "greedy": s.greedy, "seed": s.seed, "max_steps": s.max_steps,
                "timeout_s": s.timeout_s, "n_problems": len(problems)},
    )
    if out_dir is not None:
        result.save(out_dir)
    return result


def evaluate_checkpoint(checkpoint: str | Path | None, problems: Sequence[dict], catalogue: Any, *,
                        stage: str | None = None, settings: EvalSettings | None = None, leak: LeakRefs | None = None,
                        env: Any = None, out_dir: str | Path | None = None, endpoint: str | None = None,
                        model: str | None = None, api_key: str | None = None, **flat: Any) -> EvalResult:
    """Evaluate a checkpoint directory (``data/checkpoints/<stage>/<version>``) or an endpoint.

    Exactly one of ``checkpoint`` / ``endpoint`` (+ ``model``). The sampled runs use ``settings.temperature``
    (None: 0.7). A checkpoint is loaded through ``training.checkpoints.load_policy`` (the same prompt view as in
    training); its training manifest, with its ancestors', is the leak check's reference unless
    ``leak.manifest_problems`` is given. ``leak.problems_by_id`` (the whole problem pool) resolves manifest ids
    to ground-truth ids. ``flat``: the old keyword arguments, applied onto ``settings`` / ``leak``.
    """
    s, leak = _grouped(settings, leak, flat)
    temperature = 0.7 if s.temperature is None else s.temperature
    if (checkpoint is None) == (endpoint is None):
        raise ValueError("give exactly one of checkpoint or endpoint")
    if endpoint is not None:
        from oro_assets.agents.openai_policy import OpenAIPolicy

        if not model:
            raise ValueError("an endpoint needs a model name")
        policy: Any = OpenAIPolicy(endpoint, model, api_key, temperature=temperature, top_p=s.top_p, seed=s.seed)
        return evaluate_policy(policy, problems, catalogue, stage=stage or f"endpoint:{model}", env=env,
                               settings=s.replace(temperature=None, workers=4), leak=leak, out_dir=out_dir)
    from oro_assets.machine import machine_signature
    from oro_assets.training.checkpoints import lineage_manifest, load_policy, read_meta

    path = Path(checkpoint)
    if not path.is_dir():
        raise FileNotFoundError(f"checkpoint {path} is not a directory")
    meta = read_meta(path)
    if leak.manifest_problems is None:
        leak = dataclasses.replace(leak, manifest_problems=lineage_manifest(path)[1])
    if leak.problems_by_id is None:
        leak = dataclasses.replace(leak, problems_by_id={p["problem_id"]: p for p in problems})
    _checked(problems, leak, catalogue)  # before loading weights: a leaked checkpoint is refused cheaply
    policy = load_policy(path, temperature=temperature, top_p=s.top_p, max_new_tokens=s.max_new_tokens, seed=s.seed,
                         device=s.device)
    result = evaluate_policy(policy, problems, catalogue, stage=stage or meta.get("stage") or "checkpoint", env=env,
                             settings=s.replace(temperature=None), leak=leak, out_dir=out_dir)
    # the machine that ran the rollouts: another CPU's kernels can change a sampled token (float rounding)
    result.config.update(checkpoint=str(path), checkpoint_version=meta.get("version"), top_p=s.top_p,
                         sample_temperature=temperature, max_new_tokens=s.max_new_tokens,
                         machine=machine_signature()["key"])
    if out_dir is not None:
        result.save(out_dir)
    return result


class ScriptedBaseline:
    """An arena scripted miner kind (``arena.population.make_policy``) as a Policy over many problems.

    The scripted agents are per problem; a fresh one starts with every new conversation. Run
    with ``workers=1`` (the default): one conversation per problem at a time.
    """

    def __init__(self, kind: str, problems: Sequence[dict], *, skill: float = 1.0, seed: int = 0) -> None:
        self.kind = kind
        self.skill = skill
        self.seed = seed
        self.name = f"scripted:{kind}"
        self._problems = {p["problem_id"]: p for p in problems}
        self._agents: dict[str, Any] = {}

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]):
        from oro_assets.arena.population import make_policy

        pid = problem_view["problem_id"]
        if len(messages) <= 2 or pid not in self._agents:
            self._agents[pid] = make_policy(self.kind, self._problems[pid], skill=self.skill, seed=self.seed)
        return self._agents[pid].act(problem_view, messages, tools)


def evaluate_scripted(kind: str, problems: Sequence[dict], catalogue: Any, *, skill: float = 1.0, n: int = 8,
                      seed: int = 0, greedy: bool = False, **kwargs: Any) -> EvalResult:
    """A scripted baseline through the same path: ``n`` runs seeded ``seed+1 .. seed+n``.

    Scripted agents have no temperature, so by default there is no 'greedy' run and the ASR is
    the mean over the seeded runs (``greedy=True`` adds the seed-``seed`` run as the ASR basis).
    """
    base = ScriptedBaseline(kind, problems, skill=skill, seed=seed)
    return evaluate_policy(
        base, problems, catalogue, stage=kwargs.pop("stage", f"scripted:{kind}"), n=n, seed=seed, greedy=greedy,
        policy_factory=lambda s: ScriptedBaseline(kind, problems, skill=skill, seed=seed + 1 + s), **kwargs,
    )


# ------------------------------------------------------------------------------- comparison report
@dataclass
class Report:
    stages: list[str]
    markdown: str
    markdown_path: Path
    summary_path: Path
    plots: dict[str, Path]
    metrics: dict[str, dict[str, Any]]
    results_table: str = ""               # the headline table (:func:`results_table`), markdown
    results_path: Path | None = None      # ... written as eval_results.md

    def artifact_paths(self) -> list[Path]:
        extra = [self.results_path] if self.results_path is not None else []
        return [self.markdown_path, self.summary_path, *extra, *self.plots.values()]

    def markdown_with_inline_plots(self) -> str:
        """The markdown with the PNGs embedded as data URIs (renders in the Dagster UI metadata)."""
        import base64

        md = self.markdown
        for path in self.plots.values():
            data = base64.b64encode(path.read_bytes()).decode()
            md = md.replace(f"]({path.name})", f"](data:image/png;base64,{data})")
        return md

    def metadata(self) -> dict[str, Any]:
        """Plain values for asset metadata (the caller wraps them in its framework's types)."""
        flat: dict[str, Any] = {}
        for s in self.stages:
            m = self.metrics[s]
            flat[f"asr/{s}"] = round(float(m.get("asr") or 0.0), 4)
            if m.get("pass_at_1") is not None:
                flat[f"pass_at_1/{s}"] = round(float(m["pass_at_1"]), 4)
            if m.get("pass_at_8") is not None:
                flat[f"pass_at_8/{s}"] = round(float(m["pass_at_8"]), 4)
        return {"report_markdown": self.markdown_with_inline_plots(), "report_path": str(self.markdown_path),
                "summary_path": str(self.summary_path), "plots": {k: str(v) for k, v in self.plots.items()},
                "results_table": self.results_table, "headline": flat}


def _breakdown_table(title: str, key: str, stages: Sequence[str], metrics: Mapping[str, Any]) -> list[str]:
    """Markdown lines of one ASR breakdown (per category or difficulty), stages as rows; none if empty."""
    groups = sorted({g for s in stages for g in (metrics[s].get(key) or {})})
    if not groups:
        return []
    lines = [f"## {title}", "", "| stage | " + " | ".join(groups) + " |", "|" + "---|" * (len(groups) + 1)]
    for s in stages:
        by = metrics[s].get(key) or {}
        cells = [f"{_pct(by[g]['asr'])} (n={by[g]['n_problems']})" if g in by else "-" for g in groups]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return lines + [""]


def _pct(x: Any, digits: int = 1) -> str:
    return "-" if x is None else f"{100.0 * float(x):.{digits}f}"


def _num(x: Any, digits: int = 2) -> str:
    return "-" if x is None else f"{float(x):.{digits}f}"


def _ordered(stages: Sequence[str]) -> list[str]:
    known = [s for s in STAGE_ORDER if s in stages]
    return known + [s for s in stages if s not in STAGE_ORDER]


def _metrics_of(value: EvalResult | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(value, EvalResult):
        return value.metrics
    if "metrics" in value and isinstance(value["metrics"], Mapping):
        return dict(value["metrics"])
    return dict(value)


def _pct_ci(rate: Any, ci: Any) -> str:
    """``"40.0% (23.4–59.3)"``: a rate and its 95% interval in percent, one decimal."""
    if rate is None:
        return "–"
    lo, hi = (list(ci) + [None, None])[:2] if ci else (None, None)
    text = f"{100.0 * float(rate):.1f}%"
    return text if lo is None or hi is None else f"{text} ({100.0 * float(lo):.1f}–{100.0 * float(hi):.1f})"


def _pct_cell(x: Any) -> str:
    return "–" if x is None else f"{100.0 * float(x):.1f}%"


# Under an eval's out dir: the greedy run on every hold-out problem of the chosen categories (eval assets' config).
HOLDOUT_GREEDY_DIR = "holdout_greedy"


def results_table(stages: Sequence[str], metrics: Mapping[str, Mapping[str, Any]]) -> str:
    """The headline table, markdown: per stage ASR overall and per category with 95% Wilson
    intervals, pass@1 and pass@8, in percent with one decimal (``40.0% (23.4–59.3)``). A column's
    problem count is in its header when every stage has the same, else in the cell."""
    categories = sorted({c for s in stages for c in (metrics[s].get("by_category") or {})})

    def sizes(get) -> set:
        return {get(metrics[s]) for s in stages if get(metrics[s]) is not None}

    def head(label: str, ns: set) -> str:
        return f"{label} (n={next(iter(ns))})" if len(ns) == 1 else label

    all_n = sizes(lambda m: m.get("n_problems"))
    cat_n = {c: sizes(lambda m, c=c: ((m.get("by_category") or {}).get(c) or {}).get("n_problems")) for c in categories}
    holdout = sorted({c for s in stages for c in (metrics[s].get("holdout_greedy") or {})})
    hold_n = {c: sizes(lambda m, c=c: ((m.get("holdout_greedy") or {}).get(c) or {}).get("n_problems")) for c in holdout}
    header = ["stage", head("all", all_n), *(head(c, cat_n[c]) for c in categories),
              *(head(f"{c}, every hold-out problem, greedy", hold_n[c]) for c in holdout), "pass@1", "pass@8"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in stages:
        m = metrics[s]
        cell = _pct_ci(m.get("asr"), m.get("asr_ci")) + ("" if len(all_n) == 1 else f" n={m.get('n_problems')}")
        cells = [s, cell]
        for c in categories:
            b = (m.get("by_category") or {}).get(c)
            if not b:
                cells.append("–")
                continue
            cells.append(_pct_ci(b.get("asr"), b.get("asr_ci")) + ("" if len(cat_n[c]) == 1 else f" n={b.get('n_problems')}"))
        for c in holdout:
            b = (m.get("holdout_greedy") or {}).get(c)
            cells.append(_pct_ci(b.get("asr"), b.get("asr_ci")) + ("" if len(hold_n[c]) == 1 else f" n={b.get('n_problems')}")
                         if b else "–")
        cells += [_pct_cell(m.get("pass_at_1")), _pct_cell(m.get("pass_at_8"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def outcome_table(stages: Sequence[str], metrics: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Markdown lines: what the runs of each stage came to (``outcome_counts``); none if no stage has them."""
    from oro_assets.evaluation.rollout import OUTCOMES

    seen = {o for s in stages for o in (metrics[s].get("outcome_counts") or {})}
    if not seen:
        return []
    cols = [o for o in OUTCOMES if o in seen] + sorted(seen - set(OUTCOMES))
    lines = ["## Run outcomes (all runs: samples + greedy)", "",
             "`no_tool_call`: the model answered without calling any tool (the arena's status says `success`).", "",
             "| stage | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for s in stages:
        oc = metrics[s].get("outcome_counts") or {}
        lines.append(f"| {s} | " + " | ".join(str(oc.get(o, 0)) for o in cols) + " |")
    return lines + [""]


def item_table(stages: Sequence[str], metrics: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Markdown lines: how far each stage's multi-item answers get (``items_by_category``), Shop and Voucher
    rows; none when no stage has them (results from before the breakdown existed)."""
    rows = [(s, cat, b) for s in stages for cat, b in sorted((metrics[s].get("items_by_category") or {}).items())
            if cat in ("Shop", "Voucher")]
    if not rows:
        return []
    width = max(len(b["met_by_position"]) for _, _, b in rows)
    lines = ["## Multi-item problems (all runs: samples + greedy)", "",
             "Share of runs that recommend as many products as asked, that meet each asked item in full (the i-th "
             "recommendation against the i-th item), every item, and the category's condition (Shop: one shop; "
             "Voucher: the budget).", "",
             "| stage | category | runs | right count % | " + " | ".join(f"item {i + 1} %" for i in range(width))
             + " | all items % | shop / budget % |", "|" + "---|" * (width + 6)]
    for s, cat, b in rows:
        met = [_pct(x) for x in b["met_by_position"]] + ["-"] * (width - len(b["met_by_position"]))
        lines.append(f"| {s} | {cat} | {b['runs']} | {_pct(b['right_count'])} | " + " | ".join(met)
                     + f" | {_pct(b['all_met'])} | {_pct(b['condition'])} |")
    return lines + [""]


def comparison_markdown(stages: Sequence[str], metrics: Mapping[str, Mapping[str, Any]],
                        references: Sequence[Mapping[str, Any]] = PUBLISHED, title: str = "Evaluation report") -> str:
    lines = [f"# {title}", ""]
    if metrics:
        sizes = sorted({int(metrics[s].get("n_problems") or 0) for s in stages})
        size_txt = (f"{sizes[0]} hold-out problems (1 problem = {100.0 / sizes[0]:.2f} points)"
                    if len(sizes) == 1 and sizes[0] else "hold-out problems (count per stage: solved / n)")
        lines += [f"Measured here: production-strict ASR on {size_txt}. ASR basis: the greedy run per problem "
                  "(`mean_over_samples` rows: mean success of the sampled runs); 95% Wilson interval; "
                  "pass@k = unbiased estimator 1 - C(n-c,k)/C(n,k) over the sampled runs, averaged over problems.",
                  ""]
        bases = {s: metrics[s].get("asr_basis") for s in stages if metrics[s].get("asr_basis") != "greedy"}
        if bases:
            lines += ["ASR basis mean over samples for: " + ", ".join(sorted(bases)) + ".", ""]
    if metrics:
        lines += ["## Results", "", "ASR (95% Wilson interval), overall and per category; pass@k over the sampled runs.",
                  "", results_table(stages, metrics), "## All metrics", ""]
    header = ("| stage | ASR % | 95% CI | solved / n | pass@1 % | pass@8 % | GT rate % | mean rule | format | "
              "steps | views | halluc. % | source |")
    lines += [header, "|" + "---|" * 13]
    for s in stages:
        m = metrics[s]
        lo, hi = m.get("asr_ci") or [None, None]
        proc = m.get("process") or {}
        solved = m.get("solved")
        solved_txt = f"{solved:g} / {m.get('n_problems')}" if solved is not None else "-"
        lines.append(
            f"| {s} | {_pct(m.get('asr'))} | {_pct(lo)}-{_pct(hi)} | {solved_txt} | {_pct(m.get('pass_at_1'))} | "
            f"{_pct(m.get('pass_at_8'))} | {_pct(m.get('gt_rate'))} | {_num(m.get('mean_rule'))} | "
            f"{_num(m.get('format'))} | {_num(proc.get('mean_steps'), 1)} | {_num(proc.get('mean_views'), 1)} | "
            f"{_pct(proc.get('hallucination_rate'))} | measured |"
        )
    for ref in references:
        lines.append(
            f"| *{ref['label']}* | *{_pct(ref.get('asr'))}* | - | - | *{_pct(ref.get('pass_at_1'))}* | "
            f"*{_pct(ref.get('pass_at_8'))}* | - | - | - | - | - | - | **{PUBLISHED_NOTE}** |"
        )
    lines += ["", f"Rows in italics are the paper's numbers (Qwen3-4B, 75-problem hold-out): {PUBLISHED_NOTE}; "
              "they are a reference scale, not a comparison on the same problems or model size.", ""]
    lines += _breakdown_table("ASR % by category", "by_category", stages, metrics)
    lines += _breakdown_table("ASR % by difficulty", "by_difficulty", stages, metrics)
    ks = sorted({int(k) for s in stages for k in (metrics[s].get("pass_at_k") or {})})
    if ks:
        lines += ["## pass@k %", "", "| stage | " + " | ".join(f"k={k}" for k in ks) + " |", "|" + "---|" * (len(ks) + 1)]
        for s in stages:
            pk = metrics[s].get("pass_at_k") or {}
            lines.append(f"| {s} | " + " | ".join(_pct(pk.get(str(k))) for k in ks) + " |")
        lines.append("")
    lines += outcome_table(stages, metrics)
    lines += item_table(stages, metrics)
    return "\n".join(lines)


def _machines(results_by_stage: Mapping[str, EvalResult | Mapping[str, Any]]) -> dict[str, str]:
    """Each stage's evaluation machine (``config.machine``, ``oro_assets.machine.machine_key``), where recorded."""
    out = {}
    for stage, r in results_by_stage.items():
        config = r.config if isinstance(r, EvalResult) else (r.get("config") or {})
        if config.get("machine"):
            out[stage] = str(config["machine"])
    return out


def _machine_note(stages: Sequence[str], machines: Mapping[str, str]) -> str:
    """The report's line on where it was measured: another CPU's kernels can change a sampled token (float rounding),
    so figures from two machines are two samples, not one comparison."""
    if not machines:
        return ""
    if len(set(machines.values())) == 1:
        return f"\nMeasured on one machine: {next(iter(machines.values()))}.\n"
    rows = "\n".join(f"| {s} | {machines[s]} |" for s in stages if s in machines)
    return ("\n## Machines\n\nThe stages were evaluated on different machines; another CPU's kernels can change a "
            "sampled token, so compare stages measured on one machine.\n\n| stage | machine |\n|---|---|\n" + rows + "\n")


def build_comparison_report(results_by_stage: Mapping[str, EvalResult | Mapping[str, Any]], out_dir: str | Path, *,
                            references: Sequence[Mapping[str, Any]] = PUBLISHED,
                            title: str = "Evaluation report") -> Report:
    """Markdown table + PNG plots + JSON summary of the stages side by side, under ``out_dir``."""
    if not results_by_stage:
        raise ValueError("no evaluation results to compare")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stages = _ordered(list(results_by_stage))
    metrics = {s: _metrics_of(results_by_stage[s]) for s in stages}
    md = comparison_markdown(stages, metrics, references, title)
    plots = {
        "asr": plot_asr(stages, metrics, out / "asr_per_stage.png",
                        references={r["label"]: r["asr"] for r in references if r.get("asr") is not None}),
        "pass_at_k": plot_pass_at_k(stages, metrics, out / "pass_at_k.png"),
    }
    machines = _machines(results_by_stage)
    md += _machine_note(stages, machines)
    md += "\n![ASR per stage](asr_per_stage.png)\n\n![pass@k](pass_at_k.png)\n"
    md_path = out / "eval_report.md"
    _write_text(md_path, md)
    table = results_table(stages, metrics)
    results_path = out / "eval_results.md"
    _write_text(results_path, f"# {title}: results\n\n" + table)
    summary = {
        "stages": stages,
        "metrics": metrics,
        "published_reference": {"note": PUBLISHED_NOTE, "rows": list(references)},
        "runs": {s: {"run_id": r.run_id, "trajectories": r.trajectories_path, "checks": r.checks}
                 for s, r in results_by_stage.items() if isinstance(r, EvalResult)},
        "machines": machines,
    }
    summary_path = out / "eval_report.json"
    _write_text(summary_path, jsonio.dumps_pretty(summary))
    return Report(stages=stages, markdown=md, markdown_path=md_path, summary_path=summary_path, plots=plots,
                  metrics=metrics, results_table=table, results_path=results_path)


def log_report_to_mlflow(report: Report, tracking_uri: str, *, artifact_dir: str | Path | None = None,
                         experiment: str = EXPERIMENT, run_name: str = "eval_report",
                         tags: Mapping[str, str] | None = None) -> str:
    """One MLflow run with per-stage headline metrics and the report files as artifacts (the report,
    its JSON summary, the results table ``eval_results.md`` and the PNG plots); returns the run id."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        location = None
        if artifact_dir is not None:
            Path(artifact_dir).mkdir(parents=True, exist_ok=True)
            location = Path(artifact_dir).resolve().as_uri()
        exp_id = client.create_experiment(experiment, artifact_location=location)
    else:
        exp_id = exp.experiment_id
    run = client.create_run(exp_id, run_name=run_name, tags={"kind": "eval_report", **dict(tags or {})})
    run_id = run.info.run_id
    batch = []
    for s in report.stages:
        m = report.metrics[s]
        key = s.replace(":", "_").replace("@", "_")
        for name in ("asr", "gt_rate", "mean_rule", "pass_at_1", "pass_at_8"):
            if m.get(name) is not None:
                batch.append(Metric(f"{key}.{name}", float(m[name]), 0, 0))
        lo, hi = m.get("asr_ci") or (None, None)
        if lo is not None:
            batch += [Metric(f"{key}.asr_ci_low", float(lo), 0, 0), Metric(f"{key}.asr_ci_high", float(hi), 0, 0)]
        for outcome, count in (m.get("outcome_counts") or {}).items():
            batch.append(Metric(f"{key}.runs_{outcome}", float(count), 0, 0))
    for i in range(0, len(batch), 500):
        client.log_batch(run_id, metrics=batch[i:i + 500])
    for path in report.artifact_paths():
        client.log_artifact(run_id, str(path))
    client.set_terminated(run_id)
    return run_id
