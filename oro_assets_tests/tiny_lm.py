"""Small real models for tests of anything that drives a LocalModelPolicy (no hub access). Test support,
not package code: it builds on the training package's tokenizer, which the agents layer may not import.

- :func:`tiny_random_qwen3`: a randomly initialised Qwen3ForCausalLM (hidden 32, 2 layers) with
  the training package's word-level tokenizer and the Qwen3 chat template. Real ``generate``.
- :class:`ScriptedLM`: a language model whose ``generate`` writes a chosen completion for each
  prompt (a function of the decoded prompt). It goes through the same tokenizer, padding, eos
  and parsing path as a real model, so rollouts with known outcomes can be tested quickly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

import pytest

DEFAULT_CORPUS = (
    "find_product view_product_information recommend_product terminate check_product_match "
    "find_products_in_same_shop calculate_voucher product_ids status success failure name arguments "
    "q page shop_id price sort service type function description parameters properties required "
    "object string integer number the a of and for to with in under red blue shoes phone case "
    "I want need looking cheap black white cotton shirt laptop bag I will search then recommend "
    "You are a shopping assistant Use tools search catalogue inspect products Tools may call one "
    "or more functions assist user query provided signatures within XML tags For each call return "
    "json with",
)


def build_tokenizer(corpus: Iterable[str] | None = None):
    from oro_assets.training.tiny_model import build_tokenizer as _build

    texts = list(corpus) if corpus is not None else []
    return _build(list(DEFAULT_CORPUS) + texts)


def tiny_random_qwen3(seed: int = 0, *, corpus: Iterable[str] | None = None, hidden_size: int = 32,
                      num_layers: int = 2, max_position_embeddings: int = 4096):
    """(model, tokenizer): a real but untrained Qwen3ForCausalLM; seconds to build on CPU."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = build_tokenizer(corpus)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        max_position_embeddings=max_position_embeddings, tie_word_embeddings=False, bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"), pad_token_id=tokenizer.pad_token_id,
        use_cache=True,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config).eval()
    return model, tokenizer


class ScriptedLM:
    """``generate`` returns ``respond(prompt_text)`` as the completion of each row.

    Only what ``LocalModelPolicy`` uses is implemented: ``config``, ``device`` and ``generate``.
    ``calls`` records the batch size of each ``generate`` call.
    """

    def __init__(self, tokenizer: Any, respond: Callable[[str], str], max_position_embeddings: int = 100_000) -> None:
        self.tokenizer = tokenizer
        self.respond = respond
        self.config = SimpleNamespace(_name_or_path="scripted-lm", max_position_embeddings=max_position_embeddings)
        self.device = None
        self.calls: list[int] = []
        self.kwargs: list[dict] = []

    def generate(self, input_ids, attention_mask, **kwargs):
        import torch

        self.calls.append(int(input_ids.shape[0]))
        self.kwargs.append(dict(kwargs))
        eos = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        pad = kwargs.get("pad_token_id", self.tokenizer.pad_token_id)
        rows = []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist(), strict=True):
            prompt = self.tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m], skip_special_tokens=False)
            new = self.tokenizer(self.respond(prompt), add_special_tokens=False)["input_ids"]
            rows.append(list(new)[: kwargs.get("max_new_tokens", 10**9) - 1] + [eos])
        width = max(len(r) for r in rows)
        new_part = torch.tensor([r + [pad] * (width - len(r)) for r in rows], dtype=torch.long)
        return torch.cat([input_ids, new_part], dim=1)


class ScriptedStepLM:
    """A torch "model" for the rollout engine whose next token follows ``respond(prompt_text)``.

    It stores each token's id as its key in the engine's KV cache and reads every row's history back from
    there, so a wrong slot, position or mask in the cache shows up as a wrong conversation. The prompt is
    everything up to the last ``<|im_start|>assistant`` header; the tokens after it are what it has said.
    """

    def __new__(cls, tokenizer: Any, respond: Callable[[str], str], max_position_embeddings: int = 100_000):
        import torch

        class _Decoder(torch.nn.Module):
            def __init__(self, outer: Any) -> None:
                super().__init__()
                self.outer = outer

            def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None, use_cache=True, **_):
                return self.outer._step(input_ids, attention_mask, position_ids, cache)

        class _Model(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.anchor = torch.nn.Parameter(torch.zeros(1), requires_grad=False)
                self.tokenizer, self.respond = tokenizer, respond
                vocab = len(tokenizer)
                self.config = SimpleNamespace(
                    _name_or_path="scripted-step-lm", max_position_embeddings=max_position_embeddings,
                    num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1, head_dim=1,
                    hidden_size=vocab, layer_types=["full_attention"])
                self._decoder = _Decoder(self)
                self._head = torch.nn.Identity()
                self._eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
                self._header = [tokenizer.convert_tokens_to_ids("<|im_start|>"),
                                *tokenizer("assistant\n", add_special_tokens=False)["input_ids"]]
                self._memo: dict[tuple, list[int]] = {}
                self.forward_rows: list[int] = []

            def get_decoder(self):
                return self._decoder

            def get_output_embeddings(self):
                return self._head

            def _script(self, prompt: tuple) -> list[int]:
                if prompt not in self._memo:
                    text = self.tokenizer.decode(list(prompt), skip_special_tokens=False)
                    self._memo[prompt] = list(self.tokenizer(self.respond(text), add_special_tokens=False)["input_ids"])
                return self._memo[prompt]

            def _step(self, input_ids, attention_mask, position_ids, cache):
                import bisect

                ids = input_ids.to(torch.float32)[:, None, :, None]
                keys, _ = cache.update(ids, ids, 0)
                b, q = input_ids.shape
                self.forward_rows.append(b)
                out = torch.zeros((b, q, self.config.hidden_size))
                h, n = self._header, len(self._header)
                for i in range(b):
                    row = keys[i, 0, :, 0].round().long().tolist()
                    ends = [j + n for j in range(len(row) - n + 1) if row[j:j + n] == h]
                    scripts: dict[int, list[int]] = {}
                    for t in range(q):
                        upto = int(position_ids[i, t]) + 1          # the history is row[:upto]
                        k = bisect.bisect_right(ends, upto) - 1
                        nxt = self._eos
                        if k >= 0:
                            cut = ends[k]
                            if cut not in scripts:
                                scripts[cut] = self._script(tuple(row[:cut]))
                            said = upto - cut
                            nxt = scripts[cut][said] if said < len(scripts[cut]) else self._eos
                        out[i, t, nxt] = 1.0
                return SimpleNamespace(last_hidden_state=out)

        return _Model()


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Tiny models run fastest on one thread; two spinning threads crawl on a shared, loaded CI box."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
