import json

from oro_assets.agents.openai_policy import OpenAIPolicy
from oro_assets.agents.rollout import rollout_many
from oro_assets.judge.testing import Reply, StubOpenAIServer

TOOLS = [{"type": "function", "function": {"name": n, "description": n,
                                           "parameters": {"type": "object", "properties": {}}}}
         for n in ("find_product", "recommend_product", "terminate")]


def _call(name, args, i=0):
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _agent(body: dict) -> Reply:
    """An endpoint that searches, recommends the first id it saw, then terminates."""
    tool_msgs = [m for m in body["messages"] if m["role"] == "tool"]
    if not tool_msgs:
        return Reply(content="", tool_calls=[_call("find_product", {"q": body["messages"][1]["content"]})])
    if len(tool_msgs) == 1:
        pid = json.loads(tool_msgs[0]["content"])[0]["product_id"]
        return Reply(content=f"<think>only {pid} fits</think>", tool_calls=[_call("recommend_product", {"product_ids": pid})])
    return Reply(content="", tool_calls=[_call("terminate", {"status": "success"})])


def _executor(env, name, arguments):
    return [{"product_id": "555", "title": arguments.get("q", "")}] if name == "find_product" else "ok"


def test_episode_against_a_real_http_stub():
    with StubOpenAIServer(default=_agent) as server:
        policy = OpenAIPolicy(server.base_url, "teacher-x", api_key="sk-secret-123", temperature=0.3)
        (r,) = rollout_many(policy, [{"problem_id": "p1", "query": "blue shirt"}], env=None, n=1,
                            episode_kwargs={"tools": TOOLS, "executor": _executor})
        requests = server.requests
    ep = r.episode
    assert ep.status == "success"
    assert [s.calls[0].name for s in ep.steps] == ["find_product", "recommend_product", "terminate"]
    assert ep.recommended_ids() == ["555"]
    assert ep.steps[1].think == "only 555 fits"
    assert ep.steps[0].inference[0]["usage"]["completion_tokens"] == 30
    first = requests[0].body
    assert first["model"] == "teacher-x" and first["temperature"] == 0.3
    assert [t["function"]["name"] for t in first["tools"]] == ["find_product", "recommend_product", "terminate"]
    # Past calls are sent back in OpenAI form: arguments as JSON strings, no reasoning_content key.
    second_assistant = [m for m in requests[1].body["messages"] if m["role"] == "assistant"][0]
    assert json.loads(second_assistant["tool_calls"][0]["function"]["arguments"]) == {"q": "blue shirt"}
    assert all("reasoning_content" not in m for m in requests[2].body["messages"])
    assert {k.lower(): v for k, v in requests[0].headers.items()}["authorization"] == "Bearer sk-secret-123"
    assert "sk-secret" not in repr(policy)


def test_text_tool_calls_and_bad_arguments_from_a_server_without_tool_parser():
    text = ('<think>look</think>\n<tool_call>\n{"name": "find_product", "arguments": {"q": "hat"}}\n</tool_call>')
    bad = Reply(content="", tool_calls=[{"id": "x", "type": "function",
                                         "function": {"name": "recommend_product", "arguments": "12,34"}}])
    with StubOpenAIServer([Reply(content=text), bad]) as server:
        policy = OpenAIPolicy(server.base_url, "m")
        turn = policy.act({"problem_id": "p", "query": "hat"}, [{"role": "user", "content": "hat"}], TOOLS)
        assert turn.think == "look"
        assert [(c.name, c.arguments) for c in turn.tool_calls] == [("find_product", {"q": "hat"})]
        turn = policy.act({"problem_id": "p", "query": "hat"}, [{"role": "user", "content": "hat"}], TOOLS)
        (call,) = turn.tool_calls
        assert call.name == "recommend_product" and call.raw_arguments == "12,34"
        assert turn.inference[0]["parse_errors"] == ["arguments_unparseable"]


def test_http_errors_fail_the_episode_not_the_run():
    with StubOpenAIServer(default=Reply(status=400, raw_body=json.dumps({"error": {"message": "bad"}}))) as server:
        policy = OpenAIPolicy(server.base_url, "m", max_retries=0)
        (r,) = rollout_many(policy, [{"problem_id": "p", "query": "q"}], env=None,
                            episode_kwargs={"tools": TOOLS, "executor": _executor})
    assert r.episode.status == "failed"
    assert r.episode.error["type"] == "BadRequestError"
