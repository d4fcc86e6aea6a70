"""Training and evaluation datasets as HF-style rows (docs/architecture.md, "Datasets").

Every builder is a pure function of curated rows (the split's output, i.e. with ``pool``) or of
problems; ``export_dataset`` writes JSONL + Parquet atomically and returns the content hash.
Rows: ``{id, messages, tools, source}`` (messages with the fixed key set, ``arguments`` and
``tools`` JSON strings); KTO rows add ``label``; ``rl_prompts`` and ``eval_problems`` have their
own shapes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from oro_assets import jsonio
from oro_assets.arena.problems import scoring_spec
from oro_assets.curation.rows import as_rows, messages_of, meta_of, parsed
from oro_assets.traces.schema import MESSAGE_KEYS, to_hf_messages

SuccessFn = Callable[[dict], "bool | None"]

#: the datasets built over the window of curated days (the datasets job's selection)
WINDOW_DATASETS = ("sft_dataset", "kto_dataset", "rl_prompts", "eval_problems")


def recorded_success(row: dict) -> bool | None:
    """Validator-recorded outcome ``meta.score.success`` (None when absent)."""
    score = meta_of(row).get("score")
    if isinstance(score, dict) and isinstance(score.get("success"), bool):
        return score["success"]
    return None


def strict_success_fn(problems_by_key: dict[str, dict], catalogue: Any) -> SuccessFn:
    """Production-strict success via the arena scorer (last recommend vs the problem's reward);
    falls back to the recorded success when the problem or its reward is unknown."""
    from oro_assets.arena.scoring import last_recommended_ids, score_trace

    def success(row: dict) -> bool | None:
        problem = problems_by_key.get(str(row.get("problem_key") or row.get("problem_id")))
        if problem is None or problem.get("reward") is None:
            return recorded_success(row)
        ids = last_recommended_ids(messages_of(row))
        return bool(score_trace(problem, ids or [], catalogue).success)

    return success


def _source(row: dict) -> str:
    return f"{row.get('partition')}:{row.get('source_file')}:{row.get('line_no')}"


def _tools_json(row: dict) -> str:
    tools = row.get("tools")
    return tools if isinstance(tools, str) else jsonio.dumps(parsed(tools, []))


def hf_row(row: dict) -> dict:
    return {
        "id": row["trace_id"],
        "messages": to_hf_messages(messages_of(row)),
        "tools": _tools_json(row),
        "source": _source(row),
    }


def _one_per_id(rows: Iterable[dict]) -> list[dict]:
    """One row per example id, the first seen (rows come in partition order): a line that a later
    day's dump repeats is the same trace (same id) and must not be trained on twice."""
    first: dict[str, dict] = {}
    for r in rows:
        first.setdefault(r["id"], r)
    return sorted(first.values(), key=lambda r: r["id"])


def sft_rows(curated: Iterable[dict], success: SuccessFn = recorded_success) -> list[dict]:
    """Train pool, kept, successful (unknown outcome → excluded); one row per trace id."""
    return _one_per_id(hf_row(r) for r in as_rows(curated) if r.get("pool") == "train" and success(r) is True)


def kto_rows(curated: Iterable[dict], success: SuccessFn = recorded_success) -> list[dict]:
    """Train pool, desirable (label True) = successful, undesirable = failed; unknown excluded; one row
    per trace id."""
    out = []
    for r in as_rows(curated):
        if r.get("pool") != "train":
            continue
        label = success(r)
        if label is None:
            continue
        out.append({**hf_row(r), "label": bool(label)})
    return _one_per_id(out)


def rl_prompt_rows(
    teacher_episodes: Iterable[dict], problems_by_key: dict[str, dict], train_keys: set[str]
) -> list[dict]:
    """Per-step prompts from teacher episodes (canonical rows with ``messages`` and ``problem_id``
    or ``problem_key``) on train problems: the prompt is every message before an assistant turn,
    ``teacher_next`` that turn's thinking and calls, ``reward_spec`` the problem reward (JSON)."""
    out = []
    for ep in as_rows(teacher_episodes):
        key = str(ep.get("problem_key") or ep.get("problem_id"))
        if key not in train_keys or key not in problems_by_key:
            continue
        problem = problems_by_key[key]
        messages = to_hf_messages(messages_of(ep))
        step = 0
        for i, m in enumerate(messages):
            if m["role"] != "assistant":
                continue
            step += 1
            out.append(
                {
                    "id": f"{ep.get('trace_id') or key}:{step}",
                    "problem_id": problem.get("problem_id") or key,
                    "prompt": messages[:i],
                    "teacher_next": {
                        "think": m.get("reasoning_content") or "",
                        "tool_calls": [
                            {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                            for c in m.get("tool_calls") or []
                        ],
                    },
                    "reward_spec": jsonio.dumps(scoring_spec(problem)),
                    "step": step,
                }
            )
    return sorted(out, key=lambda r: (r["problem_id"], r["id"]))


def eval_problem_rows(registry: Any, problems_by_key: dict[str, dict]) -> list[dict]:
    """Held-out problems with rewards (``registry.problems_in("heldout")``: dev and test), each with its
    ``cluster_id`` and its ``pool`` (``dev`` / ``test``); query-only problems skipped."""
    out = []
    for key in registry.problems_in("heldout"):
        problem = problems_by_key.get(key)
        if problem is None or problem.get("reward") is None:
            continue
        out.append(
            {
                **problem,
                "problem_id": problem.get("problem_id") or key,
                "cluster_id": registry.members[key]["cluster_id"],
                "pool": registry.pool_of(key),
            }
        )
    return sorted(out, key=lambda r: r["problem_id"])


def teacher_episodes(problems_by_key: dict[str, dict], keys: Iterable[str], env: Any) -> list[dict]:
    """The arena's scripted teacher played on each problem of ``keys`` (in ``env``): canonical rows
    ``{trace_id, problem_key, messages}`` for :func:`rl_prompt_rows`."""
    from oro_assets.arena.policies.agentic import teacher_episode

    episodes = []
    for key in keys:
        episode = teacher_episode(problems_by_key[key], env)
        episodes.append({"trace_id": f"teacher:{key}", "problem_key": key, "messages": episode.to_messages()})
    return episodes


def rl_prompts_from_registry(registry: Any, problems_by_key: dict[str, dict], catalogue: Any,
                             max_problems: int) -> list[dict]:
    """The ``rl_prompts`` dataset: the teacher's per-step prompts on the first ``max_problems`` train-pool
    problems (sorted by key) that the problem pool knows."""
    from oro_assets.arena.env import InProcessEnv

    train_keys = [k for k in registry.problems_in("train") if k in problems_by_key]
    episodes = teacher_episodes(problems_by_key, train_keys[:max_problems], InProcessEnv(catalogue))
    return rl_prompt_rows(episodes, problems_by_key, set(train_keys))


def window_partitions(partitions: Iterable[str], end: str, days: int) -> list[str]:
    """The partitions in ``(end - days, end]`` (YYYY-MM-DD), sorted."""
    end_date = dt.date.fromisoformat(end)
    start = end_date - dt.timedelta(days=days)
    return sorted(p for p in partitions if start < dt.date.fromisoformat(p) <= end_date)


def _jsonl_bytes(rows: list[dict]) -> bytes:
    return b"".join(jsonio.canonical_dumps(r).encode() + b"\n" for r in rows)


def content_hash(rows: list[dict]) -> str:
    """sha256 of the canonical JSONL (sorted keys, one row a line, rows in the given order)."""
    return hashlib.sha256(_jsonl_bytes(rows)).hexdigest()


def _message_struct() -> pa.DataType:
    call = pa.struct(
        [
            ("id", pa.string()),
            ("type", pa.string()),
            ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
        ]
    )
    fields = {
        "role": pa.string(),
        "content": pa.string(),
        "reasoning_content": pa.string(),
        "tool_calls": pa.list_(call),
        "tool_call_id": pa.string(),
        "name": pa.string(),
    }
    return pa.struct([(k, fields[k]) for k in MESSAGE_KEYS])


def _json_column(values: list[Any]) -> bool:
    """True when a column's values cannot share one Arrow type: any object, or lists mixed with
    other values or holding anything but strings (rewards are a dict for Product problems and a
    list for Shop/Voucher ones)."""
    present = [v for v in values if v is not None]
    if any(isinstance(v, dict) for v in present):
        return True
    lists = [v for v in present if isinstance(v, list)]
    return bool(lists) and (len(lists) != len(present) or not all(isinstance(x, str) for v in lists for x in v))


def _arrow_table(rows: list[dict]) -> pa.Table:
    if not rows:
        return pa.table({})
    msg_list = pa.list_(_message_struct())
    keys = list(dict.fromkeys(k for r in rows for k in r))  # every row's keys, first-seen order
    columns = {}
    for key in keys:
        values = [r.get(key) for r in rows]
        if key in ("messages", "prompt"):
            columns[key] = pa.array(values, type=msg_list)
        elif _json_column(values):  # stored as JSON text, as ``teacher_next`` and ``reward`` are
            columns[key] = pa.array([v if v is None or isinstance(v, str) else jsonio.dumps(v) for v in values],
                                    type=pa.string())
        else:
            columns[key] = pa.array(values)
    return pa.table(columns)


def export_dataset(rows: list[dict], out_dir: str | os.PathLike, name: str) -> dict[str, Any]:
    """Write ``<out_dir>/<name>.jsonl`` and ``.parquet`` atomically; return paths, count, hash.

    In Parquet, the columns of every row are kept; a column whose values cannot share one type
    (objects such as ``teacher_next`` or ``voucher``, a ``reward`` that is a dict or a list) is JSON
    text, so ``datasets`` never merges keys across rows; the JSONL keeps them as objects."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jsonl_path, parquet_path = out / f"{name}.jsonl", out / f"{name}.parquet"
    tmp_jsonl = jsonl_path.with_name(f".{jsonl_path.name}.tmp")
    tmp_jsonl.write_bytes(_jsonl_bytes(rows))
    os.replace(tmp_jsonl, jsonl_path)
    tmp_pq = parquet_path.with_name(f".{parquet_path.name}.tmp")
    pq.write_table(_arrow_table(rows), tmp_pq)
    os.replace(tmp_pq, parquet_path)
    return {
        "name": name,
        "rows": len(rows),
        "sha256": content_hash(rows),
        "jsonl": str(jsonl_path),
        "parquet": str(parquet_path),
    }
