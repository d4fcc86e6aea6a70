"""Screen a stage's recipe on a world's dev pool, and compare two evaluations problem by problem.

    ORO_DATA_DIR=<main data dir> .venv/bin/python benchmarks/screen.py sft --name every_shape \
        --set row_shapes=null --set multi_item_drills=0.25 [--profile-set length_grouped=true] --out /tmp/screens
    ORO_DATA_DIR=<main data dir> .venv/bin/python benchmarks/screen.py stage kto --name on_policy \
        --set on_policy_k=8 --set curated_turns=false --out /tmp/screens
    ORO_DATA_DIR=<main data dir> .venv/bin/python benchmarks/screen.py eval teacher_sft --out /tmp/screens
    ORO_DATA_DIR=<main data dir> .venv/bin/python benchmarks/screen.py extrapolate <kto ckpt> <dr_grpo ckpt> 2.0 \
        --name expo2 --out /tmp/screens
    .venv/bin/python benchmarks/screen.py compare /tmp/screens/eval_product_only /tmp/screens/eval_every_shape
    .venv/bin/python benchmarks/screen.py items /tmp/screens/eval_product_only /tmp/screens/eval_every_shape
    ORO_DATA_DIR=<main data dir> .venv/bin/python benchmarks/screen.py copies <checkpoint dir> ...

``stage`` trains any later stage of the chain from the data dir's checkpoint of its parent (``--parent`` another
stage's, or a checkpoint directory such as another screen's), with the same parameters the stage's asset passes,
``--set`` overrides of its config, then the dev eval;
``eval`` evaluates the data dir's checkpoint of a stage the same way (the parent to compare with);
``extrapolate`` writes a copy of a stage's checkpoint moved ``alpha`` times along its update from its parent (the
stages' ``extrapolate`` knob, ExPO) and evaluates it the same way.

``sft`` trains the profile's sft stage (warm-up included) from the data dir's ``base`` checkpoint on its curated
``sft_dataset``, with ``--set`` overrides of the stage config (JSON values), then evaluates it with ``oro-assets
eval --pool dev`` (every dev problem: greedy plus 8 samples at T 0.7). A screen reads the ``dev`` pool only: what
it chooses is confirmed on unseen worlds (``benchmarks/days.py``). ``compare`` pairs two evaluations of the same
problems: greedy success and pass@1 per category, the paired change with a 95% bootstrap interval over problems
(one world: the interval counts problems only, not training seeds). ``items`` counts, over every run of an
evaluation (greedy and samples), what a request for several products gets: a plan for item 2, a second search, a
recommendation naming as many products as asked, the voucher checked; ``items --by-count`` splits the greedy runs
by how many products they ask for (successes, and how many products each run recommended). ``copies`` runs the
training assets' ``copies_request_words`` check on checkpoints, with the data dir's world catalogue.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from report import tree_env  # noqa: E402

CATEGORIES = ("all", "Product", "Shop", "Voucher")


def _overrides(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        parsed = json.loads(value)
        out[key] = tuple(parsed) if isinstance(parsed, list) else parsed
    return out


def screen_sft(name: str, overrides: dict, out: Path, seed: int, profile_overrides: dict | None = None) -> Path:
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.settings import load_settings
    from oro_assets.training.checkpoints import current_checkpoint
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.stages.sft import run_sft

    settings = load_settings()
    layout = settings.layout
    profile = with_overrides(get_profile(settings.model_profile, settings), "sft", **overrides)
    profile = dataclasses.replace(profile, **(profile_overrides or {}))
    started = time.monotonic()
    result = run_sft(profile, layout.dataset("sft_dataset", ".jsonl"), current_checkpoint(layout.checkpoints, "base"),
                     out / f"ck_{name}", catalogue=Catalogue.from_jsonl(layout.world_catalogue), seed=seed)
    print(f"sft {name}: {time.monotonic() - started:.0f} s -> {result.path}", flush=True)
    return _dev_eval(result.path, out / f"eval_{name}")


def screen_warmups(overrides: dict, out: Path, seeds: list[int]) -> list[dict]:
    """The sft stage's warm-up alone (no sft, no evaluation) at each training seed: its tail loss and extra epochs,
    the cheap first sign of a copy that did not form (session 31)."""
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.settings import load_settings
    from oro_assets.training.checkpoints import current_checkpoint
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.stages.sft import WarmupStalledError, curated_sft_rows, run_warmup

    settings = load_settings()
    layout = settings.layout
    profile = with_overrides(get_profile(settings.model_profile, settings), "sft", **overrides)
    _, _, vocab = curated_sft_rows(profile, layout.dataset("sft_dataset", ".jsonl"))
    catalogue = Catalogue.from_jsonl(layout.world_catalogue)
    results = []
    for seed in seeds:
        started = time.monotonic()
        try:
            warm, extra = run_warmup(profile, catalogue, current_checkpoint(layout.checkpoints, "base"),
                                     out / f"warmup_seed{seed}", vocab, seed=seed)
        except WarmupStalledError as stalled:  # a stalled seed is a screen's finding, not its end
            results.append({"seed": seed, "stalled": str(stalled), "seconds": round(time.monotonic() - started)})
        else:
            results.append({"seed": seed, **extra, "seconds": round(time.monotonic() - started),
                            "checkpoint": str(warm.path)})
        print(json.dumps(results[-1]), flush=True)
    return results


def _dev_eval(checkpoint: Path, eval_dir: Path) -> Path:
    from oro_assets.settings import load_settings

    layout = load_settings().layout
    subprocess.run([str(Path(sys.executable).with_name("oro-assets")), "eval", "--checkpoint", str(checkpoint),
                    "--problems", str(layout.dataset("eval_problems", ".jsonl")), "--pool", "dev",
                    "--out", str(eval_dir)], check=True, env=tree_env(ROOT))
    return eval_dir


def extrapolate_checkpoint(parent: Path, child: Path, alpha: float, out: Path) -> Path:
    """A copy of checkpoint ``child`` whose weights are ``parent + alpha x (child - parent)``, made by the function the
    stages' ``extrapolate`` runs (``stages.common.extrapolate_weights``), for a dev eval of the same stage saved
    further along its update without training it again (full-weight checkpoints: the tiny profile)."""
    import shutil

    from oro_assets import jsonio
    from oro_assets.training.checkpoints import load_model_and_tokenizer, model_path
    from oro_assets.training.stages.common import extrapolate_weights, trainable_snapshot

    if (model_path(child) / "adapter_config.json").exists():
        raise SystemExit(f"{child}: a LoRA adapter; train the stage with --set extrapolate=... instead")
    start = trainable_snapshot(load_model_and_tokenizer(parent)[0])
    model, _ = load_model_and_tokenizer(child)
    norms = extrapolate_weights(model, start, alpha)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(child, out)
    model.save_pretrained(model_path(out))
    metrics_file = out / "metrics.json"  # the copy's metrics say what was done to it, as a trained stage's would
    if metrics_file.is_file():
        metrics = jsonio.loads_lenient(metrics_file.read_text())
        metrics.update(extrapolate=alpha, extrapolated_norm=list(norms))
        metrics_file.write_text(jsonio.dumps_pretty(metrics))
    print(json.dumps({"checkpoint": str(out), "alpha": alpha, "update_norm": [round(n, 6) for n in norms]}))
    return out


def screen_stage(stage: str, name: str, overrides: dict, out: Path, seed: int, parent: str | None = None) -> Path:
    """Train ``stage`` with ``overrides`` from the data dir's checkpoint of ``parent`` (default: its declared
    parent) with the parameters its asset passes, then evaluate it on the dev pool."""
    from oro_assets.settings import load_settings
    from oro_assets.training.chain import stage_named
    from oro_assets.training.checkpoints import current_checkpoint
    from oro_assets.training.data import load_rows
    from oro_assets.training.pipes_entry import run_stage

    layout = load_settings().layout
    parent = parent or stage_named(stage).parent
    parent_path = Path(parent) if Path(parent).is_dir() else current_checkpoint(layout.checkpoints, parent)
    heldout = load_rows(layout.heldout_problems)
    params = {"stage": stage, "profile": load_settings().model_profile, "out_root": str(out / f"ck_{name}"),
              "catalogue": str(layout.world_catalogue), "problems": str(layout.train_problems),
              "sft_rows": str(layout.dataset("sft_dataset")), "kto_rows": str(layout.dataset("kto_dataset")),
              "rl_prompts": str(layout.dataset("rl_prompts")), "eval_problems": str(layout.heldout_problems),
              "exclude_product_ids": sorted({str(i) for p in heldout for i in (p.get("ground_truth_ids") or [])}),
              "seed": seed, "overrides": overrides,
              "parent": str(parent_path)}
    started = time.monotonic()
    summary = run_stage(params)
    print(f"{stage} {name}: {time.monotonic() - started:.0f} s -> {summary['path']}", flush=True)
    return _dev_eval(Path(summary["path"]), out / f"eval_{name}")


def _outcomes(eval_dir: Path) -> tuple[dict[str, float], dict[str, float], dict[str, str], str]:
    from oro_assets.evaluation.report import EvalResult

    result = EvalResult.load(eval_dir / "eval_result.json")
    greedy = {str(r["problem_id"]): float(bool(r.get("greedy_success"))) for r in result.rows}
    pass1 = {str(r["problem_id"]): int(r["c"]) / int(r["n"]) for r in result.rows if r.get("n")}
    category = {str(r["problem_id"]): str(r.get("category")) for r in result.rows}
    return greedy, pass1, category, str(result.config.get("pool"))


def compare(before: Path, after: Path) -> list[dict]:
    from oro_assets.evaluation.worlds import clustered_interval

    g0, p0, cat, pool0 = _outcomes(before)
    g1, p1, _, pool1 = _outcomes(after)
    if pool0 != pool1:
        raise SystemExit(f"the two evaluations read different pools ({pool0}, {pool1}): not comparable")
    rows = []
    for name in CATEGORIES:
        for metric, a, b in (("greedy", g0, g1), ("pass@1", p0, p1)):
            ids = sorted(p for p in set(a) & set(b) if name == "all" or cat[p] == name)
            if not ids:
                continue
            delta, low, high = clustered_interval([[b[p] - a[p] for p in ids]])
            rows.append({"category": name, "metric": metric, "n": len(ids),
                         "before": 100 * sum(a[p] for p in ids) / len(ids),
                         "after": 100 * sum(b[p] for p in ids) / len(ids),
                         "delta": 100 * delta, "low": 100 * low, "high": 100 * high})
    return rows


_ORDINALS = ("first", "second", "third", "fourth")


def asked_items(query: str) -> int:
    """How many products a request asks for: a Shop request numbers them ("First, a ... Second, a ..."), the
    others join them with "and also a" (the arena's wording, whatever its case and spacing)."""
    q = query.lower()
    numbered = sum(1 for word in _ORDINALS if re.search(rf"\b{word}\s*,", q))
    return numbered or len(re.findall(r"\band\s+also\s+a\b", q)) + 1


def item_words(query: str) -> list[set[str]]:
    """The words of each item's clause of a request for several products (the request's first paragraph split at
    its ordinals or at "and also"), lower-cased."""
    return [set(words) for words in _clause_words(query)]


def _clause_words(query: str) -> list[list[str]]:
    """The words, in order, of each item's clause of a request (its first paragraph split at its ordinals or at
    "and also"), lower-cased."""
    q = query.lower().split("\n\n")[0]
    if any(re.search(rf"\b{word}\s*,", q) for word in _ORDINALS):
        clauses = re.split(r"\b(?:" + "|".join(_ORDINALS) + r")\s*,", q)[1:]
    else:
        clauses = re.split(r"\band\s+also\b", q)
    return [re.findall(r"[a-z0-9]+", c) for c in clauses]


def item_names(query: str) -> list[str | None]:
    """Each item clause's first word after its article ("a kovi dry dog bed" -> "kovi": the arena's requests name
    the brand first), None where a clause has no article."""
    return [_named(words) for words in _clause_words(query)]


def _named(words: list[str]) -> str | None:
    at = next((i for i, w in enumerate(words) if w in ("a", "an")), None)
    return words[at + 1] if at is not None and at + 1 < len(words) else None


def _runs(eval_dir: Path) -> Iterator[dict]:
    with open(eval_dir / "trajectories.jsonl", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def _completions(run: dict) -> list[dict]:
    return [d["completion"] for d in run.get("dialogue") or [] if d.get("completion")]


def _calls(completions: list[dict]) -> list[dict]:
    return [c for comp in completions for c in (comp.get("message") or {}).get("tool_call") or []]


def _parameters(call: dict) -> dict:
    """A call's parameters, or {} where the model wrote them as something other than an object (a JSON string)."""
    parameters = call.get("parameters")
    return parameters if isinstance(parameters, dict) else {}


def _recommended(calls: list[dict]) -> int | None:
    """How many products the run's first recommendation names (ORO's id parsing), None where it made none."""
    from oro_assets.arena.scoring import split_ids

    first = next((c for c in calls if c.get("name") == "recommend_product"), None)
    return None if first is None else len(split_ids(_parameters(first).get("product_ids")))


def item_behaviour(eval_dir: Path) -> list[dict]:
    """Per category, over every run of an evaluation: runs, those asking for several products, and of these the
    runs that plan item 2, search twice, copy item 2 (the second search's first word is a word of the request's
    item-2 clause), recommend as many products as asked, call the voucher check; over every run, those whose first
    search names item 1 (its words hold the word after item 1's article: the brand); successes."""
    rows: dict[str, dict] = {}
    for run in _runs(eval_dir):
        counts = rows.setdefault(str(run.get("category")), {
            "category": str(run.get("category")), "runs": 0, "several": 0, "item2_plan": 0, "two_searches": 0,
            "item2_copied": 0, "right_count": 0, "voucher_check": 0, "item1_named": 0, "success": 0})
        counts["runs"] += 1
        counts["success"] += bool((run.get("score") or {}).get("success"))
        completions = _completions(run)
        calls = _calls(completions)
        counts["voucher_check"] += any(c.get("name") == "calculate_voucher" for c in calls)
        searches = [str(_parameters(c).get("q") or "") for c in calls if c.get("name") == "find_product"]
        query = str(run.get("query", ""))
        clause_words = _clause_words(query)
        first = re.findall(r"[a-z0-9]+", searches[0].lower()) if searches else []
        counts["item1_named"] += bool(clause_words) and _named(clause_words[0]) in first
        asked = asked_items(query)
        if asked < 2:
            continue
        counts["several"] += 1
        text = " ".join(str(comp.get("content") or "") for comp in completions).lower()
        counts["item2_plan"] += bool(re.search(r"item 2( of \d+)?:", text))
        counts["two_searches"] += len(searches) >= 2
        clauses = [set(words) for words in clause_words]
        second = re.findall(r"[a-z0-9]+", searches[1].lower()) if len(searches) >= 2 else []
        counts["item2_copied"] += bool(second) and len(clauses) >= 2 and second[0] in clauses[1]
        counts["right_count"] += _recommended(calls) == asked
    return [rows[c] for c in sorted(rows)]


def count_behaviour(eval_dir: Path, greedy_only: bool = True) -> list[dict]:
    """Per category and number of products asked, over an evaluation's greedy runs (or every run): runs,
    successes, and how many products the runs recommended (0 where they recommended nothing)."""
    rows: dict[tuple[str, int], dict] = {}
    for run in _runs(eval_dir):
        if greedy_only and run.get("eval_sample") != "greedy":
            continue
        key = (str(run.get("category")), asked_items(str(run.get("query", ""))))
        counts = rows.setdefault(key, {"category": key[0], "asked": key[1], "runs": 0, "success": 0,
                                       "recommended": {}})
        counts["runs"] += 1
        counts["success"] += bool((run.get("score") or {}).get("success"))
        named = _recommended(_calls(_completions(run))) or 0
        counts["recommended"][named] = counts["recommended"].get(named, 0) + 1
    return [rows[k] for k in sorted(rows)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sft", help="train the sft stage with overrides from the data dir's base, then the dev eval")
    s.add_argument("--name", required=True)
    s.add_argument("--set", action="append", default=[], metavar="FIELD=JSON", help="sft config override")
    s.add_argument("--profile-set", action="append", default=[], metavar="FIELD=JSON",
                   help="model profile override (e.g. length_grouped=true)")
    s.add_argument("--out", type=Path, default=Path("/tmp/oro-screens"))
    s.add_argument("--seed", type=int, default=0)
    w = sub.add_parser("warmup", help="the sft stage's warm-up alone at several training seeds: its tail loss")
    w.add_argument("--set", action="append", default=[], metavar="FIELD=JSON", help="sft config override")
    w.add_argument("--seeds", type=int, nargs="+", default=[0])
    w.add_argument("--out", type=Path, default=Path("/tmp/oro-screens"))
    st = sub.add_parser("stage", help="train a later stage with overrides from the data dir's parent, then dev eval")
    st.add_argument("stage")
    st.add_argument("--name", required=True)
    st.add_argument("--parent", default=None,
                    help="the stage whose checkpoint to start from (default: declared), or a checkpoint directory")
    st.add_argument("--set", action="append", default=[], metavar="FIELD=JSON", help="stage config override")
    st.add_argument("--out", type=Path, default=Path("/tmp/oro-screens"))
    st.add_argument("--seed", type=int, default=0)
    x = sub.add_parser("extrapolate", help="a checkpoint saved alpha times along its stage's update (ExPO), then "
                                           "the dev eval of it")
    x.add_argument("parent", type=Path)
    x.add_argument("child", type=Path)
    x.add_argument("alpha", type=float)
    x.add_argument("--name", required=True)
    x.add_argument("--out", type=Path, default=Path("/tmp/oro-screens"))
    x.add_argument("--no-eval", action="store_true", help="write the checkpoint only")
    e = sub.add_parser("eval", help="the dev eval of the data dir's checkpoint of a stage")
    e.add_argument("stage")
    e.add_argument("--out", type=Path, default=Path("/tmp/oro-screens"))
    c = sub.add_parser("compare", help="paired change of two evaluations of the same problems")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    it = sub.add_parser("items", help="what requests for several products get, per evaluation")
    it.add_argument("evals", type=Path, nargs="+")
    it.add_argument("--by-count", action="store_true",
                    help="greedy runs per number of products asked: successes and how many were recommended")
    cp = sub.add_parser("copies", help="the copies_request_words check on checkpoints (the data dir's catalogue)")
    cp.add_argument("checkpoints", type=Path, nargs="+")
    args = p.parse_args(argv)
    if args.cmd == "copies":
        from oro_assets.arena.catalogue import Catalogue
        from oro_assets.settings import load_settings
        from oro_assets.training.checks import check_copies_request

        catalogue = Catalogue.from_jsonl(load_settings().layout.world_catalogue)
        for checkpoint in args.checkpoints:
            outcome = check_copies_request(checkpoint, catalogue)
            print(f"{checkpoint}  {'pass' if outcome.passed else 'FAIL'}  {outcome.description}")
        return 0
    if args.cmd == "sft":
        print(screen_sft(args.name, _overrides(args.set), args.out, args.seed, _overrides(args.profile_set)))
        return 0
    if args.cmd == "warmup":
        screen_warmups(_overrides(args.set), args.out, args.seeds)
        return 0
    if args.cmd == "stage":
        print(screen_stage(args.stage, args.name, _overrides(args.set), args.out, args.seed, args.parent))
        return 0
    if args.cmd == "extrapolate":
        checkpoint = extrapolate_checkpoint(args.parent, args.child, args.alpha, args.out / f"ck_{args.name}")
        if not args.no_eval:
            print(_dev_eval(checkpoint, args.out / f"eval_{args.name}"))
        return 0
    if args.cmd == "eval":
        from oro_assets.settings import load_settings
        from oro_assets.training.checkpoints import current_checkpoint

        checkpoint = current_checkpoint(load_settings().layout.checkpoints, args.stage)
        print(_dev_eval(Path(checkpoint), args.out / f"eval_{args.stage}"))
        return 0
    if args.cmd == "items" and args.by_count:
        print(f"{'evaluation':24s} {'category':8s} {'asked':>5s} {'runs':>5s} {'success':>7s}  recommended (count: runs)")
        for eval_dir in args.evals:
            for r in count_behaviour(eval_dir):
                hist = ", ".join(f"{k}: {v}" for k, v in sorted(r["recommended"].items()))
                print(f"{eval_dir.name:24s} {r['category']:8s} {r['asked']:5d} {r['runs']:5d} {r['success']:7d}  {hist}")
        return 0
    if args.cmd == "items":
        print(f"{'evaluation':24s} {'category':8s} {'runs':>5s} {'several':>7s} {'item 2 plan':>11s} "
              f"{'2 searches':>10s} {'item 2 copied':>13s} {'right count':>11s} {'voucher':>7s} {'item 1 named':>12s} "
              f"{'success':>7s}")
        for eval_dir in args.evals:
            for r in item_behaviour(eval_dir):
                print(f"{eval_dir.name:24s} {r['category']:8s} {r['runs']:5d} {r['several']:7d} {r['item2_plan']:11d} "
                      f"{r['two_searches']:10d} {r['item2_copied']:13d} {r['right_count']:11d} {r['voucher_check']:7d} "
                      f"{r['item1_named']:12d} {r['success']:7d}")
        return 0
    for r in compare(args.before, args.after):
        print(f"{r['category']:8s} {r['metric']:7s} n={r['n']:4d}  {r['before']:5.1f} -> {r['after']:5.1f}  "
              f"{r['delta']:+5.1f} ({r['low']:+.1f} to {r['high']:+.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
