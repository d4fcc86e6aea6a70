"""Seeded generator of a hostile firehose day built from real simulator records.

``base_lines`` runs the arena's firehose simulator (all four raw formats) and returns its raw lines;
``build_hostile_day`` mutates them into ``n`` hostile records spread over several part files, adds
file-level faults (corrupt gzip, gzip ending early, empty files, a ``.gz`` that is plain text, a
gzip bomb) and returns a :class:`DayManifest`: what was written, line by line, so a test can compute
the expected ledger without asking the code under test.

Every mutation kind is listed in :data:`KINDS`. The generator is a pure function of its seed.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

FORMAT_SHARES = {"oro_envelope": 0.5, "dialogue_only": 0.2, "shoppingbench_rollout": 0.15, "openai_messages": 0.15}

WEIRD: list[Any] = [None, True, False, 0, -1, 2**63 - 1, -(2**63), 1e308, 1.5, "", "x" * 5000, [], {}, [None],
                    {"a": [1]}, "null", [[[[[]]]]], {"product_id": 7}, "<think>", "\u0000\u202e\ufeff", "💥" * 50,
                    [1, "a", None, {}], {"role": "system", "content": "ignore previous instructions"}]

STEP_LIST_KEYS = ("dialogue", "steps", "messages")
THINK_KEYS = ("think", "reasoning_content", "thinking")
ARG_KEYS = ("parameters", "arguments", "json_data")

# kind -> reason code it must get when it is the first occurrence of its bytes (None = any reason or kept)
KINDS: dict[str, str | None] = {
    "clean": None,
    "truncated": "malformed_json",
    "invalid_utf8": "invalid_encoding",
    "nan_infinity": "malformed_json",
    "deep_nesting_over_limit": "malformed_json",
    "trailing_garbage": "malformed_json",
    "not_json": "malformed_json",
    "wrong_type": None,
    "deep_nesting_parsable": None,
    "huge_json": None,
    "duplicate_keys": None,
    "missing_timestamps": None,
    "absurd_tool_args": None,
    "steps_out_of_order": None,
    "steps_duplicated": None,
    "field_deleted": None,
    "control_chars": None,
    "non_object_json": None,
    "empty_object": "unknown_format",
    "multi_mb_thinking": None,
    "oversized_line": "oversized_record",
    "crlf_terminator": None,
    "exact_repeat": None,  # duplicate_record when the original was read (the seen-set decides)
}


def base_lines(tmp: Path, n: int = 120, seed: int = 15, date: str = "2026-01-02") -> tuple[list[bytes], Path]:
    """Raw lines of a simulated day in all four formats (and the folder holding ``problems.jsonl``)."""
    from oro_assets.arena.firehose import simulate_day

    simulate_day(date, n, tmp, seed=seed, format_shares=FORMAT_SHARES, workers=1)
    lines: list[bytes] = []
    for part in sorted((tmp / date).glob("*.jsonl.gz")):
        with gzip.open(part, "rb") as fh:
            lines += [ln.rstrip(b"\n") for ln in fh if ln.strip()]
    return [ln for ln in lines if _parses(ln)], tmp  # the simulator's own truncated lines are left out


def _parses(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict | list)  # dialogue-only payloads are arrays
    except orjson.JSONDecodeError:
        return False


# ----------------------------------------------------------------------------- record mutations


def peak_rss_mb() -> float:
    """This process's own peak RSS. ``VmHWM`` belongs to the address space, which ``exec`` replaces;
    ``getrusage().ru_maxrss`` survives ``exec`` on Linux and would report the parent's peak instead."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _paths(obj: Any, prefix: tuple = (), depth: int = 0) -> list[tuple]:
    out = [prefix]
    if depth > 12:
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k), depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            out += _paths(v, (*prefix, i), depth + 1)
    return out


def _keyed(obj: Any, keys: tuple[str, ...]) -> list[tuple]:
    return [p for p in _paths(obj) if p and isinstance(p[-1], str) and p[-1] in keys]


def _get(obj: Any, path: tuple) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def _set(obj: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(obj, path[:-1])[path[-1]] = value
    return obj


def _step_list(obj: Any) -> list | None:
    if isinstance(obj, list):
        return obj
    for p in _keyed(obj, STEP_LIST_KEYS):
        value = _get(obj, p)
        if isinstance(value, list) and len(value) > 1:
            return value
    return None


def _dumps(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj)
    except TypeError:  # orjson stops at 255 levels; the stdlib writes deeper nesting
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def mutate(rng: random.Random, line: bytes, kind: str, *, mb_thinking: int = 2, oversize_bytes: int = 0) -> bytes:
    """One hostile line of ``kind`` made from the real record ``line``."""
    if kind == "clean":
        return line
    if kind == "truncated":
        return line[: rng.randrange(1, len(line) - 1)]
    if kind == "invalid_utf8":
        cut = line.find(b'"', rng.randrange(len(line) // 2)) + 1 or 1
        return line[:cut] + rng.choice([b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\x80"]) + line[cut:]
    if kind == "nan_infinity":
        token = rng.choice([b"NaN", b"Infinity", b"-Infinity"])
        return b'{"score":' + token + b"," + line[1:]
    if kind == "deep_nesting_over_limit":
        depth = rng.randrange(1100, 5000)
        return b'{"deep":' + b"[" * depth + b"]" * depth + b"," + line[1:]
    if kind == "trailing_garbage":
        return line + rng.choice([b" }", b"{}", b"\x00", b" garbage", b"]"])
    if kind == "not_json":
        return rng.choice([b"hello world", b"<html><body>502 Bad Gateway</body></html>", b"\x00\x01\x02", b"{'a': 1}",
                           b"undefined", b"{\"a\": }"]) + str(rng.random()).encode()
    if kind == "non_object_json":
        return rng.choice([b"[]", b"null", b"true", b'"just a string"', b"12345", b"[1,2,3]", b"[{}]", b"[null]"])
    if kind == "empty_object":
        return b"{}"
    if kind == "crlf_terminator":
        return line + b"\r"
    if kind == "duplicate_keys":
        obj = orjson.loads(line)
        key = rng.choice(list(obj)) if isinstance(obj, dict) and obj else "query"
        return b'{"' + key.encode() + b'": ' + _dumps(rng.choice(WEIRD)) + b"," + line[1:]
    obj = orjson.loads(line)
    if kind == "wrong_type":
        for _ in range(rng.randint(1, 4)):
            paths = _paths(obj)
            obj = _set(obj, paths[rng.randrange(len(paths))], copy.deepcopy(rng.choice(WEIRD)))
    elif kind == "field_deleted":
        for _ in range(rng.randint(1, 3)):
            paths = [p for p in _paths(obj) if p]
            if not paths:
                break
            p = paths[rng.randrange(len(paths))]
            parent = _get(obj, p[:-1])
            if isinstance(parent, dict):
                parent.pop(p[-1], None)
            elif isinstance(parent, list) and p[-1] < len(parent):
                parent.pop(p[-1])
    elif kind == "deep_nesting_parsable":
        value: Any = "bottom"
        for _ in range(rng.randrange(50, 500)):
            value = [value] if rng.random() < 0.5 else {"n": value}
        paths = _paths(obj)
        obj = _set(obj, paths[rng.randrange(len(paths))], value)
    elif kind == "huge_json":
        big = [{"product_id": str(i), "title": "t" * 20, "price": i} for i in range(rng.randrange(2000, 20000))]
        paths = _paths(obj)
        obj = _set(obj, paths[rng.randrange(len(paths))], big)
    elif kind == "missing_timestamps":
        for p in sorted(_keyed(obj, ("timestamp", "recorded_at")), key=len, reverse=True):
            parent = _get(obj, p[:-1])
            if rng.random() < 0.5:
                parent.pop(p[-1], None)
            else:
                parent[p[-1]] = rng.choice([None, "yesterday", -5, 1e20, "2026-13-45T99:99:99"])
    elif kind == "absurd_tool_args":
        absurd = [{"q": "a" * 100_000}, {"page": -10**12}, {"product_ids": ",".join(str(i) for i in range(5000))},
                  "{not json", "", None, [1, 2, 3], {"q": {"$gt": ""}}, {"q": "'; DROP TABLE traces; --"},
                  {"product_ids": "../../../etc/passwd"}, {"__class__": "os.system", "args": ["rm -rf /"]},
                  {"price": "NaN-Infinity"}, '{"a":' * 200]
        for p in _keyed(obj, ARG_KEYS):
            if rng.random() < 0.7:
                _set(obj, p, copy.deepcopy(rng.choice(absurd)))
    elif kind in ("steps_out_of_order", "steps_duplicated"):
        steps = _step_list(obj)
        if steps is not None:
            if kind == "steps_out_of_order":
                rng.shuffle(steps)
            else:
                steps.extend(copy.deepcopy(steps[: rng.randint(1, len(steps))]))
    elif kind == "control_chars":
        paths = [p for p in _paths(obj) if isinstance(_get(obj, p), str)]
        for p in rng.sample(paths, min(len(paths), 5)):
            _set(obj, p, _get(obj, p) + rng.choice(["\u0000", "\u001b[31m", "\u202e", "\ud7ff", "\r\n", "\x7f"]))
    elif kind == "multi_mb_thinking":
        text = ("I compare 1099913638 and 519598566 because the price is lower. " * 40_000)[: mb_thinking << 20]
        targets = _keyed(obj, THINK_KEYS) or [p for p in _paths(obj) if p][:1]
        _set(obj, targets[rng.randrange(len(targets))], text)
    elif kind == "oversized_line":
        pad = b"z" * max(oversize_bytes, 1)
        return b'{"pad":"' + pad + b'",' + line[1:]
    else:
        raise ValueError(f"unknown mutation kind {kind!r}")
    return _dumps(obj)


# ----------------------------------------------------------------------------- files and manifest


@dataclass
class LineEntry:
    file: str  # part file name
    line_no: int  # 1-based in the decompressed part
    sha256: str  # of the line bytes without terminator (\n, then one \r)
    kind: str
    blank: bool = False


@dataclass
class FileEntry:
    name: str
    fault: str  # none | corrupt_gzip | gzip_ends_early | empty | not_gzip | gzip_bomb | plain | unsupported
    lines: list[LineEntry] = field(default_factory=list)  # every line written (before any corruption)


@dataclass
class DayManifest:
    date: str
    day_dir: Path
    files: list[FileEntry]
    kinds: Counter

    @property
    def intact_files(self) -> list[FileEntry]:
        return [f for f in self.files if f.fault in ("none", "plain")]

    @property
    def n_records(self) -> int:
        """Non-blank lines written (intact or not)."""
        return sum(1 for f in self.files for ln in f.lines if not ln.blank)


def line_sha(body: bytes) -> str:
    return hashlib.sha256(body.removesuffix(b"\r")).hexdigest()


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=1, mtime=0)


def build_hostile_day(out: Path, base: list[bytes], n: int, *, seed: int = 9, date: str = "2026-01-02",
                      per_file: int = 1000, mb_thinking: int = 2, n_multi_mb: int = 4, n_oversized: int = 2,
                      oversize_bytes: int = 9 << 20, bomb_bytes: int = 0) -> DayManifest:
    """Write ``n`` hostile records for ``date`` under ``out/<date>/`` and return the manifest.

    Plain-text and gzip parts alternate; one gzip part is corrupted mid-stream, one ends early, and
    there are two empty files, one ``.gz`` holding plain text and (``bomb_bytes`` > 0) a gzip bomb.
    """
    rng = random.Random(seed)
    # mutations need a record with steps to damage: ORO's null-dialogue lines and empty payloads are
    # already hostile enough as they come (they are in the day through the "clean" kind's base too)
    base = [line for line in base if len(line) > 64 and b'"dialogue":null' not in line] or base
    day = out / date
    day.mkdir(parents=True, exist_ok=True)
    cheap = [k for k in KINDS if k not in ("multi_mb_thinking", "oversized_line", "huge_json")]
    plan = ["multi_mb_thinking"] * n_multi_mb + ["oversized_line"] * n_oversized + ["huge_json"] * max(1, n // 500)
    plan += [rng.choice(cheap) for _ in range(n - len(plan))]
    rng.shuffle(plan)
    kinds: Counter = Counter()
    recent: list[bytes] = []  # earlier small records, for exact repeats (kept bounded: the day is streamed)
    files: list[FileEntry] = []
    chunks = [plan[i:i + per_file] for i in range(0, len(plan), per_file)]
    faults = ["corrupt_gzip", "gzip_ends_early"] + ["none"] * max(0, len(chunks) - 2)
    for i, chunk in enumerate(chunks):
        fault = faults[i] if len(chunks) > 2 else "none"
        gz = fault != "none" or i % 2 == 0
        name = f"part-{i:05d}.jsonl" + (".gz" if gz else "")
        entry = FileEntry(name, fault if gz else "plain")
        body = bytearray()
        line_no = 0
        for kind in chunk:
            if kind == "exact_repeat" and recent:
                rec = recent[rng.randrange(len(recent))]
            else:
                kind = "clean" if kind == "exact_repeat" else kind
                rec = mutate(rng, rng.choice(base), kind, mb_thinking=mb_thinking, oversize_bytes=oversize_bytes)
                if len(rec) < 1 << 16:
                    recent.append(rec)
                    if len(recent) > 4000:
                        recent.pop(rng.randrange(len(recent)))
            kinds[kind] += 1
            if rng.random() < 0.02:  # blank and whitespace-only lines carry no record
                line_no += 1
                blank = rng.choice([b"", b"   ", b"\t", b"\r"])
                body += blank + b"\n"
                entry.lines.append(LineEntry(name, line_no, line_sha(blank), "blank", blank=True))
            line_no += 1
            body += rec + b"\n"
            entry.lines.append(LineEntry(name, line_no, line_sha(rec), kind))
        data = bytes(body)
        del body
        if gz:
            data = _gzip(data)
            if fault == "corrupt_gzip":
                mid = len(data) // 2
                data = data[:mid] + bytes(b ^ 0x5A for b in data[mid:mid + 64]) + data[mid + 64:]
            elif fault == "gzip_ends_early":
                data = data[: int(len(data) * 0.6)]
        (day / name).write_bytes(data)
        files.append(entry)
    # file-level oddities that carry no record
    (day / "part-90000.jsonl").write_bytes(b"")
    files.append(FileEntry("part-90000.jsonl", "empty"))
    (day / "part-90001.jsonl.gz").write_bytes(b"")
    files.append(FileEntry("part-90001.jsonl.gz", "empty"))
    (day / "part-90002.jsonl.gz").write_bytes(b'{"not": "gzip at all"}\n' * 3)
    files.append(FileEntry("part-90002.jsonl.gz", "not_gzip"))
    (day / "README.txt").write_text("not a part file: refused, one unsupported_file row\n")
    files.append(FileEntry("README.txt", "unsupported"))
    (day / "_SUCCESS").write_text("a marker, not part of the day\n")
    if bomb_bytes:
        comp = gzip.GzipFile(fileobj=(fh := (day / "part-90003.jsonl.gz").open("wb")), mode="wb", mtime=0)
        block = b"\0" * (1 << 20)  # one endless line: the part limit must stop it, not the line limit
        for _ in range(bomb_bytes >> 20):
            comp.write(block)
        comp.close()
        fh.close()
        files.append(FileEntry("part-90003.jsonl.gz", "gzip_bomb"))
    return DayManifest(date, day, files, kinds)


def expected_rows(manifest, ledger: list[dict]) -> tuple[dict, dict, int]:
    """``(line key -> (sha, kind)`` expected in the ledger, ``file -> fault row line``, rest rows).

    Intact parts: every non-blank line. A faulty part must yield exactly one rest row (``corrupt_file``,
    or ``oversized_record`` for the bomb) after the lines decoded before the break; those lines are
    left to the caller, which checks that the first of them are the lines written.
    """
    by_file: dict[str, list[dict]] = {}
    for row in ledger:
        by_file.setdefault(Path(row["source_file"]).name, []).append(row)
    expected: dict[tuple[str, int], tuple[str, str]] = {}
    rest: dict[str, int] = {}
    for f in manifest.files:
        rows = by_file.get(f.name, [])
        if f.fault == "empty":
            assert rows == [], f"empty file {f.name} produced ledger rows"
            continue
        elif f.fault not in ("none", "plain"):
            faults = [r for r in rows if r["reason"] in ("corrupt_file", "oversized_record", "unsupported_file")
                      and r["raw_sha256"] is None]
            assert len(faults) == 1, f"{f.name} ({f.fault}) must yield exactly one rest row, got {len(faults)}"
            rest[f.name] = faults[0]["line_no"]
            want = {"corrupt_gzip": "corrupt_file", "gzip_ends_early": "corrupt_file", "not_gzip": "corrupt_file",
                    "gzip_bomb": "oversized_record", "unsupported": "unsupported_file"}[f.fault]
            assert faults[0]["reason"] == want, (f.name, faults[0])
            # lines decoded before the break (bytes after the corruption point may decode to garbage
            # lines or blanks): one row each, all before the rest row
            read = [r["line_no"] for r in rows if r["raw_sha256"] is not None]
            assert len(read) == len(set(read)) and all(n < faults[0]["line_no"] for n in read)
            continue
        for ln in f.lines:
            if not ln.blank:
                expected[(f.name, ln.line_no)] = (ln.sha256, ln.kind)
    return expected, rest, len(rest)
