"""Token counts for the format gate's budget, with the active model profile's tokenizer.

A trace is counted as its profile's SFT stage would feed it to the model: the profile's view of the
messages and tools (``data.sft_example``) rendered by the tokenizer's chat template. Counting is exact
and cheap where it can be:

* a rendering of at most ``budget`` bytes cannot exceed ``budget`` tokens (every token of a BPE or
  word-level tokenizer covers at least one byte), so it is never tokenised;
* Hugging Face tokenizers cut a text at added tokens (``<|im_start|>``, ``<tool_call>``, ...) before
  anything else, so a rendering's count is the sum of its pieces' counts plus one per added token.
  Pieces repeat across a day (95% of tool results are repeats), so their counts are cached. The
  constructor checks the sum against whole-text counts on probe texts and counts whole texts if a
  tokenizer ever disagrees.

The tokenizer: ``qwen3-4b`` loads its weights' tokenizer from ``ORO_QWEN3_4B_PATH`` (local files only);
``tiny`` builds the tiny profile's tokenizer (``tiny_model.build_tokenizer``) over the arena world's
corpus, a pure function of the catalogue and problems. Where none can be had, the gate falls back to
the byte estimate and says so (``TokenCounter.name``).
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.toolcalls import FIND_PRODUCT
from oro_assets.training.data import sft_example

_PIECE_CACHE = 1 << 14
_CACHED_PIECE_CHARS = 4096  # longer pieces (thinking, mostly unique) are counted, not kept


class TemplateTokenCounter:
    """``count(messages, tools)``: tokens of the chat-template rendering of a trace under ``view``."""

    def __init__(self, tokenizer: Any, view: str, name: str) -> None:
        self.tokenizer = tokenizer
        self.view = view
        self.name = name
        added = sorted({t.content for t in tokenizer.added_tokens_decoder.values() if t.content}, key=len, reverse=True)
        self._added = frozenset(added)
        self._split = re.compile("(" + "|".join(map(re.escape, added)) + ")") if added else None
        self._piece = functools.lru_cache(maxsize=_PIECE_CACHE)(self._count_piece)
        self.by_pieces = self._split is not None and self._pieces_agree()
        from oro_assets.arena.tools import TOOL_SCHEMAS

        tools_text = jsonio.template_dumps(TOOL_SCHEMAS)
        self.fixed_bytes = max(0, len(self.render([{"role": "user", "content": ""}, {"role": "assistant", "content": ""}], TOOL_SCHEMAS).encode())
                               - len(tools_text.encode())) + 256

    def viewed(self, messages: list[dict], tools: Any) -> dict:
        """The trace as the profile's SFT stage sees it: ``{id, messages, tools}`` under ``self.view``."""
        return sft_example({"id": "budget", "messages": messages, "tools": tools}, self.view)

    def render(self, messages: list[dict], tools: Any) -> str:
        return self._template(self.viewed(messages, tools))

    def _template(self, ex: dict) -> str:
        return self.tokenizer.apply_chat_template(ex["messages"], tools=jsonio.loads(ex["tools"]) or None,
                                                  tokenize=False)

    def view_bound_bytes(self, ex: dict) -> int:
        """A bound on the template's output for a viewed trace, without running the template: every
        string it renders (content, thinking, call names, arguments, tool schemas) a quarter longer for
        the spaces ``tojson`` adds, the template's fixed text, and 64 bytes a message or call for tags."""
        n = sum(len(str(v).encode()) for m in ex["messages"] for k, v in m.items() if v is not None and k != "tool_calls")
        parts = 0
        for m in ex["messages"]:
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                n += len(str(fn.get("name") or "").encode()) + len(str(fn.get("arguments") or "").encode())
                parts += 1
        return (n + len(ex["tools"].encode())) * 5 // 4 + self.fixed_bytes + 64 * (len(ex["messages"]) + parts)

    def count(self, messages: list[dict], tools: Any, budget: int | None = None) -> int | None:
        """Tokens of the rendering; ``None`` when a ``budget`` is given and the rendering provably has at
        most that many bytes (so at most that many tokens): then nothing is tokenised."""
        try:
            ex = self.viewed(messages, tools)
            if budget is not None and self.view_bound_bytes(ex) <= budget:
                return None
            text = self._template(ex)
        except Exception:  # a trace the view cannot render (hostile values): count its JSON, never less
            text = jsonio.template_dumps(tools) + "".join(jsonio.template_dumps(m) for m in messages)
        if budget is not None and len(text.encode()) <= budget:
            return None
        return self.count_text(text)

    def upper_bound_bytes(self, stored_bytes: int, n_messages: int) -> int:
        """A bound on the rendering's bytes from the stored JSON size of messages + tools: the
        template's fixed text, 64 bytes a message for role tags and call/response wrappers, and a
        quarter more for the spaces ``tojson`` puts into tool schemas and arguments."""
        return stored_bytes * 5 // 4 + self.fixed_bytes + 64 * n_messages

    def count_text(self, text: str) -> int:
        if not self.by_pieces:
            return self._whole(text)
        total = 0
        for piece in self._split.split(text):
            if not piece:
                continue
            if piece in self._added:
                total += 1
            else:
                total += self._piece(piece) if len(piece) <= _CACHED_PIECE_CHARS else self._whole(piece)
        return total

    def _whole(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _count_piece(self, piece: str) -> int:
        return self._whole(piece)

    def _pieces_agree(self) -> bool:
        tool_call = {"id": "c1", "type": "function",
                     "function": {"name": FIND_PRODUCT, "arguments": '{"q": "red tea 200ml", "page": 1}'}}
        probe = [
            {"role": "system", "content": "You shop.  Twice\n\nspaced."},
            {"role": "user", "content": "a red tea, 200ml, under 50 pesos ü"},
            {"role": "assistant", "content": "", "reasoning_content": "search first", "tool_calls": [tool_call]},
            {"role": "tool", "tool_call_id": "c1", "name": FIND_PRODUCT,
             "content": '[{"product_id": "2957902842", "title": "Red Tea 200ml", "price": 45.5}]'},
            {"role": "assistant", "content": "done <think>x</think>", "reasoning_content": None},
        ]
        try:
            text = self.render(probe, [])
        except Exception:  # a template that cannot render the probe: count whole texts
            return False
        texts = [text, text.replace("\n", " "), "<|im_start|>user\nhi<|im_end|>", "plain words only"]
        by_pieces = [sum(1 if p in self._added else self._whole(p) for p in self._split.split(t) if p) for t in texts]
        return by_pieces == [self._whole(t) for t in texts]


def _world_digest(catalogue: Path, problems: Path) -> str:
    h = hashlib.sha256()
    for path in (catalogue, problems):
        h.update(path.read_bytes() if path.exists() else b"")
        h.update(b"\x00")
    return h.hexdigest()[:16]


def _build_tiny_tokenizer(catalogue: Path, problems: Path) -> Any:
    from oro_assets import jsonio
    from oro_assets.arena.problems import load_problems
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training.corpus import arena_corpus_texts
    from oro_assets.training.tiny_model import build_tokenizer

    probs = load_problems(problems) if problems.exists() else []
    with open(catalogue, "rb") as fh:  # product dicts only: a Catalogue would also build its search index
        products = [jsonio.loads(line) for line in fh if line.strip()]
    return build_tokenizer(arena_corpus_texts(products, probs, TOOL_SCHEMAS))


def tiny_tokenizer(catalogue: Path, problems: Path, cache_dir: Path | None = None) -> Any:
    """The tiny profile's tokenizer over the arena world's corpus. With ``cache_dir`` it is built once
    per world, in a child process (building takes ~400 MB for a 20k-product catalogue; loading ~3 MB),
    and saved under ``cache_dir/tiny-<world digest>``."""
    if cache_dir is None:
        return _build_tiny_tokenizer(catalogue, problems)
    from transformers import PreTrainedTokenizerFast

    target = Path(cache_dir) / f"tiny-{_world_digest(catalogue, problems)}"
    if not (target / "tokenizer.json").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            subprocess.run([sys.executable, "-m", "oro_assets.training.token_count", str(catalogue), str(problems),
                            str(tmp)], check=True, capture_output=True, text=True)
            if target.exists():  # built meanwhile by another process: same world, same tokenizer
                shutil.rmtree(tmp)
            else:
                tmp.rename(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return PreTrainedTokenizerFast.from_pretrained(str(target))


def profile_token_counter(profile: Any, catalogue_path: str | Path | None = None,
                          problems_path: str | Path | None = None,
                          cache_dir: str | Path | None = None) -> tuple[TemplateTokenCounter | None, str]:
    """(counter, description) for ``profile``; counter ``None`` (description says why) when its
    tokenizer cannot be had here, so the caller falls back to the byte estimate. ``cache_dir``
    keeps built tiny tokenizers (see :func:`tiny_tokenizer`)."""
    if profile.model_source == "tiny":
        if catalogue_path is None or not Path(catalogue_path).exists():
            return None, "byte estimate: the tiny tokenizer needs the arena catalogue, which is not built yet"
        probs = Path(problems_path) if problems_path else Path(catalogue_path).with_name("problems.jsonl")
        tok = tiny_tokenizer(Path(catalogue_path), probs, Path(cache_dir) if cache_dir else None)
        return TemplateTokenCounter(tok, profile.view, f"tiny tokenizer over the arena corpus ({profile.view} view)"), ""
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(profile.model_source), local_files_only=True)
    except Exception as exc:
        return None, (f"byte estimate: the {profile.name} tokenizer could not be loaded from "
                      f"{profile.model_source!s} ({type(exc).__name__})")
    return TemplateTokenCounter(tok, profile.view, f"{profile.name} tokenizer ({profile.model_source})"), ""


if __name__ == "__main__":  # python -m oro_assets.training.token_count CATALOGUE PROBLEMS OUT_DIR
    _build_tiny_tokenizer(Path(sys.argv[1]), Path(sys.argv[2])).save_pretrained(sys.argv[3])
