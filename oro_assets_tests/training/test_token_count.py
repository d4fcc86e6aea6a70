"""The format gate's token budget counted with the active profile's tokenizer (issue 5, gates)."""

from __future__ import annotations

import hashlib
import json

import pytest

from oro_assets import jsonio
from oro_assets.curation.gates import _size_bound, estimate_tokens, gate_traces
from oro_assets.traces import samples
from oro_assets.traces.normalize import normalize_record
from oro_assets.traces.schema import Provenance
from oro_assets.training.profiles import get_profile
from oro_assets.training.token_count import TemplateTokenCounter, profile_token_counter


def _row(obj: dict, line: int = 1) -> dict:
    raw = jsonio.dumps(obj).encode()
    return normalize_record(obj, provenance=Provenance("t.jsonl", line, "2026-03-01", hashlib.sha256(raw).hexdigest()))


@pytest.fixture(scope="module")
def world_files(tmp_path_factory, world):
    root = tmp_path_factory.mktemp("arena")
    (root / "catalogue.jsonl").write_text("".join(json.dumps(p) + "\n" for p in world.catalogue))
    (root / "problems.jsonl").write_text("".join(json.dumps(p) + "\n" for p in world.problems))
    return root / "catalogue.jsonl", root / "problems.jsonl"


@pytest.fixture(scope="module")
def tiny_counter(world_files):
    counter, why = profile_token_counter(get_profile("tiny"), *world_files)
    assert counter is not None, why
    return counter


@pytest.fixture(scope="module")
def traces():
    rows = [_row(samples.oro_envelope(seed), seed) for seed in range(40)]
    rows += [_row(samples.openai_row(seed), 100 + seed) for seed in range(10)]
    return rows


def test_counting_by_pieces_equals_counting_the_whole_rendering(tiny_counter, traces):
    assert tiny_counter.by_pieces
    for view in ("compact", "full"):
        counter = TemplateTokenCounter(tiny_counter.tokenizer, view, view)
        for r in traces:
            text = counter.render(jsonio.loads(r["messages"]), jsonio.loads(r["tools"]))
            assert counter.count_text(text) == len(counter.tokenizer(text, add_special_tokens=False)["input_ids"])


def test_the_byte_bound_holds_for_every_rendering(tiny_counter, traces):
    for view in ("compact", "full"):
        counter = TemplateTokenCounter(tiny_counter.tokenizer, view, view)
        for r in traces:
            messages = jsonio.loads(r["messages"])
            ex = counter.viewed(messages, jsonio.loads(r["tools"]))
            size = len(counter.render(messages, jsonio.loads(r["tools"])).encode())
            assert size <= counter.upper_bound_bytes(_size_bound(r, messages), len(messages))
            assert size <= counter.view_bound_bytes(ex)


def test_the_gate_rejects_what_the_profile_tokenizer_counts_over_budget(tiny_counter, traces):
    # 4,000 ten-digit ids in one result: ~12k by the byte estimate, ~24k in the tokenizer's
    # two-digit pieces; the full view keeps tool results whole
    full = TemplateTokenCounter(tiny_counter.tokenizer, "full", "tiny (full view)")
    env = samples.oro_envelope(7)
    ids = ",".join(str(1_000_000_000 + i) for i in range(4_000))
    env["dialogue"][0]["completion"]["message"]["tool_call"][0]["result"] = ids
    row = _row(env)
    messages = jsonio.loads(row["messages"])
    rendered = full.render(messages, jsonio.loads(row["tools"]))
    n = full.count(messages, jsonio.loads(row["tools"]))
    assert estimate_tokens(rendered) < 14_336 < n  # the estimate of this very rendering keeps it
    by_estimate = gate_traces([row], count_tokens=estimate_tokens)
    by_tokenizer = gate_traces([row], count_tokens=full)
    assert not any(r["reason"] == "over_token_budget" for r in by_estimate.rejected)
    assert [r["reason"] for r in by_tokenizer.rejected] == ["over_token_budget"]
    assert f"{n} tokens > budget 14336" in by_tokenizer.rejected[0]["detail"]


def test_a_trace_the_view_cannot_render_is_still_counted(tiny_counter):
    env = samples.oro_envelope(3)
    env["dialogue"][0]["completion"]["message"]["tool_call"][0]["result"] = [{"product_id": "1", "service": 5}]
    row = _row(env)
    assert tiny_counter.count(jsonio.loads(row["messages"]), jsonio.loads(row["tools"])) > 0


def test_profiles_without_a_loadable_tokenizer_say_so(tmp_path, world_files, tiny_counter):
    import dataclasses

    qwen = get_profile("qwen3-4b")
    missing = dataclasses.replace(qwen, model_source=str(tmp_path / "no-weights-here"))
    counter, why = profile_token_counter(missing)
    assert counter is None and "qwen3-4b tokenizer could not be loaded" in why
    tiny_counter.tokenizer.save_pretrained(tmp_path / "tok")
    counter, why = profile_token_counter(dataclasses.replace(qwen, model_source=str(tmp_path / "tok")))
    assert counter is not None and counter.name.startswith("qwen3-4b tokenizer") and counter.view == "full"
    counter, why = profile_token_counter(get_profile("tiny"), tmp_path / "none.jsonl")
    assert counter is None and "arena catalogue" in why


def test_the_tiny_tokenizer_is_built_once_per_world_in_a_child_and_reused(tmp_path, world_files, tiny_counter, traces):
    counter, why = profile_token_counter(get_profile("tiny"), *world_files, cache_dir=tmp_path)
    assert counter is not None, why
    built = list(tmp_path.glob("tiny-*/tokenizer.json"))
    assert len(built) == 1 and not list(tmp_path.glob(".tiny-*"))  # no temporary left behind
    stamp = built[0].stat().st_mtime_ns
    again, _ = profile_token_counter(get_profile("tiny"), *world_files, cache_dir=tmp_path)
    assert built[0].stat().st_mtime_ns == stamp
    for r in traces[:10]:  # the saved tokenizer counts like the one built in this process
        text = tiny_counter.render(jsonio.loads(r["messages"]), jsonio.loads(r["tools"]))
        assert again.count_text(text) == counter.count_text(text) == tiny_counter.count_text(text)
