"""The tiny profile's base model: a from-scratch Qwen3ForCausalLM and a word-level tokenizer.

Why word-level: a tiny model learns to *copy* (query words into search arguments, product ids
into ``recommend_product``) only when a word is the same single token in every context (stack
notes, "Learnability"). The tokenizer therefore splits text into letter runs, numbers and single
characters; a single space between two letter runs is implicit (dropped when encoding, restored
by the decoder), every other whitespace is an explicit token. Text is lower-cased, so a word in a
query and the same word in a result title are one token (decoding gives lower-case text). Long digit runs (product ids) are
(product ids, prices) are cut into 2-digit chunks, all of which are always in the vocabulary, so
any number encodes and every chunk is a well-trained token. Encoding then decoding is lossless (up to case) for any text whose words are in the vocabulary.

The tokenizer carries Qwen3's special tokens and the exact Qwen3 chat template text shipped with
TRL, so TRL recognises it and swaps in its training template (assistant-only masks) exactly as
for the real Qwen3 checkpoints.
"""

from __future__ import annotations

import collections
import dataclasses
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

QWEN3_SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
    "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
)
UNK_TOKEN = "<|unk|>"
# Letter runs; 2-digit chunks of digit runs; whitespace runs; runs of punctuation (with single inner spaces,
# so JSON glue like '": "' or '", "' is one token); any other single character.
_PIECE_RE = r"[A-Za-z]+|[0-9]{1,2}|\s+|[^A-Za-z0-9\s]+(?: [^A-Za-z0-9\s]+)*|."
_IMPLICIT_SPACE_RE = r"(?<=[A-Za-z]) (?=[A-Za-z])"
_py_piece = re.compile(_PIECE_RE, re.S)
_py_implicit = re.compile(_IMPLICIT_SPACE_RE)


def qwen3_chat_template() -> str:
    """The original Qwen3 chat template, byte-identical to the one TRL recognises."""
    from trl import chat_template_utils

    return chat_template_utils.qwen3_chat_template


def word_pieces(text: str) -> list[str]:
    """Python mirror of the tokenizer's pre-tokenisation (used to build the vocabulary)."""
    out: list[str] = []
    for chunk in _py_implicit.split(text):
        out.extend(_py_piece.findall(chunk))
    return out


def build_tokenizer(corpus_texts: Iterable[str], min_count: int = 1, max_vocab: int = 32_000):
    """A word-level ``PreTrainedTokenizerFast`` over ``corpus_texts`` with Qwen3's special tokens.

    Deterministic: pieces are ordered by (-count, piece). All printable ASCII characters are always
    in the vocabulary so punctuation and JSON never fall back to the unknown token.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    counts: collections.Counter[str] = collections.Counter()
    specials_re = re.compile("|".join(re.escape(t) for t in QWEN3_SPECIAL_TOKENS))
    for text in corpus_texts:
        for part in specials_re.split(text):
            counts.update(word_pieces(part.lower()))
    base = [chr(c) for c in range(32, 127)] + ["\n", "\n\n", "\t", "  "] + [f"{i:02d}" for i in range(100)]
    vocab: dict[str, int] = {UNK_TOKEN: 0}
    for piece in base:
        vocab.setdefault(piece, len(vocab))
    ranked = sorted(((p, c) for p, c in counts.items() if c >= min_count and p not in vocab),
                    key=lambda pc: (-pc[1], pc[0]))
    for piece, _ in ranked[: max(0, max_vocab - len(vocab) - len(QWEN3_SPECIAL_TOKENS))]:
        vocab[piece] = len(vocab)

    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK_TOKEN))
    # Lower-case: "Zesenu" in a result title and "zesenu" in the query must be the same token.
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_IMPLICIT_SPACE_RE), behavior="removed"),
        pre_tokenizers.Split(Regex(_PIECE_RE), behavior="isolated"),
    ])
    # Mark letter tokens at both ends, join, turn "end|start" marks into the implicit space, drop the rest.
    tok.decoder = decoders.Sequence([
        decoders.Replace(Regex(r"^(?=[A-Za-z])"), "\x01"),
        decoders.Replace(Regex(r"(?<=[A-Za-z])$"), "\x02"),
        decoders.Fuse(),
        decoders.Replace("\x02\x01", " "),
        decoders.Replace("\x01", ""),
        decoders.Replace("\x02", ""),
    ])
    tok.add_special_tokens(list(QWEN3_SPECIAL_TOKENS))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=UNK_TOKEN,
        model_max_length=32_768,
    )
    fast.chat_template = qwen3_chat_template()
    return fast


def build_base_model(out_dir: str | Path, corpus_texts: Iterable[str], seed: int = 0, arch=None) -> Path:
    """Build tokenizer + randomly initialised Qwen3ForCausalLM (seeded) and save both to ``out_dir``."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from oro_assets.training.profiles import TinyArch

    arch = arch or TinyArch()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(corpus_texts)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_hidden_layers,
        num_attention_heads=arch.num_attention_heads,
        num_key_value_heads=arch.num_key_value_heads,
        head_dim=arch.head_dim,
        max_position_embeddings=arch.max_position_embeddings,
        tie_word_embeddings=arch.tie_word_embeddings,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        use_cache=True,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = [tokenizer.convert_tokens_to_ids("<|im_end|>"),
                                            tokenizer.convert_tokens_to_ids("<|endoftext|>")]
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def build_base_checkpoint(profile: Any, out_root: str | Path, catalogue: Iterable[dict], problems: Iterable[dict],
                          tools: list[dict] | None = None, seed: int = 0, extra_texts: Iterable[str] = ()) -> Path:
    """``<out_root>/base/<version>/`` for the profile: the tiny model built here, or a pointer to real weights.

    The tiny model is a pure function of (corpus, arch, seed); its version hashes exactly those.
    For qwen3-4b the base checkpoint is ``profile.model_source`` itself (returned unchanged).
    """
    from oro_assets import jsonio
    from oro_assets.training import checkpoints as ck
    from oro_assets.training.corpus import arena_corpus_texts, rendered_examples

    if profile.model_source != "tiny":
        return Path(profile.model_source)
    if tools is None:
        from oro_assets.arena.tools import TOOL_SCHEMAS

        tools = TOOL_SCHEMAS
    problems = list(problems)
    texts = arena_corpus_texts(catalogue, problems, tools, extra_texts)
    texts += rendered_examples(build_tokenizer([]), _probe_rows(problems[:20], tools), profile.view)
    version = jsonio.content_hash({"corpus": jsonio.content_hash(texts), "arch": dataclasses.asdict(profile.arch),
                                   "seed": seed, "view": profile.view})[:16]
    final = ck.checkpoint_dir(out_root, "base", version)
    if (final / "model" / "config.json").exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{version}.", dir=final.parent))
    build_base_model(tmp / "model", texts, seed=seed, arch=profile.arch)
    ck.write_json(tmp / "config.json", {"profile": profile.name, "stage": "base", "arch": dataclasses.asdict(profile.arch),
                                        "seed": seed, "view": profile.view})
    ck.write_json(tmp / "metrics.json", {"history": [], "n_examples": 0, "corpus_texts": len(texts)})
    ck.write_manifest(tmp, [], [])
    ck.write_json(tmp / ck.META_FILE, {"stage": "base", "version": version, "parent_version": None,
                                       "parent_path": None, "profile": profile.name, "view": profile.view,
                                       "dtype": profile.dtype})
    ck.finalize_dir(tmp, final)
    return final


def _probe_rows(problems: list[dict], tools: list[dict]) -> list[dict]:
    """Chats with every message shape (tool call, tool result) so the template's words enter the vocabulary."""
    import json

    from oro_assets.arena.episode import SYSTEM_PROMPT

    rows = []
    for i, p in enumerate(problems or [{"query": "find a product"}]):
        args = json.dumps({"q": p["query"][:40], "price": "10-100"})
        rows.append({"id": f"probe_{i}", "tools": json.dumps(tools), "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": p["query"]},
            {"role": "assistant", "content": "", "reasoning_content": "Search.", "tool_calls": [
                {"id": "call_1_0", "type": "function", "function": {"name": "find_product", "arguments": args}}]},
            {"role": "tool", "tool_call_id": "call_1_0", "name": "find_product", "content": "[]"},
            {"role": "assistant", "content": "", "reasoning_content": "Done.", "tool_calls": [
                {"id": "call_2_0", "type": "function", "function": {"name": "terminate",
                                                                   "arguments": "{\"status\": \"failure\"}"}}]},
        ]})
    return rows
