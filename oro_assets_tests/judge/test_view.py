import judge_fixtures as fx

from oro_assets.judge.evidence import parse_trace
from oro_assets.judge.view import build_view


def test_view_summarises_proxy_calls_and_truncates():
    row, _ = fx.compare(as_strings=False)
    row["steps"][1]["think"] = "T" * 5000
    view = build_view(parse_trace(row))
    assert view.startswith("QUERY: " + fx.QUERY)
    # 4 inference calls, tokens 70+75+90+35, 2 search calls with their ids
    assert "inference calls: 4 (4 succeeded), completion tokens: 270" in view
    assert "search calls: 2" in view
    assert "search /search/find_product -> ids [3350592664, 4410021907, 2291837445]" in view
    thinking = [line for line in view.splitlines() if line.startswith("THINKING: TTT")][0]
    assert thinking == "THINKING: " + "T" * 1000 + "…[truncated, 5000 chars]"
    results = [line for line in view.splitlines() if line.startswith("RESULT: ")]
    assert results and all(len(line) <= len("RESULT: ") + 300 + len("…[truncated, 99999 chars]") for line in results)
    assert view.count("STEP ") == 4
