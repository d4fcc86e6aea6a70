"""Title similarity used by the scorer's title check (pluggable).

ORO compares a recommended product's title with the reward title by cosine similarity of
Qwen3-Embedding-0.6B vectors (threshold 0.7; ShoppingBench used 0.5). No embedding model is
available offline, so the default is **lexical**: cosine of binary token sets,
``|A & B| / sqrt(|A| * |B|)`` over lower-cased word tokens. Why this measure: identical titles
score exactly 1.0 (ground-truth products carry the reward title verbatim), word order,
repetition, case and punctuation do not matter (like an embedding), and unlike Jaccard a
title that is a strict sub-/super-set of the other with a few extra words still clears 0.7
(Jaccard punishes long marketing titles twice).
An embedding similarity plugs in through :class:`EmbeddingSimilarity` (any ``encode`` function).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

ORO_TITLE_THRESHOLD = 0.7
SHOPPINGBENCH_TITLE_THRESHOLD = 0.5

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


class TitleSimilarity(Protocol):
    name: str

    def __call__(self, title: str, reward_title: str) -> float: ...


class LexicalSimilarity:
    """Binary token-set cosine similarity (see module docstring)."""

    name = "lexical-token-cosine"

    def __call__(self, title: str, reward_title: str) -> float:
        a, b = set(tokens(title)), set(tokens(reward_title))
        if not a or not b:
            return 0.0
        return len(a & b) / math.sqrt(len(a) * len(b))


class EmbeddingSimilarity:
    """Cosine of embedding vectors; ``encode(list[str]) -> array (n, d)``. Caches vectors by text."""

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray], name: str = "embedding") -> None:
        self._encode = encode
        self._cache: dict[str, np.ndarray] = {}
        self.name = name

    def _vec(self, text: str) -> np.ndarray:
        v = self._cache.get(text)
        if v is None:
            v = np.asarray(self._encode([text]), dtype=np.float64).reshape(-1)
            self._cache[text] = v
        return v

    def __call__(self, title: str, reward_title: str) -> float:
        a, b = self._vec(title), self._vec(reward_title)
        denom = float(np.linalg.norm(a) * np.linalg.norm(b))
        return float(a @ b) / denom if denom else 0.0


def best_title_similarity(similarity: TitleSimilarity, title: str, reward_titles: Sequence[str]) -> float:
    """A reward's ``title`` is a list: the best match over its entries counts."""
    return max((similarity(title, t) for t in reward_titles if isinstance(t, str)), default=0.0)


def default_similarity() -> TitleSimilarity:
    return LexicalSimilarity()


def load_embedding_similarity(model_path: str) -> EmbeddingSimilarity | None:
    """Qwen3-Embedding-style similarity (last-token pooling, L2-normalised) from a LOCAL model path
    via transformers; None when the model cannot be loaded (offline, not installed)."""
    from pathlib import Path

    if not Path(model_path).exists():
        return None
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(model_path, padding_side="left", local_files_only=True)
        model = AutoModel.from_pretrained(model_path, local_files_only=True).eval()
    except Exception:  # noqa: BLE001 - any loading failure means "no embedding model here"
        return None

    def encode(texts: Sequence[str]) -> np.ndarray:
        with torch.no_grad():
            batch = tok(list(texts), padding=True, truncation=True, max_length=512, return_tensors="pt")
            hidden = model(**batch).last_hidden_state[:, -1]
            return torch.nn.functional.normalize(hidden, dim=-1).float().numpy()

    return EmbeddingSimilarity(encode, name=f"embedding:{model_path}")


def make_similarity(spec: str | None) -> TitleSimilarity:
    """``None``/"lexical" -> lexical; "embedding:<local path>" -> that model (falls back to lexical if unloadable)."""
    if spec and spec.startswith("embedding:"):
        sim = load_embedding_similarity(spec.split(":", 1)[1])
        if sim is not None:
            return sim
    return LexicalSimilarity()
