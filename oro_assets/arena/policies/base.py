"""Shared machinery of the scripted miner population.

Scripted policies are per-episode state machines. They are built with the problem (an
"oracle" standing in for a miner's skill): it decides which words to search and which
candidate to pick, but everything a policy *writes* (thinking, arguments) only uses what is
visible in the query and in tool results, so a student model can imitate it.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Any

from oro_assets import jsonio
from oro_assets.arena.episode import ToolCall, Turn

STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "for", "with", "of", "to", "in", "on", "at", "by", "from", "is", "are", "be", "i", "im", "i'm", "me", "my", "we", "you", "your", "it", "its", "this", "that", "these", "those", "some", "any", "show", "find", "looking", "look", "need", "want", "wants", "get", "give", "also", "can", "could", "would", "like", "please", "help", "products", "product", "item", "items", "both", "one", "two", "them", "which", "what", "who", "whose", "priced", "price", "prices", "pesos", "peso", "php", "between", "above", "below", "under", "over", "less", "than", "more", "than", "only", "just", "but", "not", "no", "as", "so", "if", "into", "per", "it's", "shop", "store", "offering", "offers", "sells", "sell", "same", "available", "budget", "voucher", "total"]
)
_WORD_RE = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
_SPLIT_RE = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _SPLIT_RE.findall(text.lower())


def query_tokens(query: str) -> list[str]:
    """Query words in order (lower-cased alphanumeric runs)."""
    return _SPLIT_RE.findall(query.lower())


_ORDINAL_CLAUSE = re.compile(
    r"\b(first|second|third|fourth)\s*,\s*a\s+(.*?)(?=[.?!]?\s+(?:second|third|fourth)\s*,|[.?!]?\s*$)",
    re.IGNORECASE | re.DOTALL)


def ordinal_clause(query: str, n: int, upto: Sequence[str] = ()) -> str | None:
    """The ``n``-th item (1-based) of a request that lists its items by ordinals ("First, a ... Second, a ..."), as
    the request words it, whitespace collapsed: "Second, a dule hydrating moisturizer priced between 234 and 386
    pesos". ``upto``: cut after the last of these words the clause holds ("Second, a dule hydrating moisturizer" for
    the item's key words). None when the request does not list items that way."""
    clauses = [m.group(0) for m in _ORDINAL_CLAUSE.finditer(query)]
    if len(clauses) < n:
        return None
    tokens = clauses[n - 1].split()
    wanted = {w.lower() for w in upto}
    last = max((i for i, t in enumerate(tokens) if t.lower().strip(".,?!") in wanted), default=None)
    if last is not None:
        tokens = tokens[: last + 1]
    return " ".join(tokens).rstrip(".?!")


def key_words(query: str, title: str, limit: int = 5) -> list[str]:
    """Query words (in query order) that also occur in the reward title, without stopwords."""
    title_words = set(words(title))
    out: list[str] = []
    for w in query_tokens(query):
        if w in STOPWORDS or w.isdigit() or w in out:
            continue
        if w in title_words:
            out.append(w)
        if len(out) >= limit:
            break
    if len(out) < 2:  # query paraphrases the title: fall back to leading title words
        for w in words(title):
            if w not in STOPWORDS and not w.isdigit() and w not in out:
                out.append(w)
            if len(out) >= 3:
                break
    return out


def _fmt_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def price_bounds(item: dict) -> tuple[float | None, float | None]:
    lo = hi = None
    for cond in item.get("price") or []:
        if not isinstance(cond, dict):
            continue
        for key, pair in cond.items():
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                continue
            a, b = pair
            if key == "between":
                lo, hi = a, b
            elif key == "less than":
                hi = b
            elif key == "greater than":
                lo = a
    return lo, hi


def price_arg(item: dict) -> str | None:
    """The reward's price range as a ``find_product`` filter ("lo-hi" / "lo-" / "0-hi")."""
    lo, hi = price_bounds(item)
    if lo is None and hi is None:
        return None
    return f"{_fmt_num(lo) if lo is not None else '0'}-{_fmt_num(hi) if hi is not None else ''}"


def price_text(item: dict) -> str:
    lo, hi = price_bounds(item)
    if lo is None and hi is None:
        return "any"
    return f"{_fmt_num(lo) if lo is not None else '0'}-{_fmt_num(hi) if hi is not None else 'up'}"


def service_arg(item: dict) -> str | None:
    svc = [s for s in item.get("service") or [] if isinstance(s, str)]
    return ",".join(svc) if svc else None


def price_ok(item: dict, price: Any) -> bool:
    lo, hi = price_bounds(item)
    try:
        p = float(price)
    except (TypeError, ValueError):
        return False
    return (lo is None or p >= lo) and (hi is None or p <= hi)


def service_ok(item: dict, service: Any) -> bool:
    have = {str(s).lower() for s in service or []}
    return all(str(s).lower() in have for s in item.get("service") or [])


def words_ok(keys: list[str], title: str) -> bool:
    tw = set(words(title or ""))
    return all(k in tw for k in keys)


def _norm(v: Any) -> str:
    return re.sub(r"\s+", " ", str(v).strip().lower())


def sku_ok(item: dict, detail: dict | None) -> bool | None:
    """Sku options and attributes of the reward against a viewed product (None = nothing to check)."""
    wanted_sku: dict[str, str] = {}
    for d in item.get("sku_options") or []:
        if isinstance(d, dict):
            wanted_sku.update({str(k): _norm(v) for k, v in d.items()})
    wanted_attr: dict[str, set[str]] = {}
    for d in item.get("attributes") or []:
        if isinstance(d, dict):
            for k, vs in d.items():
                wanted_attr.setdefault(str(k), set()).update(_norm(v) for v in (vs if isinstance(vs, list) else [vs]))
    if not wanted_sku and not wanted_attr:
        return None
    if detail is None:
        return False
    if wanted_sku:
        skus = [s for s in (detail.get("sku_options") or {}).values() if isinstance(s, dict)]
        if not any(all(_norm(s.get(k, "")) == v for k, v in wanted_sku.items()) for s in skus):
            return False
    attrs = detail.get("attributes") or {}
    for k, vs in wanted_attr.items():
        have = attrs.get(k) or []
        have_n = {_norm(v) for v in (have if isinstance(have, list) else [have])}
        if not vs <= have_n:
            return False
    return True


def needs_view(item: dict) -> bool:
    return bool(item.get("sku_options") or item.get("attributes"))


def sku_text(item: dict) -> str:
    parts = []
    for d in item.get("sku_options") or []:
        if isinstance(d, dict):
            parts.extend(f"{k} {v}" for k, v in d.items())
    for d in item.get("attributes") or []:
        if isinstance(d, dict):
            for k, vs in d.items():
                parts.append(f"{k} {', '.join(str(v) for v in vs) if isinstance(vs, list) else vs}")
    return "; ".join(parts)


# --------------------------------------------------------------------------- conversation helpers


def last_results(messages: list[dict]) -> list[Any]:
    """Parsed contents of the trailing tool messages (the results of the previous turn)."""
    out: list[Any] = []
    for m in reversed(messages):
        if m.get("role") != "tool":
            break
        try:
            out.append(jsonio.loads(m["content"]))
        except (jsonio.JSONDecodeError, KeyError, TypeError):
            out.append(None)
    out.reverse()
    return out


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


def chat_completion(
    *, seed: str, model: str, think: str = "", content: str = "", tool_calls: list[ToolCall] | None = None,
    prompt_tokens: int = 0, created: int = 1_767_225_600, extra_tokens: int = 0,
) -> dict:
    """An OpenAI chat-completion response as the proxy returns it (deterministic ids)."""
    h = hashlib.md5(f"{seed}|{think}|{content}".encode()).hexdigest()
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if think:
        message["reasoning_content"] = think
    tokens = estimate_tokens(think) + estimate_tokens(content) + extra_tokens
    if tool_calls:
        calls = []
        for i, c in enumerate(tool_calls):
            args = c.arguments_json()
            tokens += estimate_tokens(args) + 6
            calls.append({"id": f"call_{h[i * 4 : i * 4 + 12]}", "type": "function",
                          "function": {"name": c.name, "arguments": args}})
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{h[:24]}",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop",
                     "logprobs": None}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": tokens,
                  "total_tokens": prompt_tokens + tokens},
    }


def prompt_tokens_of(messages: list[dict]) -> int:
    return sum(len(m.get("content") or "") + len(m.get("reasoning_content") or "") for m in messages) // 4 + 350


def llm_turn(
    think: str, calls: list[ToolCall], *, seed: str, model: str, messages: list[dict], response: str = "",
    temperature: float = 0.0, retries: tuple[int, ...] = (), failed_calls: tuple[int | None, ...] = (),
) -> Turn:
    """A turn whose calls the model emitted: one inference whose response carries them."""
    resp = chat_completion(seed=seed, model=model, think=think, content=response, tool_calls=calls,
                           prompt_tokens=prompt_tokens_of(messages))
    meta: dict[str, Any] = {"model": model, "temperature": temperature}
    if retries:
        meta["retries"] = list(retries)
    if failed_calls:
        meta["failed_calls"] = list(failed_calls)
    return Turn(think=think, tool_calls=calls, response=response, inference=[resp], meta=meta)
