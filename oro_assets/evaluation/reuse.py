"""Reusing an evaluation whose inputs are byte-identical: the same weights, view, problems, world and settings.

A stage that changes nothing (Dr. GRPO when every group's rewards tie: zero advantage, zero gradient) writes
a checkpoint whose model files equal its parent's. Rolling it out again would reproduce the parent's
evaluation exactly (greedy decoding and seeded sampling on one thread), so the evaluation asset copies that
result instead and says where it came from. The key is a SHA-256 over everything that shapes the rollouts;
anything not in it (the stage name, the training manifests) is re-checked by the caller, never copied.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.evaluation.report import EvalResult
from oro_assets.locking import file_lock

RESULT_FILE = "eval_result.json"
# What of a checkpoint's own record changes its policy (training/checkpoints.load_policy reads these).
_POLICY_META = ("dtype", "view", "profile")


def _hash_file(digest: Any, path: Path) -> None:
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)


def policy_fingerprint(checkpoint: str | Path) -> str:
    """SHA-256 of what ``load_policy`` turns into a policy: every file under ``model/`` and the view settings."""
    from oro_assets.training.checkpoints import read_meta

    root = Path(checkpoint)
    model_dir = root / "model"
    files = sorted(p for p in model_dir.rglob("*") if p.is_file())
    if not files:
        raise FileNotFoundError(f"checkpoint {root} has no model files under {model_dir}")
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(model_dir)).encode() + b"\0")
        _hash_file(digest, path)
    meta = read_meta(root)
    digest.update(jsonio.stdlib_dumps({k: meta.get(k) for k in _POLICY_META}, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def eval_fingerprint(checkpoint: str | Path, *, settings: Mapping[str, Any], problem_sets: Mapping[str, Sequence[dict]],
                     world_files: Sequence[str | Path], code_version: str) -> str:
    """The key of an evaluation: the policy, the evaluation settings, each problem set as evaluated (whole
    records, in order), the world's files and the evaluation code's version."""
    digest = hashlib.sha256()
    digest.update(policy_fingerprint(checkpoint).encode())
    digest.update(jsonio.stdlib_dumps(dict(settings), sort_keys=True, default=str).encode())
    for name in sorted(problem_sets):
        digest.update(name.encode() + b"\0")
        for problem in problem_sets[name]:
            digest.update(jsonio.stdlib_dumps(problem, sort_keys=True, default=str).encode() + b"\n")
    for path in world_files:
        _hash_file(digest, Path(path))
    digest.update(code_version.encode())
    return digest.hexdigest()


@contextlib.contextmanager
def fingerprint_lock(eval_root: str | Path, fingerprint: str) -> Iterator[None]:
    """Held while one evaluation of ``fingerprint`` runs: a second one with the same inputs (two stages with
    identical weights, evaluated side by side) waits for it and then reuses its result. An OS file lock, so a
    process that dies releases it."""
    with file_lock(Path(eval_root) / ".locks" / f"{fingerprint[:32]}.lock"):
        yield


def find_reusable(eval_root: str | Path, fingerprint: str, *, stage: str) -> Path | None:
    """The result directory of a finished evaluation with this fingerprint: ``stage``'s own earlier one first
    (a re-materialisation of an unchanged checkpoint), else another stage's.

    Only a result that carries the fingerprint counts: it is written last, after every part of the
    evaluation (the sample and the hold-out greedy run) finished."""
    root = Path(eval_root)
    own = root / stage / RESULT_FILE
    for path in [own, *(p for p in sorted(root.glob(f"*/{RESULT_FILE}")) if p != own)]:
        try:
            config = jsonio.loads_lenient(path.read_text()).get("config") or {}
        except (OSError, ValueError):
            continue
        if config.get("fingerprint") == fingerprint:
            return path.parent
    return None


def _relocated(result: EvalResult, source: Path, target: Path, *, stage: str) -> EvalResult:
    def moved(path: str | None) -> str | None:
        if path is None:
            return None
        p = Path(path)
        return str(target / p.relative_to(source)) if p.is_relative_to(source) else path

    result.stage = stage
    result.trajectories_path = moved(result.trajectories_path)
    result.samples_path = moved(result.samples_path)
    return result


def _set_checks(result: EvalResult, checks: Mapping[str, list]) -> None:
    """The caller's leak checks (they depend on its training manifests) beside the result's own pass@k check."""
    result.checks = {**{k: list(v) for k, v in checks.items()},
                     "pass_at_k_monotone": list(result.checks.get("pass_at_k_monotone", []))}


def reuse_result(source: str | Path, out_dir: str | Path, *, stage: str, checkpoint: str | Path,
                 checkpoint_version: str | None, checks: Mapping[str, list]) -> EvalResult:
    """Copy the evaluation in ``source`` to ``out_dir`` as ``stage``'s: its files as written (their records
    name the checkpoint that rolled them out), its results with this stage's name, checkpoint and leak checks,
    and ``config.reused_from`` naming where they came from. Sub-results (the hold-out greedy run) likewise."""
    source, out = Path(source), Path(out_dir)
    origin = EvalResult.load(source)
    if source.resolve() == out.resolve():
        _set_checks(origin, checks)
        origin.save(out)
        return origin
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source, out, ignore=shutil.ignore_patterns(RESULT_FILE))
    for sub in sorted(source.rglob(RESULT_FILE)):
        if sub.parent == source:
            continue
        part = _relocated(EvalResult.load(sub), source, out, stage=stage)
        part.save(out / sub.parent.relative_to(source))
    reused_from = {"stage": origin.stage, "checkpoint": origin.config.get("checkpoint"), "run_id": origin.run_id}
    result = _relocated(origin, source, out, stage=stage)
    result.config.update(checkpoint=str(checkpoint), checkpoint_version=checkpoint_version, reused_from=reused_from)
    _set_checks(result, checks)
    result.save(out)
    return result


def evaluate_once(eval_root: str | Path, stage: str, fingerprint: str, evaluate: Callable[[Path], EvalResult], *,
                  checkpoint: str | Path, checkpoint_version: str | None,
                  checks: Mapping[str, list]) -> tuple[EvalResult, Path | None]:
    """``stage``'s evaluation in ``eval_root/stage``: a finished one with the same fingerprint reused, else
    ``evaluate(out_dir)`` run and its result saved with the fingerprint. Returns (result, the directory reused
    from or None). Evaluations of one fingerprint run one at a time (:func:`fingerprint_lock`)."""
    out_dir = Path(eval_root) / stage
    with fingerprint_lock(eval_root, fingerprint):
        source = find_reusable(eval_root, fingerprint, stage=stage)
        if source is not None:
            return reuse_result(source, out_dir, stage=stage, checkpoint=checkpoint,
                                checkpoint_version=checkpoint_version, checks=checks), source
        result = evaluate(out_dir)
        result.config["fingerprint"] = fingerprint
        result.save(out_dir)
        return result, None
