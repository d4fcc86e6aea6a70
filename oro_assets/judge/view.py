"""The judge view (reference §4): what an LLM judge is shown of one trajectory.

The query, a summary of the verified proxy calls (counts, completion tokens, the call sequence
with returned product ids), then each step's THINKING (<= 1000 chars) and TOOL/RESULT
(<= 300 chars each), ORO's truncations.
"""

from __future__ import annotations

from oro_assets.judge.evidence import TraceEvidence

THINK_LIMIT = 1000
RESULT_LIMIT = 300
IDS_SHOWN = 10


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"…[truncated, {len(text)} chars]"


def _ids(ids: tuple[str, ...]) -> str:
    shown = ", ".join(ids[:IDS_SHOWN])
    more = f", +{len(ids) - IDS_SHOWN} more" if len(ids) > IDS_SHOWN else ""
    return f"[{shown}{more}]"


def proxy_summary(evidence: TraceEvidence) -> list[str]:
    inference = [inf for step in evidence.steps for inf in step.inference]
    ok = [inf for inf in inference if inf.succeeded]
    tokens = sum(inf.completion_tokens or 0 for inf in ok)
    searches = [s for step in evidence.steps for s in step.search]
    lines = [
        f"inference calls: {len(inference)} ({len(ok)} succeeded), completion tokens: {tokens}",
        f"search calls: {len(searches)}",
        "call sequence:",
    ]
    n = 0
    for step in evidence.steps:
        for inf in step.inference:
            n += 1
            names = ",".join(inf.tool_call_names) or "none"
            dropped = f" body dropped (length {inf.response_length})" if inf.response_length else ""
            lines.append(
                f"  {n}. step {step.step} inference status={inf.status_code} "
                f"completion_tokens={inf.completion_tokens} emitted_tool_calls={names}{dropped}"
            )
        for search in step.search:
            n += 1
            lines.append(f"  {n}. step {step.step} search {search.path} -> ids {_ids(search.result_product_ids)}")
    if n == 0:
        lines.append("  (none)")
    return lines


def build_view(evidence: TraceEvidence) -> str:
    """Plain-text judge view of one trajectory (to be fenced as untrusted data by the caller)."""
    lines = [f"QUERY: {evidence.query}", "", "VERIFIED PROXY CALLS:", *proxy_summary(evidence), ""]
    for step in evidence.steps:
        lines.append(f"STEP {step.step}")
        lines.append(f"THINKING: {clip(step.think, THINK_LIMIT)}")
        for call in step.calls:
            lines.append(f"TOOL: {call.name} {clip(call.arguments, RESULT_LIMIT)}")
            lines.append(f"RESULT: {clip(call.result, RESULT_LIMIT)}")
        if not step.calls and step.response:
            lines.append(f"RESPONSE: {clip(step.response, RESULT_LIMIT)}")
        lines.append("")
    return "\n".join(lines)
