import json
import re

import pytest

from oro_assets.agents.local_model import ContextOverflowError, LocalModelPolicy, to_template_messages
from oro_assets.agents.rollout import rollout_many
from oro_assets.agents.toolcall import render_assistant_text
from oro_assets_tests.tiny_lm import ScriptedLM, build_tokenizer, tiny_random_qwen3

TOOLS = [
    {"type": "function", "function": {"name": "find_product", "description": "search",
                                      "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                                                     "required": ["q"]}}},
    {"type": "function", "function": {"name": "recommend_product", "description": "recommend",
                                      "parameters": {"type": "object",
                                                     "properties": {"product_ids": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "terminate", "description": "stop",
                                      "parameters": {"type": "object", "properties": {"status": {"type": "string"}}}}},
]
BASE = [{"role": "system", "content": "You are a shopping assistant."}, {"role": "user", "content": "red shoes"}]


@pytest.fixture(scope="module")
def tiny():
    return tiny_random_qwen3(seed=0)


def test_canonical_arguments_become_dicts_for_the_template():
    msgs = BASE + [
        {"role": "assistant", "content": "", "reasoning_content": "search first",
         "tool_calls": [{"id": "call_1_0", "type": "function",
                         "function": {"name": "find_product", "arguments": '{"q": "red shoes"}'}}]},
        {"role": "tool", "tool_call_id": "call_1_0", "name": "find_product", "content": "[]"},
    ]
    out = to_template_messages(msgs)
    assert out[2]["tool_calls"][0]["function"]["arguments"] == {"q": "red shoes"}
    tok = build_tokenizer()
    policy = LocalModelPolicy(ScriptedLM(tok, lambda p: ""), tok)
    prompt = policy.render_prompt(msgs, TOOLS)
    # The tool schemas are in the system block and the past call is rendered as a Qwen3 tool call.
    assert "<tools>" in prompt and '"name": "find_product"' in prompt
    assert '<tool_call>\n{"name": "find_product", "arguments": {"q": "red shoes"}}\n</tool_call>' in prompt
    assert "<tool_response>\n[]\n</tool_response>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_scripted_completion_is_parsed_into_a_turn():
    tok = build_tokenizer()
    text = '<think>\nneed red shoes\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": {"q": "red shoes"}}\n</tool_call>'
    lm = ScriptedLM(tok, lambda p: text)
    turn = LocalModelPolicy(lm, tok, max_new_tokens=200).act({"problem_id": "p", "query": "red shoes"}, BASE, TOOLS)
    assert turn.think == "need red shoes"
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("find_product", {"q": "red shoes"})]
    (record,) = turn.inference
    n_tokens = len(tok(text, add_special_tokens=False)["input_ids"])
    assert record["usage"]["completion_tokens"] == n_tokens  # eos excluded
    msg = record["choices"][0]["message"]
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"q": "red shoes"}
    assert record["choices"][0]["finish_reason"] == "tool_calls"
    assert lm.kwargs[0]["do_sample"] is False


def test_random_tiny_model_generates_and_never_crashes(tiny):
    model, tok = tiny
    policy = LocalModelPolicy(model, tok, temperature=0.0, max_new_tokens=12, seed=1)
    turn = policy.act({"problem_id": "p", "query": "red shoes"}, BASE, TOOLS)
    (record,) = turn.inference
    assert 0 < record["usage"]["completion_tokens"] <= 12
    assert record["usage"]["prompt_tokens"] > 50
    again = policy.act({"problem_id": "p", "query": "red shoes"}, BASE, TOOLS)
    assert again.inference[0]["choices"][0]["message"]["content"] == record["choices"][0]["message"]["content"]


def test_batched_generation_matches_single_and_sampling_is_seeded(tiny):
    model, tok = tiny
    greedy = LocalModelPolicy(model, tok, temperature=0.0, max_new_tokens=8)
    short = BASE
    long = BASE[:1] + [{"role": "user", "content": "I want a black cotton shirt for the laptop bag under 20"}]
    single = greedy.generate_texts([greedy.render_prompt(short, TOOLS)])[0][0]
    batched = greedy.generate_texts([greedy.render_prompt(long, TOOLS), greedy.render_prompt(short, TOOLS)])
    assert batched[1][0] == single  # left padding does not change the shorter row

    def sample(seed):
        pol = LocalModelPolicy(model, tok, temperature=1.0, top_p=1.0, max_new_tokens=10, seed=seed)
        return [t for t, *_ in pol.generate_texts([pol.render_prompt(short, TOOLS)] * 4)]

    assert sample(7) == sample(7)
    assert len(set(sample(7) + sample(8))) > 1


def test_context_overflow_is_a_clear_error():
    tok = build_tokenizer()
    policy = LocalModelPolicy(ScriptedLM(tok, lambda p: "", max_position_embeddings=64), tok, max_new_tokens=16)
    with pytest.raises(ContextOverflowError, match="exceeds the 64-token context"):
        policy.act({"problem_id": "p", "query": "q"}, BASE, TOOLS)


def _shop_responder(prompt: str) -> str:
    """Search, then recommend the first id seen in a tool response, then terminate."""
    if "<tool_response>" not in prompt:
        query = re.findall(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", prompt, re.S)[-1]
        return render_assistant_text("search", [("find_product", {"q": query})])
    if "recommend_product\", \"arguments\"" not in prompt.split("</tools>")[-1]:
        pid = re.findall(r'"product_id": ?"(\d+)"', prompt.split("</tools>")[-1])[0]
        return render_assistant_text(f"pick {pid}", [("recommend_product", {"product_ids": pid})])
    return '<think>\ndone\n</think>\n\n<tool_call>\n{"name": "terminate", "arguments": {"status": "success"}}\n</tool_call>'


def _executor(env, name, arguments):
    if name == "find_product":
        return [{"title": arguments["q"], "product_id": str(100 + len(arguments["q"]))}]
    return "ok"


def test_rollout_many_batches_across_episodes_and_records_canonical_messages():
    tok = build_tokenizer([str(i) for i in range(100, 130)])  # word-level: ids must be in the vocabulary
    lm = ScriptedLM(tok, _shop_responder)
    policy = LocalModelPolicy(lm, tok, max_new_tokens=200)
    problems = [{"problem_id": f"p{i}", "query": q} for i, q in enumerate(["red shoes", "blue phone case", "shirt"])]
    rollouts = rollout_many(policy, problems, env=None, n=2, batch_size=8,
                            episode_kwargs={"tools": TOOLS, "executor": _executor})
    assert [(r.problem_id, r.sample) for r in rollouts] == [(f"p{i}", s) for i in range(3) for s in range(2)]
    for r in rollouts:
        ep = r.episode
        assert ep.status == "success"
        assert [s.calls[0].name for s in ep.steps] == ["find_product", "recommend_product", "terminate"]
        assert ep.recommended_ids() == [str(100 + len(r.problem["query"]))]
        assistant = [m for m in ep.to_messages() if m["role"] == "assistant"]
        assert json.loads(assistant[0]["tool_calls"][0]["function"]["arguments"]) == {"q": r.problem["query"]}
        assert assistant[0]["reasoning_content"] == "search"
    # 6 episodes x 3 steps; all six wait together at each step -> three generate calls of 6 rows.
    assert lm.calls == [6, 6, 6]


def test_rollout_many_records_policy_failures_in_the_episode():
    tok = build_tokenizer()
    policy = LocalModelPolicy(ScriptedLM(tok, lambda p: "", max_position_embeddings=64), tok, max_new_tokens=16)
    (r,) = rollout_many(policy, [{"problem_id": "p", "query": "q"}], env=None, n=1,
                        episode_kwargs={"tools": TOOLS, "executor": _executor})
    assert r.episode.status == "failed"
    assert r.episode.error["type"] == "ContextOverflowError"


def test_one_overflowing_episode_does_not_fail_its_batch():
    tok = build_tokenizer([str(i) for i in range(100, 130)])
    lm = ScriptedLM(tok, _shop_responder)
    probe = LocalModelPolicy(lm, tok, max_new_tokens=40)
    short_prompt = probe.render_prompt([{"role": "system", "content": "s"}, {"role": "user", "content": "shirt"}], TOOLS)
    budget = len(tok(short_prompt, add_special_tokens=False)["input_ids"]) + 40 + 60  # room for 2 short turns
    lm.config.max_position_embeddings = budget
    policy = LocalModelPolicy(lm, tok, max_new_tokens=40)
    problems = [{"problem_id": "long", "query": " ".join(["red shoes"] * 80)}, {"problem_id": "short", "query": "shirt"}]
    rollouts = rollout_many(policy, problems, env=None, n=1, batch_size=4,
                            episode_kwargs={"tools": TOOLS, "executor": _executor, "system_prompt": "s"})
    by_id = {r.problem_id: r.episode for r in rollouts}
    assert by_id["long"].status == "failed" and by_id["long"].error["type"] == "ContextOverflowError"
    assert by_id["short"].steps[0].calls[0].name == "find_product"
    assert lm.calls[0] == 1  # the overflowing prompt never reached generate
