"""What of an ORO record the curation chain never reads, and what parsing it costs (issue 33).

The normaliser is the only reader of a parsed line (``traces/normalize.py``; every later step reads its columns).
Of a proxy call it reads: an inference request's ``json_data`` only for whether it is a dict holding ``messages``
(the recorder era); a search response only for its product ids, and not at all when ``result_product_ids`` is
listed beside it (the later recorder); everything else it reads whole (tool results become the tool messages,
answers the inference evidence). This prints, per recorder era, each part's share of the day's bytes, and
``orjson.loads`` of the day's lines with those parts written as ``0`` (re-encoded by orjson, so the only
difference is the parts left out): the most a decoder that never builds them (``msgspec.Raw`` fields, a lazy
parse) could save on the parse, before what it costs to stay exact (see ``docs/experiments.md``, session 26).

    nice -n 19 .venv/bin/python benchmarks/unread_bytes.py --traces 3000
    nice -n 19 .venv/bin/python benchmarks/unread_bytes.py --traces 1500 --later-share 1
    .venv/bin/python benchmarks/unread_bytes.py --exactness     # what msgspec accepts in a value it skips (dev extra)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from curation_chain import generate  # noqa: E402
from report import emit  # noqa: E402

#: the proxy-call parts left out, cumulatively: (name, kind of call, key)
VARIANTS = {
    "inference_json_data": [("inference", "json_data")],
    "search_response": [("search", "response")],
    "both": [("inference", "json_data"), ("search", "response")],
    "all_proxy_bodies": [("inference", "json_data"), ("search", "response"), ("inference", "response"),
                         ("search", "params")],
}


def _calls(obj):
    if isinstance(obj, dict) and isinstance(obj.get("dialogue"), list):
        for step in obj["dialogue"]:
            extra = step.get("extra_info") if isinstance(step, dict) else None
            for call in (extra.get("proxy_calls") or []) if isinstance(extra, dict) else []:
                if isinstance(call, dict):
                    yield ("inference" if "/inference" in str(call.get("path")) else "search"), call


def shares(objs: list, total: int) -> dict:
    parts: Counter = Counter()
    for obj in objs:
        for kind, call in _calls(obj):
            for key, value in call.items():
                parts[f"proxy.{kind}.{key}"] += len(orjson.dumps(value))
        if isinstance(obj, dict) and isinstance(obj.get("dialogue"), list):
            for step in obj["dialogue"]:
                msg = ((step.get("completion") or {}).get("message") or {}) if isinstance(step, dict) else {}
                for call in (msg.get("tool_call") or []) if isinstance(msg, dict) else []:
                    if isinstance(call, dict) and "result" in call:
                        parts["step.tool_call.result"] += len(orjson.dumps(call["result"]))
    return {k: round(100 * v / total, 1) for k, v in parts.most_common(8)}


#: values orjson and msgspec may read differently, each put in a record as ``{"a": <value>}``
EDGE_VALUES = [b'"\xff"', b'"\xed\xa0\x80"', b'"\xc0\x80"', b'"\xf4\x90\x80\x80"', b'"\\ud800"', b'"\\udc00"',
               b'"\x01"', b'"\\x"', b"1e400", b"-1e400", b"1" + b"0" * 400, b"18446744073709551616",
               b"-9223372036854775809", b"[1,]", b"[" * 1023 + b"]" * 1023, b"[" * 1025 + b"]" * 1025]


def exactness() -> dict:
    """Each edge value as ``orjson.loads`` reads it, and msgspec decoding it into ``Any``, into a ``Raw`` field,
    and skipping it as an unknown field: ``ok <value>`` or the exception's type."""
    import msgspec

    as_raw = msgspec.defstruct("AsRaw", [("a", msgspec.Raw, msgspec.Raw(b"null"))])
    skips = msgspec.defstruct("Skips", [("b", int, 0)])

    readers = {"orjson": orjson.loads, "msgspec_any": msgspec.json.Decoder().decode,
               "msgspec_raw": msgspec.json.Decoder(as_raw).decode, "msgspec_skipped": msgspec.json.Decoder(skips).decode}
    out = {}
    for value in EDGE_VALUES:
        row = {}
        for name, read in readers.items():
            try:
                got = read(b'{"a":' + value + b"}")
            except Exception as exc:  # noqa: BLE001 - reported, whichever it is
                row[name] = type(exc).__name__
                continue
            shown = name in ("orjson", "msgspec_any") and len(value) < 100  # (a deep value's repr would recurse)
            row[name] = "ok " + (repr(got)[:40] if shown else "")
        out[f"{value[:24]!r} ({len(value)} bytes)"] = row
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--later-share", type=float, default=0.0)
    ap.add_argument("--cache", default="/tmp/chain-bench")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--exactness", action="store_true", help="only the orjson / msgspec edge values")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if args.exactness:
        emit({"orjson": orjson.__version__, "edge_values": exactness()}, args.json)
        return 0
    files = generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)[1]
    objs = []
    for path in files:
        with open(path, "rb") as fh:
            for line in fh:
                try:
                    objs.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue
    lines = {"full": [orjson.dumps(o) for o in objs]}
    for name, cut in VARIANTS.items():
        out = []
        for line in lines["full"]:
            obj = orjson.loads(line)
            for kind, call in _calls(obj):
                for k, key in cut:
                    if k == kind and key in call:
                        call[key] = 0
            out.append(orjson.dumps(obj))
        lines[name] = out
    cost = {}
    for name, ls in lines.items():
        best = float("inf")
        for _ in range(args.reps):
            t0 = time.thread_time()
            for line in ls:
                orjson.loads(line)
            best = min(best, time.thread_time() - t0)
        cost[name] = {"orjson_us_per_line": round(1e6 * best / len(ls), 1),
                      "bytes_per_line": round(sum(map(len, ls)) / len(ls))}
    full = cost["full"]["orjson_us_per_line"]
    for name in VARIANTS:
        cost[name]["saved_share"] = round(1 - cost[name]["orjson_us_per_line"] / full, 3)
    total = sum(map(len, lines["full"]))
    emit({"traces": args.traces, "later_share": args.later_share, "lines": len(objs),
          "share_of_bytes_pct": shares(objs, total), "orjson_without": cost}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
