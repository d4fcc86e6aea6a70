"""SFT's vocabulary extension appends embedding rows that depend on the seed, not on the process's RNG state."""

from __future__ import annotations

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

from oro_assets.training.stages.sft import resize_embeddings


def _model() -> Qwen3ForCausalLM:
    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, head_dim=8, tie_word_embeddings=True)
    return Qwen3ForCausalLM(config)


def _appended_rows(global_seed: int, seeded: bool) -> torch.Tensor:
    model = _model()
    torch.manual_seed(global_seed)  # whatever ran before in the process
    if seeded:
        resize_embeddings(model, 80, seed=3)
    else:
        model.resize_token_embeddings(80)
    return model.get_input_embeddings().weight.detach()[64:].clone()


def test_appended_rows_do_not_depend_on_the_global_rng():
    assert torch.equal(_appended_rows(1, seeded=True), _appended_rows(2, seeded=True))


def test_plain_resizing_does_depend_on_it():
    """Why the helper exists: transformers' mean resizing draws from the global RNG."""
    assert not torch.equal(_appended_rows(1, seeded=False), _appended_rows(2, seeded=False))


def test_the_helper_leaves_the_global_rng_as_it_found_it():
    model = _model()
    torch.manual_seed(5)
    expected = torch.rand(4)
    torch.manual_seed(5)
    resize_embeddings(model, 80, seed=3)
    assert torch.equal(torch.rand(4), expected)
    assert model.get_input_embeddings().weight.shape[0] == 80
