"""The episode loop: one policy plays one problem against one shopping environment.

Policies see only ``problem_view = {"problem_id", "query"}``, the conversation so far in the
canonical OpenAI message schema (docs/architecture.md) and the tool schemas, and return one
:class:`Turn`. The loop executes the turn's tool calls, records what ORO's harness would record
(timestamps, per-step proxy calls) and renders the result as ORO dialogue steps or canonical
messages. Scripted miners (``arena/policies``) and model-backed policies (``oro_assets/agents``)
plug into the same :class:`Policy` protocol.

Time is injected: :class:`SimClock` (deterministic, advanced by a duration model) for the
simulator, :class:`WallClock` for live policies.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from oro_assets import jsonio
from oro_assets.arena import recorder
from oro_assets.arena.answers import render_answer
from oro_assets.arena.scoring import split_ids
from oro_assets.toolcalls import FALLBACK_THINK, RECOMMEND_PRODUCT, TERMINATE

SYSTEM_PROMPT = (
    "You are a shopping assistant. Use the tools to search the catalogue, inspect products and "
    "recommend the product(s) that satisfy every requirement of the user's request. Think before "
    "each action. Call recommend_product exactly once with the chosen product ids in the order the "
    "user asked for them, then call terminate."
)

# ORO's recording rules live in one place (arena/recorder.py); re-exported for the loop's callers.
SEARCH_PATHS = recorder.SEARCH_PATHS
INFERENCE_PATH = recorder.INFERENCE_PATH
PROXY_BODY_LIMIT = recorder.BODY_LIMIT


@dataclass
class ToolCall:
    name: str
    arguments: dict
    # Set only when the model emitted arguments that are not a JSON object: the literal text is
    # recorded as emitted and the call is answered with an error result.
    raw_arguments: str | None = None

    def arguments_json(self) -> str:
        return self.raw_arguments if self.raw_arguments is not None else jsonio.dumps(self.arguments)


@dataclass
class Turn:
    think: str
    tool_calls: list[ToolCall]
    response: str = ""
    # OpenAI chat-completion responses this turn made ([] = no LLM involved in this step).
    inference: list[dict] = field(default_factory=list)
    # Harness extras: "model", "temperature" (inference request params), "retries" (status codes
    # of attempts inside the answered request), "failed_calls" (status codes, None = no answer, of
    # whole inference requests that failed before it), "stall_ms" (extra simulated time).
    meta: dict = field(default_factory=dict)


class Policy(Protocol):
    name: str

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]) -> Turn: ...


class Clock(Protocol):
    def now_ms(self) -> int: ...

    def advance(self, ms: float) -> None: ...


class SimClock:
    """Deterministic clock: time only moves when the loop advances it."""

    def __init__(self, start_ms: int) -> None:
        self._now = float(start_ms)

    def now_ms(self) -> int:
        return int(self._now)

    def advance(self, ms: float) -> None:
        self._now += max(0.0, ms)


class WallClock:
    """Real time; ``advance`` is a no-op because real work takes real time."""

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def advance(self, ms: float) -> None:
        return None


# Duration model: (event, info) -> milliseconds. Events: "inference" (info: completion_tokens),
# "search" (info: tool name), "tool" (local tools), "overhead" (harness time per step).
DurationModel = Callable[[str, dict], float]


def default_durations(event: str, info: dict) -> float:
    if event == "inference":
        return 400.0 + 18.0 * float(info.get("completion_tokens") or 0)
    if event == "search":
        return 120.0
    if event == "overhead":
        return 15.0
    return 2.0


def oro_tool_call_id(name: str, parameters: Any) -> str:
    """ORO's 8-char id: identical calls collide by design (ids are not unique in a dialogue)."""
    digest = hashlib.md5(f"{name}\n{parameters}".encode()).digest()
    text = base64.urlsafe_b64encode(digest).decode()
    return "".join(ch for ch in text if ch not in "=+/")[:8]


@dataclass
class CallRecord:
    name: str
    arguments: dict
    raw_arguments: str | None
    result: Any
    call_id: str  # canonical id call_<step>_<i>

    @property
    def parameters(self) -> Any:
        return self.raw_arguments if self.raw_arguments is not None else self.arguments


@dataclass
class StepRecord:
    step: int
    timestamp: int | None
    think: str
    response: str
    calls: list[CallRecord]
    inference: list[dict]  # the model's answers as the policy gave them (structured)
    events: list[recorder.ProxyEvent]  # this step's proxy requests, in time order
    execution_time: float
    code_made: bool = False  # written by the agent's code with no inference behind it (auto-recommend)


@dataclass
class Episode:
    problem_id: str
    query: str
    policy_name: str
    status: str  # success | failed | timed_out
    error: dict | None
    messages: list[dict]
    steps: list[StepRecord]
    started_ms: int
    ended_ms: int
    inference_total: int = 0
    inference_failure_count: int = 0
    timeout_s: float = recorder.DEFAULT_TIMEOUT_S

    @property
    def execution_time(self) -> float:
        return round((self.ended_ms - self.started_ms) / 1000.0, 3)

    def recommended_ids(self) -> list[str]:
        """Ids of the last ``recommend_product`` call: split on ",", stripped, deduped in order."""
        last: CallRecord | None = None
        for step in self.steps:
            for call in step.calls:
                if call.name == RECOMMEND_PRODUCT:
                    last = call
        if last is None or last.raw_arguments is not None:
            return []
        return split_ids(last.arguments.get("product_ids"))

    def to_messages(self) -> list[dict]:
        return [dict(m) for m in self.messages]

    def events(self) -> list[recorder.ProxyEvent]:
        return [e for s in self.steps for e in s.events]

    def agent_steps(self) -> list[dict]:
        """The dialogue the agent returns (``create_dialogue_step`` per step), before the harness
        completes and buckets it."""
        return [recorder.dialogue_step(s.think, _oro_calls(s.calls), s.response, self.query, s.step, s.timestamp)
                for s in self.steps]

    def to_oro_envelope(self, agent_steps: list[dict] | None = None, era: str = recorder.ERA_A6B1CF3) -> dict:
        """The sandbox envelope of this run, by ORO's rules (``agent_steps`` default:
        :meth:`agent_steps`; a broken agent's damaged steps may be passed instead); ``era``: which
        of ORO's recorders (arena/recorder.py)."""
        events = (self.events() if era == recorder.ERA_A6B1CF3
                  else recorder.with_request_messages([s.events for s in self.steps], self.messages))
        return recorder.format_envelope(
            problem_id=self.problem_id, query=self.query, status=self.status,
            dialogue=self.agent_steps() if agent_steps is None else agent_steps, events=events,
            execution_time=self.execution_time, inference_failure_count=self.inference_failure_count,
            inference_total=self.inference_total, error=self.error, written_ms=self.ended_ms + 3,
            timeout_s=self.timeout_s, era=era,
        )

    def to_oro_dialogue(self) -> list[dict]:
        """The envelope's ``dialogue`` (the per-problem S3 payload); [] when the run has none."""
        return self.to_oro_envelope()["dialogue"] or []


def _oro_calls(calls: list[CallRecord]) -> list[dict]:
    out = []
    for c in calls:
        params = c.parameters
        out.append({"name": c.name, "parameters": params, "tool_call_id": oro_tool_call_id(c.name, params),
                    "result": c.result})
    return out


def _default_executor() -> Callable[[Any, str, dict], Any]:
    from oro_assets.arena.tools import execute_tool  # the arena core; imported lazily

    return execute_tool


def _default_tools() -> list[dict]:
    from oro_assets.arena.tools import TOOL_SCHEMAS

    return TOOL_SCHEMAS


def run_episode(
    policy: Policy,
    problem: dict,
    env: Any,
    *,
    max_steps: int = 30,
    timeout_s: float = 300,
    clock: Clock | None = None,
    step_clock: DurationModel | None = None,
    tools: list[dict] | None = None,
    executor: Callable[[Any, str, dict], Any] | None = None,
    system_prompt: str = SYSTEM_PROMPT,
    answer_shape: str = "structured",
    answer_style: dict | None = None,
    auto_recommend: bool = False,
) -> Episode:
    """Play ``problem`` with ``policy`` in ``env``.

    Stops on ``terminate``, on a turn without tool calls, on the step limit, on a timeout
    (``timed_out``) or when the policy raises (``failed`` with ``error``). With a
    :class:`SimClock` every duration comes from ``step_clock`` (default :func:`default_durations`),
    so the episode is a pure function of its inputs.

    ``answer_shape`` is how the agent's protocol makes the model write its answers (arena/answers.py;
    ``answer_style`` passes its options); ``auto_recommend`` appends ORO's reference-agent fallback
    step (written by code) when the run ends without a ``recommend_product``.
    """
    clock = clock if clock is not None else WallClock()
    simulated = not isinstance(clock, WallClock)
    durations = step_clock or default_durations
    execute = executor or _default_executor()
    tools = tools if tools is not None else _default_tools()
    style = answer_style or {}
    view = {"problem_id": problem["problem_id"], "query": problem["query"]}
    messages: list[dict] = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": problem["query"]},
    ]
    started = clock.now_ms()
    deadline = started + int(timeout_s * 1000)
    episode = Episode(
        problem_id=problem["problem_id"], query=problem["query"], policy_name=getattr(policy, "name", "policy"),
        status="success", error=None, messages=messages, steps=[], started_ms=started, ended_ms=started,
        timeout_s=float(timeout_s),
    )
    candidates: list[str] = []
    recommended = False

    for step_no in range(1, max_steps + 1):
        step_start = clock.now_ms()
        wall0 = time.perf_counter()
        try:
            turn = policy.act(view, messages, tools)
        except TimeoutError as exc:
            episode.status, episode.error = "timed_out", {"type": "TimeoutError", "message": str(exc) or "timeout"}
            break
        except Exception as exc:  # a crashing agent is data, not a bug of the loop
            episode.status, episode.error = "failed", {"type": type(exc).__name__, "message": str(exc)}
            break
        act_ms = (time.perf_counter() - wall0) * 1000.0
        meta = turn.meta or {}
        events: list[recorder.ProxyEvent] = []

        # Inference calls happen first, during act(). "retries": attempts inside one request (the
        # log keeps one summary entry spanning them); "failed_calls": whole requests that failed
        # (no body) before the answer, which the agent then asked for again.
        request = recorder.inference_request(meta.get("model", "unknown"), float(meta.get("temperature", 0.0)))
        for status_code in meta.get("failed_calls", ()):
            dur = durations("inference", {"completion_tokens": 0}) if simulated else 0.0
            clock.advance(dur)
            events.append(recorder.ProxyEvent("POST", INFERENCE_PATH, clock.now_ms(), dur, status_code,
                                              json_data=dict(request)))
            episode.inference_total += 1
            episode.inference_failure_count += 1
        for k, resp in enumerate(turn.inference):
            tokens = ((resp.get("usage") or {}).get("completion_tokens")) or 0
            dur = durations("inference", {"completion_tokens": tokens}) if simulated else act_ms / max(1, len(turn.inference))
            if k == 0 and meta.get("retries"):
                dur += sum(durations("inference", {"completion_tokens": 0}) if simulated else 0.0
                           for _ in meta["retries"])
            clock.advance(dur)
            if simulated and "created" in resp:
                resp["created"] = clock.now_ms() // 1000
            body = render_answer(resp, answer_shape, **style)
            events.append(recorder.ProxyEvent("POST", INFERENCE_PATH, clock.now_ms(), dur, 200,
                                              json_data=dict(request), body=body))
            episode.inference_total += 1
        if meta.get("stall_ms"):
            clock.advance(float(meta["stall_ms"]))

        records: list[CallRecord] = []
        assistant: dict[str, Any] = {"role": "assistant", "content": turn.response,
                                     "reasoning_content": turn.think or None}
        tool_msgs: list[dict] = []
        terminated = False
        for i, call in enumerate(turn.tool_calls):
            call_id = f"call_{step_no}_{i}"
            body_text: str | None = None
            if call.raw_arguments is not None:
                result: Any = f"Error: arguments of {call.name} are not valid JSON"
            else:
                w0 = time.perf_counter()
                result = execute(env, call.name, call.arguments)
                real_ms = (time.perf_counter() - w0) * 1000.0
                path = SEARCH_PATHS.get(call.name)
                if path is not None:
                    dur = durations("search", {"tool": call.name}) if simulated else real_ms
                    clock.advance(dur)
                    body_text = jsonio.dumps(result)
                    ok = not (isinstance(result, str) and result.startswith("Error"))
                    events.append(recorder.ProxyEvent(
                        "GET", path, clock.now_ms(), dur, 200 if ok else 422,
                        params=recorder.search_params(call.name, call.arguments), body=result if ok else None))
                else:
                    clock.advance(durations("tool", {"tool": call.name}) if simulated else 0)
                if call.name == RECOMMEND_PRODUCT and not (isinstance(result, str) and result.startswith("Error")):
                    recommended = True
                for pid in recorder.candidate_ids(call.name, result):
                    if pid not in candidates:
                        candidates.append(pid)
            records.append(CallRecord(call.name, call.arguments, call.raw_arguments, result, call_id))
            tool_msgs.append({"role": "tool", "tool_call_id": call_id, "name": call.name,
                              "content": body_text if body_text is not None else jsonio.dumps(result)})
            if call.name == TERMINATE and not (isinstance(result, str) and result.startswith("Error")):
                terminated = True  # a terminate the tool refused (bad status) does not end the episode
        if records:
            assistant["tool_calls"] = [
                {"id": r.call_id, "type": "function",
                 "function": {"name": r.name, "arguments": tc.arguments_json()}}
                for r, tc in zip(records, turn.tool_calls, strict=True)
            ]
        messages.append(assistant)
        messages.extend(tool_msgs)

        # The step is stamped when it is created: after its own calls (ties within 1 ms happen).
        clock.advance(durations("overhead", {}) if simulated else 0)
        now = clock.now_ms()
        episode.steps.append(StepRecord(
            step=step_no, timestamp=now, think=turn.think, response=turn.response, calls=records,
            inference=turn.inference, events=events, execution_time=round((now - step_start) / 1000.0, 3),
        ))
        if now > deadline:
            episode.status = "timed_out"
            episode.error = {"type": "TimeoutError", "message": f"Execution exceeded timeout of {float(timeout_s)}s"}
            break
        if terminated or not turn.tool_calls:
            break
    if auto_recommend and episode.status == "success" and not recommended:
        ids = recorder.fallback_ids(episode.query, candidates)
        if ids is not None:
            _append_fallback(episode, ids, env, execute, clock, durations, simulated)
    episode.ended_ms = clock.now_ms()
    return episode


def _append_fallback(episode: Episode, ids: str, env: Any, execute: Callable, clock: Clock,
                     durations: DurationModel, simulated: bool) -> None:
    """ORO's reference agent: recommend the collected candidates itself (no inference)."""
    step_no = len(episode.steps) + 1
    args = {"product_ids": ids}
    result = execute(env, RECOMMEND_PRODUCT, args)
    clock.advance(durations("tool", {"tool": RECOMMEND_PRODUCT}) if simulated else 0)
    call_id = f"call_{step_no}_0"
    record = CallRecord(RECOMMEND_PRODUCT, args, None, result, call_id)
    episode.messages.append({"role": "assistant", "content": "", "reasoning_content": FALLBACK_THINK,
                             "tool_calls": [{"id": call_id, "type": "function",
                                             "function": {"name": RECOMMEND_PRODUCT,
                                                          "arguments": jsonio.dumps(args)}}]})
    episode.messages.append({"role": "tool", "tool_call_id": call_id, "name": RECOMMEND_PRODUCT,
                             "content": jsonio.dumps(result)})
    now = clock.now_ms()
    episode.steps.append(StepRecord(step=step_no, timestamp=now, think=FALLBACK_THINK, response="",
                                    calls=[record], inference=[], events=[], execution_time=0.0, code_made=True))
