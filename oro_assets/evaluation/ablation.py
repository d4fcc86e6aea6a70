"""What each curation stage is worth: the same tiny SFT recipe trained on the corpus as it stands
after each stage, scored on the same hold-out.

The arms are cumulative cuts of the train pool, read from what production wrote - the normalised
traces and each record's fate in the trace ledger - so the ablation re-implements no filter:

* ``raw``                every normalised trace of a train-pool problem;
* ``raw_success``        ... whose outcome is a production-strict success (as every SFT row must be);
* ``structural``         ... that the structural filter kept (agentic, not a sub-task or scripted run);
* ``format_grounding``   ... that passed the format and grounding gates;
* ``reasoning``          ... that passed the reasoning gate too;
* ``curated``            ... kept after dedup/ranking and the split: the curated SFT corpus.

Two arms are not cuts of the firehose but say what the curated corpus itself adds to the recipe:

* ``scaffold``                        the recipe's warm-up and made-up drills alone, no curated row: what the
                                      scaffold teaches by itself (the chain's ``scaffold`` arm,
                                      ``training.chain.ARMS``, trained the way the chain trains it);
* ``curated_without_teacher_miner``   the curated corpus without the rows of the population's ``teacher``
                                      miner kind (the scripted agent teacher-SFT also uses).

Every arm is trained on the same number of rows ``N`` (the smallest arm's size, or less), with the
same base checkpoint, tokenizer, view, steps and seeds, and evaluated greedily on the same eval-pool
problems; each seed also draws its own ``N`` rows. The result holds per-seed ASR with 95% Wilson
intervals, the mean and range over seeds, and each arm's make-up by miner kind (from the
simulator's truth file, ``unknown`` for real dumps).
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from oro_assets.evaluation.metrics import wilson_interval
from oro_assets.reasons import ReasonCode, Stage
from oro_assets.training.chain import stage_named

#: The chain's comparison arm trained with no curated row (``sft:scaffold_from_params``: ``run_sft(curated=False)``)
SCAFFOLD = stage_named("scaffold").name

ARMS: tuple[tuple[str, str], ...] = (
    ("raw", "normalised firehose, train pool"),
    ("raw_success", "+ production-strict success"),
    ("structural", "+ structural filter"),
    ("format_grounding", "+ format and grounding gates"),
    ("reasoning", "+ reasoning gate"),
    ("curated", "+ dedup, ranking and split (the curated corpus)"),
)
#: Arms beside the cumulative cuts (not cuts, so not part of N: ``scaffold`` trains no curated row,
#: ``curated_without_teacher_miner`` trains min(N, its size)).
EXTRA_ARMS: tuple[tuple[str, str], ...] = (
    (SCAFFOLD, "warm-up and drills only, no curated row"),
    ("curated_without_teacher_miner", "curated corpus without the teacher miner kind's rows"),
)
CUT_NAMES = tuple(name for name, _ in ARMS)
ARMS = ARMS + EXTRA_ARMS
ARM_NAMES = tuple(name for name, _ in ARMS)
#: The miner kind whose rows come from the same scripted agent teacher-SFT uses.
TEACHER_MINER_KIND = "teacher"
#: The normalised-trace columns the arms read (the SFT row, the problem, the outcome, the make-up).
ARM_COLUMNS = ["trace_id", "partition", "source_file", "line_no", "raw_sha256", "problem_id", "query", "messages",
               "tools", "meta"]
#: Gate rejections that belong to the reasoning gate; every other gate rejection is format/grounding.
REASONING_GATE_REASONS = frozenset({str(ReasonCode.REASONING_BELOW_THRESHOLD), str(ReasonCode.JUDGE_UNAVAILABLE)})


@dataclasses.dataclass(frozen=True)
class Fate:
    """A normalised trace's fate in the ledger: kept, or rejected at ``stage`` for ``reason``."""

    kept: bool
    stage: str | None = None
    reason: str | None = None


def furthest_arm(fate: Fate | None, success: bool | None) -> int:
    """Index in :data:`ARMS` of the last arm a train-pool trace belongs to (arms are cumulative)."""
    if success is not True:
        return 0
    if fate is None:
        return 1
    if fate.kept:
        return 5
    if fate.stage == str(Stage.GATES):
        return 3 if fate.reason in REASONING_GATE_REASONS else 2
    if fate.stage in (str(Stage.INGEST), str(Stage.NORMALIZE), str(Stage.STRUCTURAL)):
        return 1
    return 4  # dedup or split: passed every gate, not in the curated corpus


@dataclasses.dataclass
class Arms:
    """The SFT rows of each arm, and how each was made up."""

    rows: dict[str, list[dict]]
    kinds: dict[str, Counter]
    skipped: Counter  # normalised traces in no arm, by why (eval pool, unknown problem, ...)

    def sizes(self) -> dict[str, int]:
        return {name: len(self.rows.get(name, [])) for name in ARM_NAMES}


def build_arms(normalized: Iterable[dict], fates: Mapping[str, Fate], pool_of: Callable[[dict], str | None],
               success: Callable[[dict], bool | None], kind_of: Callable[[dict], str] = lambda row: "unknown",
               ) -> Arms:
    """Place every normalised trace of a train-pool problem in the arms it belongs to.

    ``fates`` maps trace id -> its ledger fate; ``pool_of`` gives a trace's problem pool (None when its
    problem is not in the leak-cluster registry); ``success`` its production-strict outcome.
    """
    from oro_assets.curation.datasets import hf_row
    from oro_assets.curation.rows import as_rows

    rows: dict[str, dict[str, dict]] = {name: {} for name in ARM_NAMES}
    kinds: dict[str, Counter] = {name: Counter() for name in ARM_NAMES}
    skipped: Counter = Counter()
    for row in as_rows(normalized):
        pool = pool_of(row)
        if pool != "train":
            skipped[f"pool_{pool or 'unknown'}"] += 1
            continue
        example = hf_row(row)
        if not example["messages"]:
            skipped["no_messages"] += 1
            continue
        last = furthest_arm(fates.get(str(row.get("trace_id"))), success(row))
        kind = kind_of(row)
        names = list(CUT_NAMES[: last + 1])
        if CUT_NAMES[last] == "curated" and kind != TEACHER_MINER_KIND:
            names.append("curated_without_teacher_miner")
        for name in names:
            if example["id"] not in rows[name]:  # a line a later day repeats is one example
                rows[name][example["id"]] = example
                kinds[name][kind] += 1
    return Arms({name: [by_id[k] for k in sorted(by_id)] for name, by_id in rows.items()}, kinds, skipped)


def draw_rows(rows: Sequence[dict], n: int, seed: int) -> list[dict]:
    """``n`` rows drawn without replacement, reproducibly per seed."""
    if n > len(rows):
        raise ValueError(f"cannot draw {n} rows from {len(rows)}")
    return sorted(random.Random(seed).sample(list(rows), n), key=lambda r: r["id"])


@dataclasses.dataclass
class ArmResult:
    arm: str
    seed: int
    rows: int
    successes: int
    problems: int
    checkpoint: str
    mlflow_run_id: str | None = None
    rule: float | None = None  # mean rule score (partial credit): moves before ASR does
    format: float | None = None  # share of well-formed turns

    @property
    def asr(self) -> float:
        return self.successes / self.problems if self.problems else 0.0

    @property
    def ci(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.problems)


@dataclasses.dataclass
class AblationResult:
    arms: Arms
    n_rows: int
    seeds: list[int]
    results: list[ArmResult]
    category: str

    def summary(self) -> list[dict[str, Any]]:
        """Per arm: mean and range of ASR over seeds, the pooled 95% Wilson interval, sizes, make-up."""
        out = []
        for name, label in ARMS:
            runs = [r for r in self.results if r.arm == name]
            if not runs:
                continue
            asrs = [r.asr for r in runs]
            rules = [r.rule for r in runs if r.rule is not None]
            formats = [r.format for r in runs if r.format is not None]
            wins, total = sum(r.successes for r in runs), sum(r.problems for r in runs)
            lo, hi = wilson_interval(wins, total)
            out.append({
                "arm": name, "label": label, "available_rows": len(self.arms.rows.get(name, [])),
                "trained_rows": runs[0].rows,
                "asr_mean": sum(asrs) / len(asrs), "asr_min": min(asrs), "asr_max": max(asrs),
                "ci_low": lo, "ci_high": hi, "per_seed": {str(r.seed): r.asr for r in runs},
                "kinds": dict(self.arms.kinds.get(name, Counter()).most_common()),
                "rule_mean": sum(rules) / len(rules) if rules else None,
                "format_mean": sum(formats) / len(formats) if formats else None,
            })
        return out

    def markdown(self) -> str:
        head = (f"| arm | rows available | trained on | {self.category} ASR mean (range) over seeds "
                f"{', '.join(map(str, self.seeds))} | pooled 95% CI | mean rule score | make-up by miner kind |\n"
                "|---|---|---|---|---|---|---|")
        lines = [head]
        for s in self.summary():
            kinds = ", ".join(f"{k} {v}" for k, v in list(s["kinds"].items())[:4])
            lines.append(f"| {s['arm']} ({s['label']}) | {s['available_rows']} | {s['trained_rows']} | "
                         f"{100 * s['asr_mean']:.1f}% ({100 * s['asr_min']:.1f}–{100 * s['asr_max']:.1f}) | "
                         f"{100 * s['ci_low']:.1f}–{100 * s['ci_high']:.1f} | {_fmt(s['rule_mean'])} | {kinds} |")
        return "\n".join(lines)

    def findings(self) -> list[str]:
        """Plain statements of what each stage changed (overlapping pooled intervals are said as such)."""
        rows = {s["arm"]: s for s in self.summary()}
        out = []
        cuts = ARMS[: len(CUT_NAMES)]
        pairs = [*zip(cuts, cuts[1:], strict=False),
                 *(((SCAFFOLD, ""), arm) for arm in ARMS if arm[0] in ("curated", "curated_without_teacher_miner")),
                 (("curated", ""), ("curated_without_teacher_miner", "curated without the teacher miner's rows"))]
        for (prev, _), (name, label) in pairs:
            if prev not in rows or name not in rows:
                continue
            a, b = rows[prev], rows[name]
            delta = 100 * (b["asr_mean"] - a["asr_mean"])
            overlap = not (b["ci_low"] > a["ci_high"] or a["ci_low"] > b["ci_high"])
            verdict = "within noise (intervals overlap)" if overlap else ("a real gain" if delta > 0 else "a real loss")
            out.append(f"{label}: {delta:+.1f} points over {prev} - {verdict}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "n_rows": self.n_rows, "seeds": self.seeds,
                "sizes": self.arms.sizes(), "skipped": dict(self.arms.skipped), "summary": self.summary(),
                "runs": [dataclasses.asdict(r) | {"asr": r.asr, "ci": list(r.ci)} for r in self.results],
                "findings": self.findings()}

    def plot(self, path: Path) -> Path:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = self.summary()
        fig, ax = plt.subplots(figsize=(8, 4))
        xs = range(len(rows))
        means = [100 * r["asr_mean"] for r in rows]
        err = [[m - 100 * r["ci_low"] for m, r in zip(means, rows, strict=True)],
               [100 * r["ci_high"] - m for m, r in zip(means, rows, strict=True)]]
        ax.bar(xs, means, yerr=err, capsize=4, color="#4c78a8")
        for x, r in zip(xs, rows, strict=True):
            ax.scatter([x] * len(r["per_seed"]), [100 * v for v in r["per_seed"].values()], color="black", s=12,
                       zorder=3)
        ax.set_xticks(list(xs), [r["arm"] for r in rows], rotation=20)
        ax.set_ylabel(f"{self.category} ASR (%)")
        ax.set_title(f"Curation ablation: same recipe, N = {self.n_rows} rows per arm (dots: seeds)")
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def run_ablation(arms: Arms, *, base_checkpoint: str | Path, profile: Any, eval_problems: Sequence[dict],
                 catalogue: Any, out_root: str | Path, seeds: Sequence[int] = (0, 1), max_rows: int | None = None,
                 category: str = "Product", tracking: Any = None, arm_names: Sequence[str] = ARM_NAMES,
                 eval_kwargs: Mapping[str, Any] | None = None, log: Callable[[str], None] = print,
                 trained_shapes_only: bool = True) -> AblationResult:
    """Train every arm with the same recipe from ``base_checkpoint`` and evaluate it greedily on
    ``eval_problems`` (all of them eval-pool problems; the checkpoint's manifest is leak-checked)."""
    from oro_assets.evaluation.report import evaluate_checkpoint
    from oro_assets.training.data import sft_training_rows
    from oro_assets.training.profiles import with_overrides
    from oro_assets.training.stages import run_sft
    from oro_assets.training.tracking import Tracking

    tracking = tracking or Tracking.disabled()
    # N counts rows the recipe trains on: an arm's rows of other shapes (the tiny recipe trains Product rows) would
    # otherwise be drawn into N and set aside by SFT, and arms of mostly other shapes would train on fewer rows
    shapes = profile.sft.row_shapes if trained_shapes_only else None
    trainable = {name: sft_training_rows(arms.rows[name], profile.view, shapes=shapes)[0] for name in arm_names}
    cuts = [name for name in arm_names if name in CUT_NAMES] or ["curated"]
    sizes = [len(trainable[name]) if name in trainable else
             len(sft_training_rows(arms.rows[name], profile.view, shapes=shapes)[0]) for name in cuts]
    n_rows = min(sizes) if max_rows is None else min(min(sizes), max_rows)
    if n_rows < 1:
        raise ValueError(f"an arm has no rows to train on: {dict(zip(cuts, sizes, strict=True))}")
    rows_of = {name: 0 if name == SCAFFOLD else min(n_rows, len(trainable[name])) for name in arm_names}
    if any(rows_of[name] < 1 for name in arm_names if name != SCAFFOLD):
        raise ValueError(f"an arm has no rows to train on: {rows_of}")
    problems = [p for p in eval_problems if p.get("category", "Product") == category]
    if not problems:
        raise ValueError(f"no {category} problems to evaluate on")
    results: list[ArmResult] = []
    if getattr(profile.sft, "extend_vocab", False):
        # one tokenizer for every arm (the base's): extending it by each arm's own words would change it per arm
        profile = with_overrides(profile, "sft", extend_vocab=False)
    for seed in seeds:
        seeded = with_overrides(profile, "sft", seed=seed)
        for name in arm_names:
            rows = draw_rows(trainable[name], rows_of[name], seed)
            log(f"ablation: arm {name}, seed {seed}: training on {len(rows)} rows")
            # one out root for every arm: a seed's drill warm-up (the same drills) is trained once and reused, and
            # each arm's checkpoint is its own version (its rows are in the version)
            # the scaffold as the chain trains it (its own checks and checkpoint name), every cut as the sft stage
            scaffold = {"curated": False, "stage": SCAFFOLD} if name == SCAFFOLD else {}
            res = run_sft(seeded, rows, base_checkpoint, Path(out_root), tracking, catalogue=catalogue,
                          seed=seed, log=lambda m: None, **scaffold)
            ev = evaluate_checkpoint(res.path, problems, catalogue, stage=f"ablation_{name}", n=0, greedy=True,
                                     seed=seed, **dict(eval_kwargs or {}))
            wins = round(ev.metrics.get("asr", 0.0) * len(problems))
            log(f"ablation: arm {name}, seed {seed}: {wins}/{len(problems)} {category} problems solved")
            results.append(ArmResult(name, seed, len(rows), wins, len(problems), str(res.path),
                                     res.mlflow_run.get("run_id"), ev.metrics.get("mean_rule"),
                                     ev.metrics.get("format")))
    return AblationResult(arms, n_rows, list(seeds), results, category)


# ----------------------------------------------------------------- the ablation over a data dir (the asset's work)


def ledger_fates(warehouse: Any, partitions: Sequence[str]) -> dict[str, Fate]:
    """trace id -> its fate in the days' trace ledgers."""
    fates: dict[str, Fate] = {}
    for partition in partitions:
        table = warehouse.read("trace_ledger", partition).select(["trace_id", "fate", "stage", "reason"])
        for row in table.to_pylist():
            if row["trace_id"]:
                fates[row["trace_id"]] = Fate(row["fate"] == "kept", row["stage"], row["reason"])
    return fates


def truth_kinds(firehose_root: str | Path, partitions: Sequence[str]) -> dict[str, str]:
    """raw_sha256 -> miner kind from the embedded simulator's truth files (absent for real dumps)."""
    from oro_assets import jsonio

    kinds: dict[str, str] = {}
    for partition in partitions:
        path = Path(firehose_root) / "_truth" / f"{partition}.jsonl"
        if path.exists():
            for line in path.read_bytes().splitlines():
                row = jsonio.loads(line)
                kinds.setdefault(row["raw_sha256"], str(row.get("policy_kind") or "unknown"))
    return kinds


def arms_from_warehouse(warehouse: Any, registry: Any, problems: Sequence[dict], catalogue: Any,
                        firehose_root: str | Path, partitions: Sequence[str]) -> Arms:
    """The arms of the days ``partitions``: their normalised traces (streamed, only the columns the arms read),
    ledger fates, pools (``registry.pool_of``: the one held-out rule; only ``train`` traces make arms),
    production-strict outcomes and miner kinds."""
    from oro_assets.curation.clusters import problem_key
    from oro_assets.curation.datasets import strict_success_fn
    from oro_assets.curation.split import ProblemIndex
    from oro_assets.storage import iter_parquet_batches

    index = ProblemIndex(list(problems))
    strict = strict_success_fn({problem_key(p): p for p in problems}, catalogue)
    kinds = truth_kinds(firehose_root, partitions)

    def keyed(row: dict) -> str:
        return problem_key(index.resolve(row)[0])

    def normalized():
        # streamed, and only what the arms, the pool, the outcome and the make-up read: never a day as dicts
        for partition in partitions:
            for batch in iter_parquet_batches(warehouse.path("normalized_traces", partition), 2000, ARM_COLUMNS):
                yield from batch.to_pylist()

    return build_arms(normalized(), ledger_fates(warehouse, partitions), lambda row: registry.pool_of(keyed(row)),
                      lambda row: strict({**row, "problem_key": keyed(row)}),
                      lambda row: kinds.get(str(row.get("raw_sha256")), "unknown"))


@dataclasses.dataclass
class AblationReport:
    result: AblationResult
    report: dict[str, Any]
    markdown_inline: str  # the table, findings and the plot inlined (for the asset's metadata)
    plot: Path
    mlflow_run_id: str | None


def write_ablation_report(result: AblationResult, out_dir: Path, *, partitions: Sequence[str], eval_problems: int,
                          pool: str, tracking: Any = None) -> AblationReport:
    """``curation_ablation.{json,md,png}`` under ``out_dir``, logged to MLflow when ``tracking`` is given."""
    import base64

    from oro_assets import jsonio

    plot = result.plot(out_dir / "curation_ablation.png")
    report = {**result.to_json(), "partitions": list(partitions), "eval_problems": eval_problems, "pool": pool}
    (out_dir / "curation_ablation.json").write_bytes(jsonio.dumps_bytes(report))
    table = result.markdown()
    findings = "\n".join(f"- {line}" for line in result.findings())
    (out_dir / "curation_ablation.md").write_text(
        f"{table}\n\n{findings}\n\nScored on the `{pool}` pool.\n\n![ablation](curation_ablation.png)\n")
    inline = (f"{table}\n\n{findings}\n\n![ablation](data:image/png;base64,"
              f"{base64.b64encode(plot.read_bytes()).decode()})")
    run_id = log_ablation_to_mlflow(tracking, out_dir, report) if tracking is not None else None
    return AblationReport(result, report, inline, plot, run_id)


def log_ablation_to_mlflow(tracking: Any, out_dir: Path, report: dict) -> str | None:
    from oro_assets import jsonio
    from oro_assets.training.tracking import StageRun

    run = StageRun(tracking, "curation_ablation", jsonio.content_hash(report)[:16],
                   {"n_rows": report["n_rows"], "seeds": report["seeds"]})
    for s in report["summary"]:
        run.log_metrics({f"{s['arm']}_asr_mean": s["asr_mean"], f"{s['arm']}_ci_low": s["ci_low"],
                         f"{s['arm']}_ci_high": s["ci_high"]}, step=0)
    for name in ("curation_ablation.json", "curation_ablation.md", "curation_ablation.png"):
        run.log_artifact(out_dir / name)
    run.finish("FINISHED")
    return run.info.get("run_id")
