"""Rejection re-SFT keeps one row per distinct successful trajectory of a problem."""

from oro_assets.training.stages.rollouts import dedupe_trajectories, trajectory_key


def _row(rid: str, problem: str, calls: list[list[tuple[str, str]]], thinking: str = "") -> dict:
    messages = [{"role": "user", "content": "find it"}]
    for turn in calls:
        messages.append({"role": "assistant", "content": thinking, "tool_calls": [
            {"type": "function", "function": {"name": name, "arguments": args}} for name, args in turn]})
        messages.append({"role": "tool", "content": "[]"})
    return {"id": rid, "problem_id": problem, "messages": messages}


SEARCH = ("find_product", '{"q": "red mug", "page": 1}')
SEARCH_REORDERED = ("find_product", '{"page": 1,  "q": "red mug"}')
RECOMMEND = ("recommend_product", '{"product_ids": "p1"}')


def test_same_calls_in_other_words_are_one_trajectory():
    a = _row("a", "P1", [[SEARCH], [RECOMMEND]], thinking="I will search")
    b = _row("b", "P1", [[SEARCH_REORDERED], [RECOMMEND]], thinking="Let me look")
    assert trajectory_key(a) == trajectory_key(b), "argument order and thinking text do not make a new path"
    assert [r["id"] for r in dedupe_trajectories([a, b])] == ["a"]


def test_other_calls_or_another_problem_are_kept():
    a = _row("a", "P1", [[SEARCH], [RECOMMEND]])
    other_args = _row("b", "P1", [[("find_product", '{"q": "blue mug"}')], [RECOMMEND]])
    extra_turn = _row("c", "P1", [[SEARCH], [("view_product_information", '{"product_ids": "p1"}')], [RECOMMEND]])
    other_problem = _row("d", "P2", [[SEARCH], [RECOMMEND]])
    assert [r["id"] for r in dedupe_trajectories([a, other_args, extra_turn, other_problem, a])] == ["a", "b", "c", "d"]
