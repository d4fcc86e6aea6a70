"""Deterministic rule judge: ORO's four-gate decision tree computed from evidence only.

Every feature is an overlap between a step's thinking and the tool results returned at
*earlier* steps (or the verified proxy-call counts), never a reading of what the text asks
for. Instructions, score suggestions, fake verdicts or padding in the trajectory therefore
cannot raise a score unless they quote real tool data, which is exactly the evidence the gates
ask for.

Gates (stop at the first failure):
1. >= 1 successful inference call with >= 30 completion tokens, else 0.1;
2. a thinking step written after a tool result refers to the results rather than only to the
   query: it talks about them (>= 2 of results, titles, candidates, relevant, others, ... - words
   not taken from the query), uses >= 2 words of the structured result fields that are neither in the query nor
   in the agent's own earlier tool arguments, or cites a datum (gate 3); else 0.3;
3. a thinking step cites a datum that occurs in an earlier tool result and not in the query
   (product or shop id, price, brand, attribute / sku value), else 0.5;
4. one thinking step names >= 2 candidates from earlier results (ids or distinctive title
   trigrams) and has a sentence with comparative / causal language next to a datum or
   candidate, else 0.7; otherwise 0.9.

Lines that address the grading itself (judge, score, gate N, verdict, "ignore previous ...",
system prompt, ...) are not reasoning about the shopping task: they are dropped before any
feature is computed, so injected text can only remove evidence it shares a line with, never add.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache

from oro_assets import jsonio
from oro_assets.judge.base import JudgeResult, verdict
from oro_assets.judge.evidence import StepEvidence, TraceEvidence, parse_trace
from oro_assets.judge.view import THINK_LIMIT
from oro_assets.native import kernels as _kernels

JUDGE_ID = "rule"
#: Characters of a chat-completion body that are not the answer, at most (the dropped-body estimate).
DROPPED_BODY_OVERHEAD = 600
# 1.1: thinking clipped to THINK_LIMIT as ORO shows it; any 2xx inference succeeds.
# 1.2: a dropped body (ORO keeps only its length) counts by that length.
JUDGE_VERSION = "1.2"

# Unicode format characters (category Cf: soft hyphen, zero-width, bidi controls, tags; Unicode 14),
# mapped to None for str.translate. Listed as ranges: scanning all code points costs ~1 s per import.
_CF_RANGES = ((0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891),
              (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064),
              (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
              (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F))
FORMAT_CHARS: dict[int, None] = {cp: None for lo, hi in _CF_RANGES for cp in range(lo, hi + 1)}
_WORD = re.compile(r"[^\W_]+")
_WORD_ASCII = re.compile(r"[A-Za-z0-9]+")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")

def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _wordset(
    """a an the and or but if then else of to in on at by for with from into onto over under about as is are was
    were be been being it its this that these those there here i me my we our you your he she they them their
    his her not no yes do does did done so such than too very can could should would will shall may might must
    have has had having just also only more most less least some any all each every both either neither one two
    three first second last next other others same what which who whom whose when where why how up down out off
    again further once per via let lets let's ok okay now get got go going make made need needs want wants"""
)
# Words an agent uses about its task whatever the results were; they prove nothing about analysis.
AGENT_VOCABULARY = _wordset(
    """product products item items result results search searched searching find found finding price prices priced
    shop shops store seller user query request looking look looks check checking checked view viewing details detail
    information info recommend recommended recommending recommendation option options match matches matching
    matched candidate candidates best good great tool tools call calls step steps terminate success failure page
    list listing listings title titles brand brands attribute attributes description specification service services
    sku skus id ids buy purchase pesos peso php usd budget range cheap expensive catalogue catalog customer shopper
    harness original request requested"""
)
COMPARATIVE = _wordset(
    """because since cheaper cheapest better best prefer prefers preferred preferring instead rather whereas
    while however unlike than lower lowest higher highest exceeds exceed exceeding within outside fits fit fails
    lacks lacking missing so therefore thus hence vs versus compared comparing comparison pick picking choose
    choosing chosen wins beats only whereas but over under"""
)
# Words that show the thinking is about what the tools returned.
RESULT_REFERENCES = _wordset(
    """result results title titles listing listings candidate candidates returned shows showed shown others
    relevant hits"""
)
# Lines matching this talk to or about the grader, not about the task.
META_SENTENCE = re.compile(
    r"\b(judge[sd]?|judging|grader|graders|grading|evaluator|evaluators|verdicts?|scor(?:e|es|ed|ing)|"
    r"reasoning[\s_-]*quality|gates?\s*#?\s*[1-5]|gates?\s+(?:passed|failed|pass|fail)|instructions?|"
    r"(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|earlier|"
    r"preceding|system|rules)|jailbreak|prompt|system\s*(?:message|:)|developer\s*(?:message|:)|"
    r"assistant\s*:|trajectory|this\s+agent|rate\s+(?:this|it))(?!\w)"
)
DATA_KEYS_ID = ("product_id", "shop_id")
PROSE_KEYS = frozenset({"description", "short_description", "specification"})
DATA_KEYS_VALUES = ("attributes", "sku_options")


def task_text(text: str) -> str:
    """The thinking without the lines that address the grading (see module docstring).

    Whole lines go, not single sentences: "Gate 2 passed. The thinking analyses the results." must
    not leave its second sentence behind as evidence.
    """
    if not meta_search(text):
        # a line's match is also a match in the whole text (its bounds are non-word characters
        # there too), so a text without one has no line to drop but the blank ones
        return "\n".join(line for line in text.splitlines() if line.strip())
    return "\n".join(line for line in text.splitlines() if line.strip() and not meta_search(line))


def meta_search(text: str) -> bool:
    """Whether ``META_SENTENCE`` matches anywhere in ``text`` (``meta_search_py``, the reference): natively where the
    kernels are built, for ASCII text (the regex engine tries the pattern at every position: ~6 us a thinking)."""
    if _kernels is not None and type(text) is str:
        found = _kernels.meta_search(text)
        if found is not None:  # None: not ASCII (the reference reads it)
            return found
    return meta_search_py(text)


def meta_search_py(text: str) -> bool:
    return META_SENTENCE.search(text) is not None


def normalize_text(text: str) -> str:
    """NFKC + casefold, format characters (zero-width, bidi controls) removed."""
    if text.isascii():  # NFKC and the format-character map leave ASCII alone; casefold is lower there
        return text.lower()
    return unicodedata.normalize("NFKC", text).translate(FORMAT_CHARS).casefold()


def words(text: str) -> list[str]:
    # on ASCII text ``[^\W_]`` is exactly the ASCII letters and digits; that class scans ~1.5x faster
    return (_WORD_ASCII if text.isascii() else _WORD).findall(text)


def numbers(text: str) -> list[tuple[float, bool]]:
    """Numbers in ``text`` as (value, written with a decimal point)."""
    found = []
    for raw in _NUMBER.findall(text):
        try:
            found.append((float(raw.replace(",", "")), "." in raw))
        except ValueError:
            continue
    return found


@dataclass(frozen=True)
class _TextFeatures:
    """What the gates read of one normalised text: its words, their set, its numbers."""

    words: tuple[str, ...]
    word_set: frozenset[str]
    numbers: tuple[tuple[float, bool], ...]


@lru_cache(maxsize=1 << 12)
def _text_features(text: str) -> _TextFeatures:
    """Per distinct text: thinking, sentences and queries repeat across the steps and traces of a day.
    The caches of per-text features are bounded (a day's memory must not grow with its distinct texts):
    within a trace a step's thinking and its sentences are read several times in a row."""
    both = _kernels.ascii_words_numbers(text) if _kernels is not None and type(text) is str else None
    found, found_numbers = both if both is not None else ascii_words_numbers_py(text)
    return _TextFeatures(found, frozenset(found), found_numbers)


def ascii_words_numbers_py(text: str) -> tuple[tuple[str, ...], tuple[tuple[float, bool], ...]]:
    """The words and numbers of a text (any text: the reference of the native ``ascii_words_numbers``, which reads
    ASCII text in one pass and leaves the rest to this)."""
    return tuple(words(text)), tuple(numbers(text))


@lru_cache(maxsize=1 << 12)
def _think_view(think: str) -> str:
    """A step's thinking as the judge reads it: normalised, grader-addressed lines dropped, clipped to
    what ORO's judge is shown (THINK_LIMIT)."""
    return task_text(normalize_text(think))[:THINK_LIMIT]


@lru_cache(maxsize=1 << 11)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(_SENTENCE.split(text))


@lru_cache(maxsize=1 << 13)
def _argument_words(arguments: str) -> frozenset[str]:
    return frozenset(words(normalize_text(arguments)))


@dataclass(frozen=True)
class _QueryFeatures:
    text: str  # normalised
    words: frozenset[str]
    numbers: frozenset[float]
    words_or_stop: frozenset[str]  # its words and the stopwords: what a datum must go beyond


@lru_cache(maxsize=1 << 12)
def _query_features(query: str) -> _QueryFeatures:
    text = normalize_text(query)
    found = frozenset(words(text))
    return _QueryFeatures(text, found, frozenset(round(n, 2) for n, _ in numbers(text)), found | STOPWORDS)


@lru_cache(maxsize=1 << 16)
def _phrase_words(phrase: str) -> tuple[str, ...]:
    return tuple(words(phrase))


@lru_cache(maxsize=1 << 14)
def _phrase_pattern(phrase: str) -> re.Pattern:
    return re.compile(r"(?<![^\W_])" + re.escape(phrase) + r"(?![^\W_])")


def _contains_phrase(text: str, phrase: str, text_words: set[str] | None = None) -> bool:
    """``phrase`` occurs in ``text`` as whole words; ``text_words`` (the words of ``text``) makes the
    common miss cheap: a phrase whose words are not all among them cannot occur."""
    phrase_words = _phrase_words(phrase)
    if text_words is not None:
        if not phrase_words or not text_words.issuperset(phrase_words):
            return False  # cheap rejection before the regex scan (thinking can be very long)
        if len(phrase_words) == 1 and phrase_words[0] == phrase:
            return True
    return _phrase_pattern(phrase).search(text) is not None


@dataclass
class ResultData:
    """Data that tool results made available up to some step."""

    words: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)  # product and shop ids
    product_ids: set[str] = field(default_factory=set)
    prices: set[float] = field(default_factory=set)
    phrases: set[str] = field(default_factory=set)  # brands, attribute and sku values
    titles: dict[str, tuple[str, ...]] = field(default_factory=dict)  # product id -> title words
    # title trigram -> the one product id whose title has it, or _SEVERAL (see ``trigram_owners``)
    _owners: dict[tuple[str, str, str], object] | None = field(default=None, repr=False, compare=False)
    _firsts: set[str] = field(default_factory=set, repr=False, compare=False)  # first words of _owners' trigrams
    _odd_cache: dict[int, tuple[set[str], list[str]]] = field(default_factory=dict, repr=False, compare=False)
    # the facts merged so far, by id() (held, so an id cannot be reused while this instance lives)
    _absorbed: dict[int, _ResultFacts] = field(default_factory=dict, repr=False, compare=False)

    def odd_product_ids(self) -> list[str]:
        """The product ids that are not one word (matched by a regex scan, not by word lookup)."""
        return _odd(self.product_ids, self._odd_cache)

    def odd_phrases(self) -> list[str]:
        return _odd(self.phrases, self._odd_cache)

    def trigram_owners(self) -> dict[tuple[str, str, str], object]:
        """Title trigram -> the product id whose title has it, or ``_SEVERAL`` when the titles of
        several products have it (kept up to date as titles arrive): only a trigram of one product
        names a candidate."""
        if self._owners is None:
            owners: dict[tuple[str, str, str], object] = {}
            firsts: set[str] = set()  # the first words of the trigrams recorded: of ``owners``' keys
            own_titles(owners, firsts, self.titles.items())
            self._owners, self._firsts = owners, firsts
        return self._owners

    def trigram_firsts(self) -> set[str]:
        """First words of the title trigrams in ``trigram_owners`` (a text trigram not starting with one names
        no product)."""
        self.trigram_owners()
        return self._firsts

    def absorb(self, result_text: str, result_ids: tuple[str, ...]) -> None:
        if result_ids:
            ids = _normalized_ids(result_ids)
            self.ids |= ids
            self.product_ids |= ids
        if not result_text:
            return
        facts = _result_facts(result_text)
        if id(facts) not in self._absorbed:  # the same result again adds nothing to the sets
            self._absorbed[id(facts)] = facts
            self.words |= facts.words
            self.ids |= facts.ids
            self.product_ids |= facts.product_ids
            self.prices |= facts.prices
            self.phrases |= facts.phrases
        if absorb_titles(self.titles, self._owners, self._firsts, facts.titles):
            self._owners = None  # a retitled product: rebuild the index when next asked

    def _read(self, result_text: str) -> None:
        """Collect what one tool result makes available (on an empty instance; see ``_result_facts``)."""
        try:
            parsed = jsonio.loads(result_text)
        except jsonio.JSONDecodeError:
            parsed = None
        if parsed is None:
            self.words.update(words(normalize_text(result_text)))
            return
        if isinstance(parsed, str):
            self.words.update(words(normalize_text(parsed)))
            return
        if _kernels is not None and _kernels.walk_result(
                parsed, self.words, self.ids, self.product_ids, self.prices, self.phrases, self.titles,
                normalize_text, words, numbers):
            return  # the native walk (``oro_assets.native``): the same sets and titles as the two lines below
        texts: list[str] = []  # the structured values' text, split into words in one regex pass
        self._walk(parsed, None, texts)
        self.words.update(words("\n".join(texts)))

    def _walk(self, value: object, key: str | None, texts: list[str]) -> None:
        # ``value`` is parsed JSON: dict, list, str, int, float, bool or None (exact types), so
        # ``type(...) is`` tests suffice; scalars are read in place rather than by a call each
        if type(value) is dict:
            pid = value.get("product_id")
            title = value.get("title")
            if pid is not None and type(title) is str:
                self.titles[normalize_text(str(pid))] = tuple(words(normalize_text(title)))
            for k, v in value.items():
                k = str(k)
                if k in DATA_KEYS_VALUES:
                    self._collect_values(v)
                if type(v) is dict or type(v) is list:
                    self._walk(v, k, texts)
                elif v is not None and v is not True and v is not False:
                    self._scalar(v, k, texts)
            return
        if type(value) is list:
            for item in value:
                if type(item) is dict or type(item) is list:
                    self._walk(item, key, texts)
                elif item is not None and item is not True and item is not False:
                    self._scalar(item, key, texts)
            return
        if value is not None and value is not True and value is not False:
            self._scalar(value, key, texts)

    def _scalar(self, value: object, key: str | None, texts: list[str]) -> None:
        text = normalize_text(value if type(value) is str else str(value))
        if key not in PROSE_KEYS:  # long prose matches anything; structured fields are evidence
            texts.append(text)
        if key is None:
            return
        if key in DATA_KEYS_ID:
            self.ids.add(text)
            if key == "product_id":
                self.product_ids.add(text)
        elif key == "brand":
            self.phrases.add(text.strip())
        elif "price" in key:
            if type(value) is int or type(value) is float:
                self.prices.add(round(float(value), 2))
            else:
                for number, _ in numbers(text):
                    self.prices.add(round(number, 2))

    def _collect_values(self, value: object) -> None:
        if isinstance(value, dict):
            for v in value.values():
                self._collect_values(v)
        elif isinstance(value, list):
            for v in value:
                self._collect_values(v)
        elif isinstance(value, str):
            text = normalize_text(value).strip()
            # "int:xs" style sku values: the part after the prefix is what people write
            self.phrases.add(text.split(":", 1)[1] if ":" in text else text)


_SEVERAL = object()  # a title trigram that several products' titles have


def _own(owners: dict[tuple[str, str, str], object], grams: frozenset[tuple[str, str, str]], pid: str) -> None:
    """Record ``pid``'s title trigrams in ``owners`` (one owner per trigram, else ``_SEVERAL``)."""
    for gram in grams:
        have = owners.get(gram)
        if have is None:
            owners[gram] = pid
        elif have != pid:
            owners[gram] = _SEVERAL


Trigram = tuple[str, str, str]


def own_titles(owners: dict[Trigram, object], firsts: set[str], titles: Iterable[tuple[str, tuple[str, ...]]],
               ) -> None:
    """Each ``(product id, title words)``'s title trigrams recorded in ``owners`` (:func:`_own`) and their first
    words in ``firsts`` (``own_titles_py``, the reference): natively where the kernels are built."""
    if _kernels is not None:
        _kernels.own_titles(owners, firsts, titles, _title_trigrams, _SEVERAL)
    else:
        own_titles_py(owners, firsts, titles)


def own_titles_py(owners: dict[Trigram, object], firsts: set[str], titles: Iterable[tuple[str, tuple[str, ...]]],
                  ) -> None:
    for pid, title_words in titles:
        grams = _title_trigrams(title_words)
        _own(owners, grams, pid)
        firsts.update(gram[0] for gram in grams)


def absorb_titles(titles: dict[str, tuple[str, ...]], owners: dict[Trigram, object] | None, firsts: set[str],
                  new_titles: Iterable[tuple[str, tuple[str, ...]]]) -> bool:
    """A result's ``(product id, title words)`` taken into ``titles`` (``absorb_titles_py``, the reference): natively
    where the kernels are built."""
    if _kernels is not None:
        return _kernels.absorb_titles(titles, owners, firsts, new_titles, _title_trigrams, _SEVERAL)
    return absorb_titles_py(titles, owners, firsts, new_titles)


def absorb_titles_py(titles: dict[str, tuple[str, ...]], owners: dict[Trigram, object] | None, firsts: set[str],
                     new_titles: Iterable[tuple[str, tuple[str, ...]]]) -> bool:
    """Each new or changed title into ``titles``; a new product's trigrams also into ``owners`` and ``firsts``
    while ``owners`` is not None. True when a known product was retitled: ``owners`` is stale (rebuild it)."""
    retitled = False
    for pid, title_words in new_titles:
        before = titles.get(pid)
        if before == title_words:
            continue
        titles[pid] = title_words
        if before is not None:
            retitled, owners = True, None  # rebuilt when next asked: not updated any further
        elif owners is not None:
            own_titles_py(owners, firsts, ((pid, title_words),))
    return retitled


def trigram_names(text_words: tuple[str, ...], firsts: set[str], owners: dict[Trigram, object],
                  words_or_stop: frozenset[str], named: set[str]) -> None:
    """The product ids the text's word trigrams name, added to ``named`` (``trigram_names_py``, the reference):
    natively where the kernels are built."""
    if _kernels is not None and type(text_words) is tuple:
        _kernels.trigram_names(text_words, firsts, owners, words_or_stop, _SEVERAL, named)
    else:
        trigram_names_py(text_words, firsts, owners, words_or_stop, named)


def trigram_names_py(text_words: tuple[str, ...], firsts: set[str], owners: dict[Trigram, object],
                     words_or_stop: frozenset[str], named: set[str]) -> None:
    """Only the text's trigrams that start with the first word of some title trigram can name a product: looked up
    in place, not built for every position of the text; a trigram names the one product whose title has it, unless
    all its words are the query's or stopwords."""
    last = len(text_words) - 2
    for i, word in enumerate(text_words):
        if i >= last:
            break
        if word in firsts:
            gram = (word, text_words[i + 1], text_words[i + 2])
            pid = owners.get(gram, _SEVERAL)
            if pid is not _SEVERAL and not words_or_stop.issuperset(gram):
                named.add(pid)


def _odd(values: set[str], cache: dict[int, tuple[set[str], list[str]]]) -> list[str]:
    """``values`` whose words are not just themselves (in no particular order), kept per set and
    extended by the values added since (these sets only grow, so an unchanged size is an unchanged set)."""
    known = cache.get(id(values))
    if known is None:
        known = cache[id(values)] = (set(), [])
    seen, odd = known
    if len(seen) != len(values):
        new = values - seen
        seen |= new
        odd.extend(v for v in new if _phrase_words(v) != (v,))
    return odd


@lru_cache(maxsize=1 << 13)
def _normalized_ids(result_ids: tuple[str, ...]) -> frozenset[str]:
    return frozenset(normalize_text(pid) for pid in result_ids)


@dataclass(frozen=True)
class _ResultFacts:
    words: frozenset[str]
    ids: frozenset[str]
    product_ids: frozenset[str]
    prices: frozenset[float]
    phrases: frozenset[str]
    titles: tuple[tuple[str, tuple[str, ...]], ...]  # in the order the result lists them


@lru_cache(maxsize=4096)
def _result_facts(result_text: str) -> _ResultFacts:
    """What one tool result text makes available. Miners searching one catalogue for the same
    problems see the same results again and again (95% of a simulated day's results are repeats),
    so each distinct text is read once; the facts are immutable and shared."""
    data = ResultData()
    data._read(result_text)
    return _ResultFacts(frozenset(data.words), frozenset(data.ids), frozenset(data.product_ids),
                        frozenset(data.prices), frozenset(data.phrases), tuple(data.titles.items()))


@dataclass(frozen=True)
class RuleConfig:
    min_completion_tokens: int = 30
    min_result_words: int = 2
    min_reference_words: int = 2  # "No candidate found." alone is not an analysis
    min_candidates: int = 2
    min_phrase_chars: int = 3


@dataclass
class _StepFeatures:
    step: int
    result_words: list[str]
    references: list[str]
    data: list[str]
    candidates: list[str]
    reasoned: bool


class RuleJudge:
    """The offline default judge. Pure function of the trace; no network, no randomness."""

    judge_id = JUDGE_ID
    judge_version = JUDGE_VERSION

    def __init__(self, config: RuleConfig | None = None) -> None:
        self.config = config or RuleConfig()
        self._hashed: tuple[tuple, str] | None = None

    @property
    def config_hash(self) -> str:
        # computed once per configuration (RuleConfig is frozen): the cache asks for it per trace
        key = (self.judge_id, self.judge_version, self.config)
        if self._hashed is None or self._hashed[0] != key:
            self._hashed = (key, jsonio.content_hash(
                {"judge_id": self.judge_id, "version": self.judge_version, "config": asdict(self.config)}))
        return self._hashed[1]

    def judge(self, trace: dict) -> JudgeResult:
        return self.judge_evidence(parse_trace(trace))

    # ---- gates ----
    def judge_evidence(self, evidence: TraceEvidence) -> JudgeResult:
        cfg = self.config
        tokens = [self._completion_tokens(inf) for step in evidence.steps for inf in step.inference
                  if inf.succeeded]
        substantial = [t for t in tokens if t >= cfg.min_completion_tokens]
        if not evidence.proxy_log:
            notes = ["Gate 1 not applicable: the record's format carries no proxy log (a model rollout)."]
        elif not substantial:
            return self._verdict(0.1, f"Gate 1 failed: {len(tokens)} successful inference calls, none with "
                                      f">= {cfg.min_completion_tokens} completion tokens.")
        else:
            notes = [f"Gate 1 passed: {len(substantial)} inference calls with >= {cfg.min_completion_tokens} "
                     "completion tokens."]

        features = self._features(evidence)
        analysing = [f for f in features if len(f.result_words) >= cfg.min_result_words or f.data
                     or len(f.references) >= cfg.min_reference_words]
        if not analysing:
            notes.append("Gate 2 failed: no thinking step refers to earlier tool results beyond restating the query.")
            return self._verdict(0.3, " ".join(notes))
        first = analysing[0]
        notes.append(f"Gate 2 passed: step {first.step} thinking uses tool-result content "
                     f"({', '.join((first.data or first.result_words or first.references)[:4])}).")

        citing = [f for f in features if f.data]
        if not citing:
            notes.append("Gate 3 failed: no thinking step cites an id, price, brand, attribute or shop from an earlier result.")
            return self._verdict(0.5, " ".join(notes))
        notes.append(f"Gate 3 passed: step {citing[0].step} cites {', '.join(citing[0].data[:4])} from earlier results.")

        comparing = [f for f in features if len(f.candidates) >= cfg.min_candidates and f.reasoned]
        if not comparing:
            named = max((len(f.candidates) for f in features), default=0)
            notes.append(f"Gate 4 failed: no thinking step weighs >= {cfg.min_candidates} candidates with a reason "
                         f"(most candidates named in one step: {named}).")
            return self._verdict(0.7, " ".join(notes))
        best = comparing[0]
        notes.append(f"Gate 4 passed: step {best.step} compares {', '.join(best.candidates[:4])} with a stated reason.")
        return self._verdict(0.9, " ".join(notes))

    def _verdict(self, score: float, explanation: str) -> JudgeResult:
        return verdict(score, explanation, self.judge_id, self.judge_version)

    @staticmethod
    def _completion_tokens(inf) -> int:
        if inf.completion_tokens is not None:
            return inf.completion_tokens
        if inf.response_length:
            # ORO dropped the body (over 2,000 characters): what is left is its length; take off a
            # generous envelope (ids, model, usage) and count ~4 characters a token
            return max(0, inf.response_length - DROPPED_BODY_OVERHEAD) // 4
        # usage missing: estimate from the recorded body (~4 chars a token)
        return len(inf.content) // 4

    # ---- features ----
    def _features(self, evidence: TraceEvidence) -> list[_StepFeatures]:
        q = _query_features(evidence.query)
        data = ResultData()
        own_words: set[str] = set()  # words the agent itself put into earlier tool arguments
        out = []
        for step in evidence.steps:
            # ORO's judge reads each step's thinking clipped to 1,000 characters (reference §4): what
            # it cannot see cannot pass a gate. Lines addressed to the grader are dropped first, so
            # injected text cannot push the real reasoning out of view either.
            think = _think_view(step.think)
            if think and (data.words or data.ids):
                out.append(self._step_features(step, think, data, q, own_words))
            for call in step.calls:
                data.absorb(call.result, call.result_product_ids)
                own_words.update(_argument_words(call.arguments))
            for search in step.search:
                data.absorb("", search.result_product_ids)
        return out

    def _step_features(
        self,
        step: StepEvidence,
        think: str,
        data: ResultData,
        q: _QueryFeatures,
        own_words: set[str],
    ) -> _StepFeatures:
        result_words, references = step_words(_text_features(think).words, data.words, q.words, own_words)
        cited = self._cited(think, data, q)
        candidates = self._candidates(think, data, q)
        reasoned = False
        if len(candidates) >= self.config.min_candidates:
            for sentence in _sentences(think):
                if COMPARATIVE.isdisjoint(_text_features(sentence).word_set):
                    continue
                if self._cited(sentence, data, q) or self._candidates(sentence, data, q):
                    reasoned = True
                    break
        return _StepFeatures(step.step, result_words, references, cited, candidates, reasoned)

    def _cited(self, text: str, data: ResultData, q: _QueryFeatures) -> list[str]:
        cited: list[str] = []
        feats = _text_features(text)
        text_words = feats.word_set
        for pid in data.ids & text_words:
            if len(pid) >= 3 and pid not in q.words:
                cited.append(f"id {pid}")
        for number, decimal in feats.numbers:
            value = round(number, 2)
            if value in data.prices and value not in q.numbers and (decimal or number >= 10):
                cited.append(f"price {number:g}")
        # a one-word phrase occurs exactly when it is one of the text's words: only the others are scanned
        # (the order is irrelevant: the citations are returned sorted)
        for phrase in [*(data.phrases & text_words), *data.odd_phrases()]:
            phrase_words = _phrase_words(phrase)
            if (
                len(phrase) >= self.config.min_phrase_chars
                and phrase_words
                and _contains_phrase(text, phrase, text_words)
                and not q.words_or_stop.issuperset(phrase_words)
                and not _contains_phrase(q.text, phrase, q.words)
            ):
                cited.append(f"value {phrase!r}")
        return sorted(set(cited))

    def _candidates(self, text: str, data: ResultData, q: _QueryFeatures) -> list[str]:
        feats = _text_features(text)
        word_set = feats.word_set
        named = {pid for pid in [*(data.product_ids & word_set), *data.odd_product_ids()]
                 if len(pid) >= 3 and pid not in q.words and _contains_phrase(text, pid, word_set)}
        owners = data.trigram_owners()
        text_words = feats.words
        firsts = data.trigram_firsts()
        if owners and not firsts.isdisjoint(text_words):
            trigram_names(text_words, firsts, owners, q.words_or_stop, named)
        return sorted(named)


def step_words(think_words: tuple[str, ...], result_words: set[str], query_words: frozenset[str],
               own_words: set[str]) -> tuple[list[str], list[str]]:
    """A step's result words and references (``step_words_py``, the reference): natively where the kernels are
    built (``oro_assets.native``)."""
    if _kernels is not None:
        found = _kernels.step_words(think_words, result_words, query_words, own_words, STOPWORDS, AGENT_VOCABULARY,
                                    RESULT_REFERENCES)
        if found is not None:  # None: not a tuple of str (the reference reads it)
            return found
    return step_words_py(think_words, result_words, query_words, own_words)


def step_words_py(think_words: tuple[str, ...], result_words: set[str], query_words: frozenset[str],
                  own_words: set[str]) -> tuple[list[str], list[str]]:
    """(the thinking's words found in earlier results that are neither the query's, the agent's own arguments',
    stopwords, agent vocabulary nor under 3 characters; its words about results not in the query), each sorted."""
    found = sorted(
        {
            w
            for w in think_words
            if w in result_words
            and w not in query_words
            and w not in own_words
            and w not in STOPWORDS
            and w not in AGENT_VOCABULARY
            and len(w) >= 3
        }
    )
    references = sorted({w for w in think_words if w in RESULT_REFERENCES and w not in query_words})
    return found, references


def _trigrams(tokens: Sequence[str]) -> set[tuple[str, str, str]]:
    return {(tokens[i], tokens[i + 1], tokens[i + 2]) for i in range(len(tokens) - 2)}


@lru_cache(maxsize=1 << 15)
def _title_trigrams(title_words: tuple[str, ...]) -> frozenset[tuple[str, str, str]]:
    return frozenset(_trigrams(title_words))
