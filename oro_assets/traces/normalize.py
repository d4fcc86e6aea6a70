"""Normalisation of one parsed raw record into the canonical row (docs/architecture.md).

Decisions (documented in the architecture page and relied on by curation):

* Thinking is kept on assistant messages as ``reasoning_content`` (``None`` when empty); the Qwen3
  chat template renders it as ``<think>…</think>``. Source order: ``message.think``, then
  ``completion.reasoning_content``, then ``<think>`` blocks in ``completion.content``.
* Call ids are rewritten ``call_<step>_<i>``: ``step`` is the 1-based position of the step in the
  dialogue (the assistant turn for OpenAI rows), ``i`` the 0-based index of the call in that step.
  ORO ids collide for identical calls, so results are paired to calls positionally (ORO) or by
  original id in call order (ShoppingBench ``obs``, OpenAI ``tool`` messages).
* Unpaired calls stay visible: a call without a result has no tool message; a result without a call
  becomes a tool message whose ``tool_call_id`` is ``orphan_<step>_<j>`` (matches no call).
* ``arguments`` is always a JSON string; unparseable argument strings are kept verbatim.
* Tool message ``content`` is the result's JSON text; a string result is kept as the string itself.
* Each step's proxy calls are re-derived from the step stamps (``traces/calls.attribute_calls``: a
  step is stamped after its own calls), not taken from the list ORO's harness bucketed them into;
  step 1's evidence says how (``attribution``).
* Step 1's evidence also says which of ORO's recorders wrote the record (``recorder_era``:
  ``a6b1cf3`` drops bodies over 2,000 characters, ``later`` keeps every body and the request's
  ``messages``, ``mixed`` shows signs of both, ``None`` shows neither; ``traces/calls.recorder_era``)
  and ORO's ``agentic_richness`` over the calls as ORO bucketed them (``oro_richness``, None without
  proxy calls; ``traces/calls.oro_agentic_richness``). Both come from the record parsed once.
* ORO's auto-recommend fallback step (think "Auto-recommending best available candidates.", one
  ``recommend_product``, written by the reference agent's code) stays in ``steps`` with
  ``code_made: true`` but not in ``messages``: the model did not write it, so the gates judge and
  training imitates only what the model did.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oro_assets import jsonio
from oro_assets.native import kernels as _kernels
from oro_assets.reasons import ReasonCode
from oro_assets.toolcalls import FALLBACK_THINK, RECOMMEND_PRODUCT
from oro_assets.traces import calls as _calls
from oro_assets.traces import formats as _formats
from oro_assets.traces import sharegpt
from oro_assets.traces.calls import (
    ATTRIBUTED,
    ERA_A6B1CF3,
    ERA_LATER,
    ERA_MIXED,
    NO_PROXY_CALLS,
    attribute_calls,
    era_and_richness,
)
from oro_assets.traces.formats import (
    _MAX_ID_DEPTH,
    VALIDATOR_META_KEYS,
    FieldError,
    Format,
    arguments_json,
    as_timestamp,
    detect_format,
    dumps,
    opt_dict,
    opt_list,
    opt_str,
    product_ids,
    proxy_evidence,
    result_json,
    split_content,
    step_list,
    think_and_text,
)
from oro_assets.traces.schema import Provenance, default_tools_json, trace_id_for

RECOMMEND = RECOMMEND_PRODUCT


class NormalizationError(ValueError):
    """A record that cannot be normalised; ``reason`` is its ledger reason code."""

    def __init__(self, reason: ReasonCode, detail: str, fmt: Format | None = None) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail
        self.format = fmt


def _describe(obj: Any) -> str:
    if isinstance(obj, dict):
        keys = sorted(str(k) for k in obj)[:8]
        return f"object with keys {keys}"
    if isinstance(obj, list):
        return f"list of {len(obj)} items"
    return type(obj).__name__


def _provenance(provenance: Provenance | Mapping[str, Any]) -> Provenance:
    if isinstance(provenance, Provenance):
        return provenance
    return Provenance(source_file=str(provenance["source_file"]), line_no=int(provenance["line_no"]),
                      partition=str(provenance["partition"]), raw_sha256=str(provenance["raw_sha256"]),
                      trace_id=provenance.get("trace_id"))


def normalize_record(obj: Any, *, provenance: Provenance | Mapping[str, Any],
                     parsed_out: dict[str, Any] | None = None) -> dict[str, Any]:
    """The canonical normalised row of one parsed record, or :class:`NormalizationError`.

    ``parsed_out``, when given, receives the Python values of the ``messages`` and ``steps`` columns
    (already built here), so an in-process consumer need not parse the JSON again. Do not mutate them.
    """
    prov = _provenance(provenance)
    fmt = detect_format(obj)
    if fmt is None:
        raise NormalizationError(ReasonCode.UNKNOWN_FORMAT, f"not one of the known formats: {_describe(obj)}")
    try:
        if fmt is Format.OPENAI_MESSAGES:
            body, messages, steps = _from_openai(obj)
        elif fmt is Format.SHAREGPT:
            body, messages, steps = _from_openai(sharegpt.to_openai(obj))
        else:
            body, messages, steps = _from_steps(obj, fmt)
    except FieldError as exc:
        raise NormalizationError(ReasonCode.SCHEMA_VIOLATION, str(exc), fmt) from None
    except jsonio.JSONEncodeError as exc:  # e.g. nesting deeper than orjson's encoder allows
        raise NormalizationError(ReasonCode.SCHEMA_VIOLATION, f"value cannot be re-encoded: {exc}", fmt) from None
    except _Empty as exc:
        raise NormalizationError(ReasonCode.EMPTY_DIALOGUE, str(exc), fmt) from None
    row = {
        "trace_id": prov.trace_id or trace_id_for(prov.raw_sha256),
        "partition": prov.partition,
        "source_file": prov.source_file,
        "line_no": prov.line_no,
        "raw_sha256": prov.raw_sha256,
        "format": fmt.value,
    }
    row.update(body)
    if parsed_out is not None:
        parsed_out["messages"] = messages
        parsed_out["steps"] = steps
    return row


class _Empty(Exception):
    pass


def _meta(record: dict) -> str:
    meta = {k: record[k] for k in VALIDATOR_META_KEYS if k in record}
    return dumps(meta) if meta else "{}"


def _tools(record: dict) -> str:
    tools = record.get("tools")
    if tools is None:
        return default_tools_json()
    if isinstance(tools, str):
        try:
            tools = jsonio.loads(tools)
        except jsonio.JSONDecodeError:
            raise FieldError("tools is a string that is not JSON") from None
    if not isinstance(tools, list):
        raise FieldError(f"tools must be a list of function schemas, got {type(tools).__name__}")
    nested = []
    for i, tool in enumerate(tools):
        if type(tool) is dict and type(tool.get("function")) is dict and type(tool["function"].get("name")) is str:
            nested.append(tool)
        elif type(tool) is dict and type(tool.get("name")) is str and "function" not in tool:
            # the flat form of the published SN15 SFT set: {type, name, description, parameters}
            nested.append({"type": tool.get("type", "function"),
                           "function": {k: v for k, v in tool.items() if k != "type"}})
        else:
            raise FieldError(f"tools[{i}] must be a function schema {{type, function: {{name, ...}}}} "
                             "or its flat form {type, name, description, parameters}")
    return dumps(nested) if nested else default_tools_json()


def _text(value: Any, field: str) -> str:
    """Message content: a string, null, or OpenAI content parts (text parts joined)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
            else:
                raise FieldError(f"{field} has a content part that is not text")
        return "".join(parts)
    raise FieldError(f"{field} must be a string, null or content parts, got {type(value).__name__}")


def _tool_content(value: Any) -> str:
    """A tool message's content: a string as is, OpenAI text parts joined (as for other roles),
    any other value (a raw tool result) as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(
            type(part) is dict and part.get("type") == "text" and isinstance(part.get("text"), str) for part in value):
        return "".join(part["text"] for part in value)
    return result_json(value)


def _record_level(record: dict) -> dict[str, Any]:
    error = record.get("error")
    return {
        "problem_id": opt_str(record.get("problem_id"), "problem_id"),
        "query": opt_str(record.get("query"), "query"),
        # ORO writes SUCCESS/FAILED/TIMED_OUT; read in any case, stored as success/failed/timed_out
        "status": (opt_str(record.get("status"), "status") or "").lower() or None,
        "error": None if error is None else dumps(error),
        "meta": _meta(record),
    }


def _from_steps(obj: Any, fmt: Format) -> tuple[dict[str, Any], list, list]:
    raw_steps, record = step_list(obj, fmt)
    if raw_steps is None:
        raise _Empty("dialogue is null")
    if not isinstance(raw_steps, list):
        raise FieldError(f"dialogue must be a list, got {type(raw_steps).__name__}")
    if not raw_steps:
        raise _Empty("dialogue has no steps")
    head = _record_level(record)
    query, problem_id, messages, steps, messages_text, steps_text, n_calls = from_steps(
        raw_steps, head["query"], head["problem_id"])
    head.update(query=query, problem_id=problem_id, messages=messages_text, tools=_tools(record),
                steps=dumps(steps) if steps_text is None else steps_text, n_steps=len(steps), n_tool_calls=n_calls)
    return head, messages, steps


#: What :func:`from_steps` gives :func:`_from_steps`: (query, problem_id, messages, steps, the messages column's text,
#: the steps column's text or None where it is left to ``dumps`` after the tools column, calls in turns)
FromSteps = tuple[str | None, str | None, list, list, str, str | None, int]


def from_steps(raw_steps: list, query: str | None, problem_id: str | None) -> FromSteps:
    """The dialogue part of :func:`_from_steps` (:func:`from_steps_py`). Read in one call by the native kernel where it
    is built (``oro_assets.native``: ``from_steps``, which runs the ``walk_steps``, ``proxy_evidence`` and
    ``era_counts`` kernels itself, with this module's helpers for what they do not read); a dialogue ``walk_steps``
    hands back gives None there and is read by the reference."""
    if _kernels is not None:
        f, c = _formats, _calls  # their helpers as bound now, as the dispatchers this replaces pass them
        got = _kernels.from_steps(raw_steps, query, problem_id, _walk_helpers(),
                                  (f.answer_calls, f._evidence_from_text, jsonio.loads, jsonio.JSONDecodeError,
                                   f.product_ids, f._MAX_ID_DEPTH, f.CONTENT_LIMIT),
                                  (c.CATALOGUE_TOOLS, c._str_route, c._named_tools, c.ORO_INFERENCE_PATH, c.DROP_LIMIT),
                                  c.era_and_richness_py, _ERAS, recorder_note, jsonio.encode, dumps)
        if got is not None:
            return got
    return from_steps_py(raw_steps, query, problem_id)


def from_steps_py(raw_steps: list, query: str | None, problem_id: str | None) -> FromSteps:
    """:func:`from_steps` by the Python dispatchers: the walk over the steps, each step's proxy evidence, step 1's
    attribution, recorder era and ORO richness, and the messages in column order with their text (the steps' text is
    left to the caller: None)."""
    query, problem_id, prefix, turns, steps, listed, windows, note, n_calls = walk_steps(raw_steps, query, problem_id)
    for step, window in zip(steps, windows, strict=True):
        step["inference"], step["search"] = proxy_evidence(window)
    steps[0]["attribution"] = note
    # ORO's own view of the same calls: which recorder wrote them, and its agentic_richness over
    # the buckets as ORO made them (not the re-derived windows above)
    era, signs, richness = era_and_richness(listed)
    steps[0]["recorder_era"] = era
    if era == ERA_MIXED:
        steps[0]["recorder_note"] = recorder_note(signs)
    steps[0]["oro_richness"] = richness if any(listed) else None

    if query is None:
        query = next((m["content"] for m in prefix if m["role"] == "user"), None)
    messages = [m for m in prefix if m["role"] == "system"]
    if query is not None:
        messages.append({"role": "user", "content": query})
    messages.extend(turns)
    return query, problem_id, messages, steps, dumps(messages), None, n_calls


def recorder_note(signs: dict[str, int]) -> str:
    """Step 1's note on a dialogue with signs of both recorders."""
    return ("signs of both recorders in one dialogue (" + ", ".join(
        f"{k} {v}" for k, v in sorted(signs.items())) + "): each call is read as it is")


#: What one pass over a dialogue's steps gives the rest of :func:`_from_steps`: (query, problem_id, prompt messages,
#: dialogue turns, steps, each step's listed proxy calls, each step's calls as the stamps attribute them and the note
#: on how, calls in turns)
StepWalk = tuple[str | None, str | None, list, list, list, list, list, str, int]


def walk_steps(raw_steps: list, query: str | None, problem_id: str | None) -> StepWalk:
    """The normaliser's pass over a dialogue's steps (:func:`walk_steps_py`). Read by the native kernel where it is
    built (``oro_assets.native``: ``walk_steps``, with this module's own helpers for what it does not read itself); a
    dialogue off its common path (a value of a type the reference refuses, a subclass where it reads exact types)
    gives None there and is read by the reference, so every error is the reference's own."""
    if _kernels is not None:
        walked = _kernels.walk_steps(raw_steps, query, problem_id, *_walk_helpers())
        if walked is not None:
            return walked
    return walk_steps_py(raw_steps, query, problem_id)


def _walk_helpers() -> tuple:
    """The ``walk_steps`` kernel's arguments after the dialogue's three: this module's helpers as bound now."""
    return (_prompt_messages, think_and_text, split_content, _step_calls, jsonio.encode, dumps, arguments_json,
            product_ids, jsonio.loads, jsonio.JSONDecodeError, as_timestamp, FALLBACK_THINK, RECOMMEND, _MAX_ID_DEPTH,
            _attribution, NO_PROXY_CALLS, ATTRIBUTED)


def walk_steps_py(raw_steps: list, query: str | None, problem_id: str | None) -> StepWalk:
    """:func:`walk_steps` by the Python reference: each step's messages, evidence and proxy calls, in order."""
    prefix: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    listed: list[list[dict]] = []
    stamps: list[Any] = []
    run_time: Any = None
    n_calls = 0
    for pos, step in enumerate(raw_steps, start=1):
        if type(step) is not dict:
            raise FieldError(f"step {pos} must be an object, got {type(step).__name__}")
        # `type(x) is T or opt_*(...)`: the helper (and its error text) only runs off the common path
        comp = step.get("completion")
        if type(comp) is not dict:
            comp = opt_dict(comp, "completion", pos)
        if "message" in comp:
            msg = comp["message"]
            if type(msg) is not dict:
                msg = opt_dict(msg, "completion.message", pos)
            has_msg = True
        else:
            msg = opt_dict(step.get("message"), "message", pos)
            has_msg = "message" in step
        extra = step.get("extra_info")
        if type(extra) is not dict:
            extra = opt_dict(extra, "extra_info", pos)
        if query is None:
            query = opt_str(extra.get("query"), "extra_info.query", pos)
        if problem_id is None:
            problem_id = opt_str(extra.get("problem_id"), "extra_info.problem_id", pos)
        if not prefix and "prompt" in step:
            prefix = _prompt_messages(step["prompt"], pos)

        think = msg.get("think")
        if type(think) is not str:
            think = opt_str(think, "message.think", pos) or ""
        if not think:
            think = opt_str(comp.get("reasoning_content"), "completion.reasoning_content", pos) or ""
        content = comp.get("content")
        if type(content) is not str:
            content = opt_str(content, "completion.content", pos) or ""
        if has_msg:
            raw_calls = msg.get("tool_call", msg.get("tool_calls"))
            if type(raw_calls) is not list:
                raw_calls = opt_list(raw_calls, "message.tool_call", pos)
            response = msg.get("response")
            if type(response) is not str:
                response = "" if response is None else opt_str(response, "message.response", pos)
            if not think and "<think>" in content:
                think = think_and_text(content)[0]
        else:
            content_think, raw_calls, response = split_content(content)
            think = think or content_think
        obs = msg.get("obs")
        if type(obs) is not list:
            obs = [] if obs is None else opt_list(obs, "message.obs", pos)

        turn_calls, tool_msgs, ev_calls = _step_calls(pos, raw_calls, obs)
        code_made = think == FALLBACK_THINK and [c["name"] for c in ev_calls] == [RECOMMEND]
        if not code_made:  # ORO's auto-recommend step is the agent's code, not the model: evidence only
            n_calls += len(turn_calls)
            assistant: dict[str, Any] = {"role": "assistant", "content": response, "reasoning_content": think or None}
            if turn_calls:
                assistant["tool_calls"] = turn_calls
            turns.append(assistant)
            turns.extend(tool_msgs)
        proxy = extra.get("proxy_calls")
        listed.append([c for c in (proxy if type(proxy) is list else opt_list(proxy, "extra_info.proxy_calls", pos))
                       if type(c) is dict])
        raw_ts = extra.get("timestamp")
        stamps.append(raw_ts)
        if pos == 1:
            run_time = extra.get("execution_time")
        steps.append({"step": pos, "timestamp": raw_ts if type(raw_ts) is int and -(2**63) <= raw_ts < 2**63
                      else as_timestamp(raw_ts),
                      "think": think, "tool_calls": ev_calls, "inference": [], "search": [],
                      "code_made": code_made})
    windows, note = _attribution(stamps, listed, run_time)
    return query, problem_id, prefix, turns, steps, listed, windows, note, n_calls


def _attribution(stamps: list[Any], listed: list[list[dict]], run_time: Any) -> tuple[list[list[dict]], str]:
    """Each step's proxy calls as the step stamps attribute them (:func:`calls.attribute_calls`), the run taken to
    start a second before step 1's stamp less its ``execution_time`` (when both are usable)."""
    started = None
    if type(stamps[0]) is int and type(run_time) in (int, float) and 0 <= run_time < 86_400:
        started = stamps[0] - int(run_time * 1000) - 1000
    return attribute_calls(stamps, listed, started)


def _prompt_messages(prompt: Any, pos: int) -> list[dict[str, Any]]:
    out = []
    for j, m in enumerate(opt_list(prompt, "prompt", pos)):
        if not isinstance(m, dict):
            raise FieldError(f"step {pos}.prompt[{j}] must be an object")
        role = m.get("role")
        if role in ("system", "user"):
            out.append({"role": role, "content": _text(m.get("content"), f"step {pos}.prompt[{j}].content")})
    return out


def _call_name(pos: int, i: int, call: Any) -> str:
    """The tool name of a step's ``i``-th call, or a :class:`FieldError` naming what is wrong with the call."""
    if not isinstance(call, dict):
        raise FieldError(f"step {pos}.tool_call[{i}] must be an object")
    name = call.get("name")
    if type(name) is not str:
        raise FieldError(f"step {pos}.tool_call[{i}].name must be a string")
    return name


def _step_calls(pos: int, raw_calls: list, obs: list) -> tuple[list, list, list]:
    """(assistant tool_calls, tool messages, evidence calls) of one ORO/ShoppingBench step. A call's result is its
    own ``result`` (every ORO step); ShoppingBench steps carry theirs in ``obs``, matched by ``tool_call_id`` or
    else by position, and an observation that answers no call is kept as an orphan tool message."""
    pending: dict[Any, list[Any]] = {}
    positional: list[Any] = []
    for j, ob in enumerate(obs):  # ShoppingBench observations; ORO steps have none
        if not isinstance(ob, dict):
            raise FieldError(f"step {pos}.message.obs[{j}] must be an object")
        key = ob.get("tool_call_id")
        value = ob.get("results", ob.get("result"))
        if isinstance(key, str):
            pending.setdefault(key, []).append(value)
        else:
            positional.append(value)
    calls: list[dict[str, Any]] = []
    tool_msgs: list[dict[str, Any]] = []
    evidence: list[dict[str, Any]] = []
    for i, call in enumerate(raw_calls):
        name = _call_name(pos, i, call)
        params = call["parameters"] if "parameters" in call else call.get("arguments")
        args = dumps(params) if type(params) is dict else arguments_json(params)
        cid = f"call_{pos}_{i}"
        calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": args}})
        has_result = "result" in call
        result = call["result"] if has_result else None
        if not has_result and obs:
            queue = pending.get(call.get("tool_call_id"))
            if queue:
                has_result, result = True, queue.pop(0)
            elif positional:
                has_result, result = True, positional.pop(0)
        if has_result:
            tool_msgs.append({"role": "tool", "tool_call_id": cid, "name": name, "content": result_json(result)})
            ids = product_ids(result)
        else:
            ids = []
        evidence.append({"id": cid, "name": name, "arguments": args, "result_product_ids": ids})
    if obs:  # results that answer no call: kept visibly as orphan tool messages
        leftovers = [v for q in pending.values() for v in q] + positional
        for j, value in enumerate(leftovers):
            tool_msgs.append({"role": "tool", "tool_call_id": f"orphan_{pos}_{j}", "name": "",
                              "content": result_json(value)})
    return calls, tool_msgs, evidence


def _from_openai(obj: Any) -> tuple[dict[str, Any], list, list]:
    record = obj if isinstance(obj, dict) else {}
    raw = obj if isinstance(obj, list) else obj.get("messages")
    if raw is None:
        raise _Empty("messages is null")
    if not isinstance(raw, list):
        raise FieldError(f"messages must be a list, got {type(raw).__name__}")
    head = _record_level(record)
    messages: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    pending: dict[Any, list[str]] = {}
    by_id: dict[str, dict[str, Any]] = {}
    turn = 0
    n_calls = 0
    first_user: str | None = None
    for j, m in enumerate(raw):
        where = f"messages[{j}]"
        if not isinstance(m, dict):
            raise FieldError(f"{where} must be an object")
        role = m.get("role")
        text = "" if role == "tool" else _text(m.get("content"), f"{where}.content")
        if role in ("system", "user"):
            messages.append({"role": role, "content": text})
            if role == "user" and first_user is None:
                first_user = text
        elif role == "assistant":
            turn += 1
            think = ""
            for key in ("reasoning_content", "reasoning", "thinking"):
                think = opt_str(m.get(key), f"{where}.{key}") or ""
                if think:
                    break
            if not think and "<think>" in text:
                think, text = think_and_text(text)
            calls, ev_calls = [], []
            for i, tc in enumerate(opt_list(m.get("tool_calls"), f"{where}.tool_calls")):
                if not isinstance(tc, dict):
                    raise FieldError(f"{where}.tool_calls[{i}] must be an object")
                fn = opt_dict(tc.get("function"), f"{where}.tool_calls[{i}].function")
                name = fn.get("name")
                if not isinstance(name, str):
                    raise FieldError(f"{where}.tool_calls[{i}].function.name must be a string")
                args = arguments_json(fn.get("arguments"))
                cid = f"call_{turn}_{i}"
                calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": args}})
                ev = {"id": cid, "name": name, "arguments": args, "result_product_ids": []}
                ev_calls.append(ev)
                by_id[cid] = ev
                pending.setdefault(tc.get("id") if isinstance(tc.get("id"), str) else None, []).append(cid)
            n_calls += len(calls)
            msg: dict[str, Any] = {"role": "assistant", "content": text, "reasoning_content": think or None}
            if calls:
                msg["tool_calls"] = calls
            messages.append(msg)
            steps.append({"step": turn, "timestamp": as_timestamp(m.get("timestamp")), "think": think,
                          "tool_calls": ev_calls, "inference": [], "search": []})
        elif role == "tool":
            orig = m.get("tool_call_id")
            queue = pending.get(orig if isinstance(orig, str) else None)
            cid = queue.pop(0) if queue else f"orphan_{turn}_{j}"
            ev = by_id.get(cid)
            name = m.get("name") if isinstance(m.get("name"), str) else (ev["name"] if ev else "")
            content = _tool_content(m.get("content"))
            if ev is not None:
                ev["result_product_ids"] = product_ids(content)
            messages.append({"role": "tool", "tool_call_id": cid, "name": name, "content": content})
        else:
            raise FieldError(f"{where}.role must be system/user/assistant/tool, got {role!r}")
    if turn == 0:
        raise _Empty("no assistant message")
    if head["query"] is None:
        head["query"] = first_user
    head.update(messages=dumps(messages), tools=_tools(record), steps=dumps(steps), n_steps=len(steps),
                n_tool_calls=n_calls)
    return head, messages, steps



#: the eras ``era_counts``' counts name, as the ``from_steps`` kernel takes them: (mixed, a6b1cf3, later)
_ERAS = (ERA_MIXED, ERA_A6B1CF3, ERA_LATER)
