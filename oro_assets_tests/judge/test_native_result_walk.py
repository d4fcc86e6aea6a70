"""The rule judge's native result walk (``walk_result`` in ``oro_assets/_native.c``) equals the Python walk
(``ResultData._walk``): the same words, ids, prices, phrases and titles (in order) from every tool result, and the
same verdicts, on the judge fixtures, a simulated day and hostile results. Skips without the built extension,
never under CI."""

from __future__ import annotations

import judge_fixtures as fx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judged_support import clear_rule_caches, judge_each

from oro_assets import jsonio, native
from oro_assets.judge import rule
from oro_assets.judge.evidence import parse_trace
from oro_assets_tests.native_support import require_kernels


def _facts(result_text: str, kernels) -> tuple:
    """What ``_read`` collects from one result with the given kernels (None: the Python walk), uncached."""
    saved = rule._kernels
    rule._kernels = kernels
    try:
        data = rule.ResultData()
        data._read(result_text)
    finally:
        rule._kernels = saved
    return (data.words, data.ids, data.product_ids, data.prices, data.phrases, list(data.titles.items()))


def _same_facts(result_text: str, kernels) -> None:
    want = _facts(result_text, None)
    got = _facts(result_text, kernels)
    for name, w, g in zip(("words", "ids", "product_ids", "prices", "phrases", "titles"), want, got, strict=True):
        assert g == w, (name, result_text[:300])
    assert [type(p) for p in got[3]] == [float] * len(got[3])


def _verdicts(rows: list[dict], kernels) -> list:
    saved = rule._kernels
    rule._kernels = kernels
    try:
        return judge_each(rows)  # from empty caches: cached facts would hide the walk under test
    finally:
        rule._kernels = saved
        clear_rule_caches()


def _results(row: dict) -> list[str]:
    return [c.result for s in parse_trace(row).steps for c in s.calls]


def test_every_fixture_result_and_verdict_is_the_same(kernels):
    rows = [builder()[0] for builder in fx.ALL_BUILDERS]
    texts = [t for r in rows for t in _results(r)]
    assert len(texts) >= 20
    for text in texts:
        _same_facts(text, kernels)
    assert _verdicts(rows, kernels) == _verdicts(rows, None)


def test_a_simulated_day_reads_the_same(simulated_day, kernels):
    rows = [row for row, _ in simulated_day]
    texts = {t for r in rows for t in _results(r)}
    assert len(texts) >= 100
    for text in texts:
        _same_facts(text, kernels)
    judged = _verdicts(rows, kernels)
    assert judged == _verdicts(rows, None)
    assert len({v.score for v in judged}) >= 3


def _nested(depth: int) -> object:
    value: object = {"price": "12.50", "title": "Deep"}
    for i in range(depth):
        value = [value] if i % 2 else {"k": value, "product_id": i}
    return value


HOSTILE: list[object] = [
    None, True, False, 0, -1, 2**63 - 1, -(2**63), 1.5, -0.0, 1e300, 5e-324, "", "plain text result",
    "Ｆｕｌｌｗｉｄｔｈ ＴＥＸＴ ﬁ ligature", "zero\u200bwidth\u2060 soft\xadhyphen", "İstanbul ß Σίσυφος ǅ",
    [], {}, [[]], [{}], [1, "two", 3.0, None, True, [False, "x"]],
    {"product_id": 123, "title": "Int Id Title"}, {"product_id": 1.5, "title": "Float Id"},
    {"product_id": True, "title": "Bool Id"}, {"product_id": False, "title": "False Id"},
    {"product_id": None, "title": "No Id"}, {"product_id": [1, 2], "title": "List Id"},
    {"product_id": {"a": 1}, "title": "Dict Id"}, {"product_id": "P1", "title": 5}, {"product_id": "P1", "title": None},
    {"product_id": "ÄB-12", "title": "Ünïcode Tïtle — with dash_and_underscore"},
    {"product_id": "p1", "title": "First"}, [{"product_id": "p1", "title": "A b c"}, {"product_id": "P1", "title": "d e f"}],
    [{"product_id": "x", "title": "Same"}, {"product_id": "y", "title": "Other"}, {"product_id": "x", "title": "Again"}],
    {"price": 499, "sale_price": 12.345, "priceless": "1,234.50 PHP", "PRICE": 7, "price_range": "100 - 200",
     "original_price": "n/a", "price_list": [1, "2.5", {"x": 3}], "prices": [9.999, 10], "price_bool": True},
    {"price": "１２３", "price2": "12.3.4", "price3": "1,,2", "price4": ".5 and 5. and 0.50"},
    {"brand": "  Apexwear  ", "Brand": "Other", "brand2": "x"}, {"brand": "\u3000Ünï\u00a0", "attributes": None},
    {"brand": 12}, {"brand": ["List", "Brand"]},
    {"attributes": {"material": ["Polyester", "  Cotton "], "brand": ["Apexwear"], "n": 5, "b": True},
     "sku_options": {"1": {"size": "int:xs", "color": "grey:dark:er", "x": ":lead", "y": "trail:"}}},
    {"attributes": [["nested", ["deeper", {"k": "Int:L"}]]], "sku_options": "not:a dict"},
    {"attributes": {"ü": "Ä:Ö"}, "sku_options": [{"size": "ＩＮＴ：ＸＳ"}]},
    {"description": "Prose words only", "short_description": "More Prose", "specification": {"w": "Spec Words"},
     "title": "Title Words", "name": "Name Words"},
    {"description": 12345, "specification": ["List", "Prose"], "product_id": "PID9", "title": "T"},
    {"shop_id": "S-77", "product_id": "ＰＩＤ", "title": "ｗｉｄｅ"}, {"shop_id": 77, "nested": {"shop_id": "s78"}},
    {"": "empty key", "123": "numeric key", "ü": "unicode key", "price\u00e9": "9.5"},
    {"k": "x" * 100_000, "price": "1" * 400}, {"words": " ".join(f"W{i}" for i in range(5000))},
    {"mixed": "ascii", "other": "nön-ascii", "third": "MORE ascii"},
    "a\nb\tc  d", "\u2028line\u2029para", "emoji 😀 words 𝔘𝔫𝔦", "a_b c-d e.f 1,000.50 $5",
    _nested(10), _nested(63), _nested(64), _nested(65), _nested(200),  # the kernel leaves the deepest to Python
]


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_results_read_the_same(value, kernels):
    _same_facts(jsonio.dumps(value), kernels)


@pytest.mark.parametrize("text", ["not json {", "", "   ", "{\"a\": 1", "[1, 2", "NaN", "\"unterminated",
                                  "12 34", "{'single': 'quotes'}", "Ünïcode not json", "\ud800 lone surrogate"])
def test_unparseable_results_read_the_same(text, kernels):
    _same_facts(text, kernels)


KEYS = st.sampled_from(["product_id", "shop_id", "title", "brand", "price", "sale_price", "attributes",
                        "sku_options", "description", "short_description", "specification", "name", "ü", ""])
TEXT = st.text(alphabet=st.sampled_from("aZ09 :._-,\t\nüÄß漢😀\u3000\u200bﬁＩ"), max_size=20)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False), TEXT)
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.one_of(KEYS, TEXT), inner, max_size=5)),
                    max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_random_results_read_the_same(value):
    require_kernels()
    _same_facts(jsonio.dumps(value), native.kernels)


def test_the_kernel_refuses_wrong_containers(kernels):
    sets = [set() for _ in range(5)]
    helpers = (rule.normalize_text, rule.words, rule.numbers)
    with pytest.raises(TypeError):
        kernels.walk_result({}, *sets[:4], [], {}, *helpers)
    with pytest.raises(TypeError):
        kernels.walk_result({}, *sets, [], *helpers)
    with pytest.raises(TypeError):
        kernels.walk_result({}, *sets, {})
    assert kernels.walk_result(_nested(200), *sets, {}, *helpers) is False
    assert sets == [set()] * 5  # nothing touched when it declines
    assert kernels.walk_result({"price": "5"}, *sets, {}, *helpers) is True
