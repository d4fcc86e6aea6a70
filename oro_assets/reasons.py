"""The single vocabulary of record fates.

Every raw record ends in the trace ledger with exactly one fate: ``kept`` or ``rejected``
with one :class:`ReasonCode`. Stages never invent ad-hoc strings: add a member here (with its
documentation line) and every report, check and CLI picks it up.
"""

from __future__ import annotations

from enum import StrEnum


class Stage(StrEnum):
    """Pipeline stage at which a record's fate was decided (ledger column ``stage``)."""

    INGEST = "ingest"
    NORMALIZE = "normalize"
    STRUCTURAL = "structural"
    GATES = "gates"
    DEDUP = "dedup"
    SPLIT = "split"


class ReasonCode(StrEnum):
    """Why a record was set aside. Values are stable identifiers stored in Parquet."""

    MALFORMED_JSON = "malformed_json"
    INVALID_ENCODING = "invalid_encoding"
    CORRUPT_FILE = "corrupt_file"
    UNSUPPORTED_FILE = "unsupported_file"
    UNKNOWN_FORMAT = "unknown_format"
    SCHEMA_VIOLATION = "schema_violation"
    EMPTY_DIALOGUE = "empty_dialogue"
    DUPLICATE_RECORD = "duplicate_record"
    OVERSIZED_RECORD = "oversized_record"
    NO_INFERENCE = "no_inference"
    SUBTASK = "subtask"
    NO_TOOL_CALLS = "no_tool_calls"
    UNPAIRED_TOOL_CALL = "unpaired_tool_call"
    RECOMMEND_NOT_ONCE = "recommend_not_once"
    RECOMMEND_ARGS_UNPARSEABLE = "recommend_args_unparseable"
    OVER_TOKEN_BUDGET = "over_token_budget"
    THINK_THEN_STOP = "think_then_stop"
    UNGROUNDED_RECOMMENDATION = "ungrounded_recommendation"
    REASONING_BELOW_THRESHOLD = "reasoning_below_threshold"
    JUDGE_UNAVAILABLE = "judge_unavailable"
    LOW_AGENTIC_RICHNESS = "low_agentic_richness"
    NEAR_DUPLICATE = "near_duplicate"
    LEAK_CONFLICT = "leak_conflict"


REASON_DOCS: dict[ReasonCode, str] = {
    ReasonCode.MALFORMED_JSON: "The line is not valid JSON (truncated, NaN/Infinity literals, trailing garbage).",
    ReasonCode.INVALID_ENCODING: "The line is not valid UTF-8.",
    ReasonCode.CORRUPT_FILE: "The rest of a firehose part could not be read (corrupt or truncated gzip, unreadable Parquet); one ledger row per unreadable part.",
    ReasonCode.UNSUPPORTED_FILE: "A file of a day folder that is no part file (.jsonl, .jsonl.gz, .parquet): not read; one ledger row per file.",
    ReasonCode.UNKNOWN_FORMAT: "Valid JSON, but none of the five firehose formats (ORO envelope, dialogue-only, ShoppingBench rollout, OpenAI messages, ShareGPT/NeMo conversations).",
    ReasonCode.SCHEMA_VIOLATION: "A known format, but a field has the wrong type or the normalised trace fails schema validation.",
    ReasonCode.EMPTY_DIALOGUE: "The record has no steps / messages (null or empty dialogue).",
    ReasonCode.DUPLICATE_RECORD: "Byte-identical raw line already seen in this partition (same sha256).",
    ReasonCode.OVERSIZED_RECORD: "The raw line, or a decompressed part, exceeds the configured size limit.",
    ReasonCode.NO_INFERENCE: "No inference call at all: a scripted (regex) agent, not a model.",
    ReasonCode.SUBTASK: "A deterministic loop drives the tools; the model only classifies or narrates (kept in subtask_traces).",
    ReasonCode.NO_TOOL_CALLS: "The trajectory never calls a tool.",
    ReasonCode.UNPAIRED_TOOL_CALL: "A tool call without a tool response, or a response without a call.",
    ReasonCode.RECOMMEND_NOT_ONCE: "recommend_product is called zero times or more than once.",
    ReasonCode.RECOMMEND_ARGS_UNPARSEABLE: "The recommend_product arguments cannot be parsed into product ids.",
    ReasonCode.OVER_TOKEN_BUDGET: "The rendered trajectory exceeds the token budget of the active model profile.",
    ReasonCode.THINK_THEN_STOP: "The trajectory ends in thinking without acting.",
    ReasonCode.UNGROUNDED_RECOMMENDATION: "A recommended product id never appeared in any tool result (shortcut or hallucination).",
    ReasonCode.REASONING_BELOW_THRESHOLD: "The reasoning-judge score is below the configured threshold.",
    ReasonCode.JUDGE_UNAVAILABLE: "The judge could not score the trace (never scored 0; excluded rather than guessed).",
    ReasonCode.LOW_AGENTIC_RICHNESS: "ORO's agentic_richness (share of catalogue dispatches the latest answer named next) is below ORO_MIN_AGENTIC_RICHNESS (off by default; records where it is not computable pass).",
    ReasonCode.NEAR_DUPLICATE: "Exact or near duplicate of a higher-ranked kept trace.",
    ReasonCode.LEAK_CONFLICT: "The trace's problem bridges leak clusters already assigned to different pools.",
}

assert set(REASON_DOCS) == set(ReasonCode), "every reason code must be documented"
