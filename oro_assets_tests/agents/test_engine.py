"""The rollout engine: KV cache kept across turns, continuous batching, per-episode sampling, bad input."""

import pytest

from oro_assets.agents.engine import EngineConfig, RolloutEngine, episode_seed, supports_engine
from oro_assets.agents.local_model import LocalModelPolicy
from oro_assets.agents.rollout import rollout_many
from oro_assets.agents.toolcall import render_assistant_text
from oro_assets_tests.agents.test_local_model import BASE, TOOLS, _executor, _shop_responder
from oro_assets_tests.tiny_lm import ScriptedLM, ScriptedStepLM, build_tokenizer, tiny_random_qwen3

PROBLEMS = [{"problem_id": f"p{i}", "query": q}
            for i, q in enumerate(["red shoes", "blue phone case", "shirt", "black cotton shirt", "laptop bag"])]
EPISODE = {"tools": TOOLS, "executor": _executor}


@pytest.fixture(scope="module")
def tiny():
    return tiny_random_qwen3(seed=0, hidden_size=64)


@pytest.fixture(scope="module")
def shop_tok():
    return build_tokenizer([str(i) for i in range(100, 130)])  # word-level: ids must be in the vocabulary


class ForceCalls:
    """Wraps a model policy: its first two turns get a find_product call appended, so a random model plays a
    multi-turn episode (and the re-render of its turn differs from what it generated)."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name

    def act(self, view, messages, tools):
        from oro_assets.arena.episode import ToolCall

        turn = self.inner.act(view, messages, tools)
        if sum(m["role"] == "assistant" for m in messages) < 2:
            turn.tool_calls = [ToolCall(name="find_product", arguments={"q": view["query"]})]
        return turn


def test_scripted_episodes_match_full_re_encoding_and_feed_only_the_new_tokens(shop_tok):
    legacy = rollout_many(LocalModelPolicy(ScriptedLM(shop_tok, _shop_responder), shop_tok, max_new_tokens=200),
                          PROBLEMS, None, n=2, engine=False, episode_kwargs=EPISODE)
    lm = ScriptedStepLM(shop_tok, _shop_responder)
    policy = LocalModelPolicy(lm, shop_tok, max_new_tokens=200)
    stats: dict = {}
    engine = rollout_many(policy, PROBLEMS, None, n=2, stats=stats, episode_kwargs=EPISODE)
    assert [r.episode.to_messages() for r in engine] == [r.episode.to_messages() for r in legacy]
    assert all([s.calls[0].name for s in r.episode.steps] == ["find_product", "recommend_product", "terminate"]
               for r in engine)
    # Each turn's prompt (as a full re-render tokenizes it) = what the cache held + what was fed: the model's own
    # canonical turns re-render token for token, so only tool results and headers were run as prompt.
    full_prompts = sum(r.episode.steps[i].inference[0]["usage"]["prompt_tokens"]
                       for r in engine for i in range(len(r.episode.steps)))
    assert stats["rerender_mismatches"] == 0
    assert stats["prefill_tokens"] + stats["reused_tokens"] == full_prompts
    assert stats["prefill_tokens"] < full_prompts / 5
    assert stats["turns"] == 30 and stats["peak_episodes"] == 10


def test_appended_turn_tokenizes_as_the_full_re_render(shop_tok):
    policy = LocalModelPolicy(ScriptedStepLM(shop_tok, _shop_responder), shop_tok)
    first = policy._encode(policy.render_prompt(BASE, TOOLS))
    said = render_assistant_text("search", [("find_product", {"q": "red shoes"})])
    cached = first + shop_tok(said, add_special_tokens=False)["input_ids"] + [shop_tok.convert_tokens_to_ids("<|im_end|>")]
    convo = BASE + [{"role": "assistant", "content": "", "reasoning_content": "search",
                     "tool_calls": [{"id": "call_1_0", "type": "function",
                                     "function": {"name": "find_product", "arguments": '{"q": "red shoes"}'}}]},
                    {"role": "tool", "tool_call_id": "call_1_0", "name": "find_product",
                     "content": '[{"title": "red shoes", "product_id": "109"}]'}]
    full = policy._encode(policy.render_prompt(convo, TOOLS))
    assert full[: len(cached)] == cached
    appended = shop_tok.decode(full[len(cached):], skip_special_tokens=False)
    assert appended.startswith("\n<|im_start|>user\n<tool_response>") and appended.endswith("<|im_start|>assistant\n")


def test_real_model_greedy_episodes_equal_the_generate_path(tiny):
    model, tok = tiny
    legacy = rollout_many(ForceCalls(LocalModelPolicy(model, tok, max_new_tokens=24)), PROBLEMS, None, n=1,
                          engine=False, episode_kwargs=EPISODE)
    stats: dict = {}
    engine = rollout_many(ForceCalls(LocalModelPolicy(model, tok, max_new_tokens=24)), PROBLEMS, None, n=1,
                          stats=stats, episode_kwargs=EPISODE)
    assert [r.episode.to_messages() for r in engine] == [r.episode.to_messages() for r in legacy]
    assert all(len(r.episode.steps) == 3 for r in engine)
    assert stats["reused_tokens"] > stats["prefill_tokens"]


def test_single_turn_completions_equal_generate_and_sampling_is_per_sequence(tiny):
    model, tok = tiny
    greedy = LocalModelPolicy(model, tok, max_new_tokens=16)
    prompts = [greedy._encode(greedy.render_prompt(BASE[:1] + [{"role": "user", "content": p["query"]}], TOOLS))
               for p in PROBLEMS]
    want = [(text, finish) for text, _, _, finish in greedy._generate_ids(prompts)]
    got = greedy.make_engine().complete(prompts, [p["problem_id"] for p in PROBLEMS])
    assert [(greedy.decode(ids), finish) for ids, finish in got] == want

    sampler = LocalModelPolicy(model, tok, temperature=1.0, max_new_tokens=12, seed=3)
    keys = [f"k{i}" for i in range(len(prompts))]
    alone = [sampler.make_engine().complete([p], [k])[0] for p, k in zip(prompts, keys, strict=True)]
    together = sampler.make_engine(EngineConfig(max_episodes=2)).complete(prompts[::-1], keys[::-1])[::-1]
    assert together == alone  # a sequence's samples do not depend on who shared its batch
    other_seed = LocalModelPolicy(model, tok, temperature=1.0, max_new_tokens=12, seed=4).make_engine()
    assert other_seed.complete(prompts, keys) != alone
    assert episode_seed(3, "k0") != episode_seed(3, "k1")


def test_sampled_episodes_do_not_depend_on_their_batch(tiny):
    model, tok = tiny

    def run(problems, cfg):
        policy = ForceCalls(LocalModelPolicy(model, tok, temperature=1.0, max_new_tokens=16, seed=5))
        return {(r.problem_id, r.sample): r.episode.to_messages()
                for r in rollout_many(policy, problems, None, n=2, engine=cfg, episode_kwargs=EPISODE)}

    few = run(PROBLEMS[:2], EngineConfig(max_episodes=1))
    many = run(PROBLEMS, EngineConfig(max_episodes=8))
    assert all(many[k] == v for k, v in few.items())
    assert few[("p0", 0)] != few[("p0", 1)]


def test_overflowing_prompt_ends_its_episode_with_a_reason_and_budget_cuts_are_scored(shop_tok):
    lm = ScriptedStepLM(shop_tok, _shop_responder)
    probe = LocalModelPolicy(lm, shop_tok, max_new_tokens=40)
    short_prompt = probe.render_prompt([{"role": "system", "content": "s"}, {"role": "user", "content": "shirt"}], TOOLS)
    lm.config.max_position_embeddings = len(shop_tok(short_prompt, add_special_tokens=False)["input_ids"]) + 40 + 60
    policy = LocalModelPolicy(lm, shop_tok, max_new_tokens=40)
    problems = [{"problem_id": "long", "query": " ".join(["red shoes"] * 80)}, {"problem_id": "short", "query": "shirt"}]
    by_id = {r.problem_id: r.episode for r in rollout_many(policy, problems, None, n=1,
                                                             episode_kwargs={**EPISODE, "system_prompt": "s"})}
    assert by_id["long"].status == "failed" and by_id["long"].error["reason"] == "context_overflow"
    assert by_id["short"].steps[0].calls[0].name == "find_product"
    # Its growing conversation may overflow on a later turn: then it ends there with the reason, nothing crashes.
    assert by_id["short"].status == "success" or by_id["short"].error["reason"] == "context_overflow"

    cut = LocalModelPolicy(ScriptedStepLM(shop_tok, lambda p: "<think>\n" + "red shoes " * 50), shop_tok,
                           max_new_tokens=10)
    (r,) = rollout_many(cut, problems[1:], None, n=1, episode_kwargs=EPISODE)
    record = r.episode.steps[0].inference[0]
    assert record["choices"][0]["finish_reason"] == "length" and record["usage"]["completion_tokens"] == 10
    assert r.episode.status == "success" and r.episode.steps[0].calls == []


def test_generate_only_models_keep_the_lockstep_path(shop_tok):
    lm = ScriptedLM(shop_tok, _shop_responder)
    assert not supports_engine(lm)
    rollout_many(LocalModelPolicy(lm, shop_tok, max_new_tokens=200), PROBLEMS[:2], None, n=1, episode_kwargs=EPISODE)
    assert lm.calls == [2, 2, 2]


def test_engine_config_rejects_nonsense():
    with pytest.raises(ValueError, match="must be >= 1"):
        EngineConfig(max_episodes=0)
    with pytest.raises(ValueError, match="one key per prompt"):
        RolloutEngine.complete(object.__new__(RolloutEngine), [[1]], [])


def test_vllm_backend_is_optional_and_says_so_when_absent():
    from oro_assets.agents.engine_vllm import VLLMEngine, vllm_available

    with pytest.raises(ValueError, match="unknown engine backend"):
        EngineConfig(backend="tgi")
    if vllm_available():
        pytest.skip("vllm installed: its engine needs a GPU, measured by scripts/gpu_qwen3_4b_check.py")
    with pytest.raises(RuntimeError, match="vllm is not installed"):
        VLLMEngine("no-model", eos_ids=[0])


def test_grpo_rollout_func_gives_trl_its_completions_from_the_engine(tiny):
    from types import SimpleNamespace

    from oro_assets.agents.engine import grpo_rollout_func

    model, tok = tiny
    policy = LocalModelPolicy(model, tok, temperature=1.0, max_new_tokens=8, seed=2)
    prompt = policy.render_prompt(BASE, TOOLS)
    fn = grpo_rollout_func(tok, eos_ids=policy._eos_ids(), temperature=1.0, max_new_tokens=8, seed=2)
    model.train()
    out = fn([prompt] * 4, SimpleNamespace(model=model, state=SimpleNamespace(global_step=3)))
    assert model.training  # left as it was
    model.eval()
    assert out["prompt_ids"] == [policy._encode(prompt)] * 4 and out["logprobs"] is None
    assert len(out["completion_ids"]) == 4 and len({tuple(c) for c in out["completion_ids"]}) > 1  # a real group
    eos = set(policy._eos_ids())
    for c in out["completion_ids"]:
        assert 1 <= len(c) <= 9 and not eos & set(c[:-1]) and (c[-1] in eos or len(c) == 8)


def test_fused_decoder_computes_what_the_models_own_decoder_computes(tiny):
    import torch

    from oro_assets.agents.engine import FusedDecoder, ModelRunner

    model, _ = tiny
    assert FusedDecoder.supports(model)
    own, fused = ModelRunner(model, fused=False), ModelRunner(model, fused=True)
    assert own.fused is None and fused.fused is not None
    gen = torch.Generator().manual_seed(1)

    def ids(n):
        return torch.randint(0, model.config.vocab_size, (n,), generator=gen).tolist()

    # prefill of uneven rows into slots 0..2, then a decode step on slots 2 and 0 (non-contiguous), then all rows
    steps = [(None, [ids(7), ids(3), ids(5)], [0, 0, 0]), ([2, 0], [ids(1), ids(1)], [5, 7]),
             (None, [ids(1), ids(2), ids(1)], [8, 3, 6])]
    for slots, feeds, starts in steps:
        a, b = own.forward(slots, feeds, starts), fused.forward(slots, feeds, starts)
        assert a.shape == b.shape == (len(feeds), model.config.vocab_size)
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-5), (a - b).abs().max()
        assert torch.equal(a.argmax(-1), b.argmax(-1))
    for x, y in zip(own.cache.k, fused.cache.k, strict=True):
        assert torch.allclose(x[:3, :, :9], y[:3, :, :9], atol=1e-5)


def test_fused_decoder_refuses_what_it_does_not_compute(tiny):
    import torch

    from oro_assets.agents.engine import FusedDecoder, ModelRunner

    model, _ = tiny

    class Adapter(torch.nn.Linear):  # stands for a LoRA or quantised projection
        pass

    layer = model.get_decoder().layers[0].self_attn
    plain = layer.q_proj
    try:
        layer.q_proj = Adapter(plain.in_features, plain.out_features, bias=False)
        assert not FusedDecoder.supports(model)
        assert ModelRunner(model).fused is None  # the model's own forward runs it
    finally:
        layer.q_proj = plain
    model.config.hidden_act = "gelu"
    try:
        assert not FusedDecoder.supports(model)
    finally:
        model.config.hidden_act = "silu"


def test_sampler_draws_from_hf_temperature_and_top_p_distribution():
    import random

    import torch
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

    from oro_assets.agents.engine import sample_tokens

    logits = torch.randn(1, 12, generator=torch.Generator().manual_seed(0)) * 2
    for temperature, top_p in ((0.7, 1.0), (1.0, 0.8)):
        warped = TopPLogitsWarper(top_p)(None, TemperatureLogitsWarper(temperature)(None, logits.clone()))
        want = warped.softmax(-1)[0]
        n = 20_000
        gens = [random.Random(i) for i in range(n)]
        got = torch.bincount(torch.tensor(sample_tokens(logits.expand(n, -1), temperature, top_p, gens)),
                             minlength=12).double() / n
        assert set(got.nonzero().flatten().tolist()) <= set(want.nonzero().flatten().tolist())  # nothing top-p cut
        assert (got - want).abs().sum() / 2 < 0.015  # total variation: sampling noise ~0.005 at n = 20k
    assert sample_tokens(logits, 0.0, 1.0, [None]) == [int(logits.argmax())]
