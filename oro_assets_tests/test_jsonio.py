"""The one JSON codec: texts that must stay Python's own, and no second codec in the package."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from oro_assets import jsonio

PACKAGE = Path(__file__).resolve().parents[1] / "oro_assets"

# Modules that still import json themselves; the list only shrinks.
KNOWN_DIRECT_JSON = {
    "agents/toolcall.py",  # raw_decode of a tool-call body; merges into the one tool-call parser
    "toolcalls.py",  # the same parser, moving to the bottom layer
    "judge/llm.py",
    "judge/testing.py",
}


def test_report_text_is_pythons_indented_sorted_text():
    text = jsonio.dumps_pretty({"lr": 1e-05, "b": [1], "a": float("nan"), "when": Path("x")})
    assert text == '{\n  "a": NaN,\n  "b": [\n    1\n  ],\n  "lr": 1e-05,\n  "when": "x"\n}'


def test_lenient_loads_reads_nan_and_still_rejects_garbage():
    value = jsonio.loads_lenient('{"loss": NaN, "n": 2}')
    assert math.isnan(value["loss"]) and value["n"] == 2
    with pytest.raises(jsonio.JSONDecodeError):
        jsonio.loads_lenient("{loss")
    with pytest.raises(jsonio.JSONDecodeError):
        jsonio.loads('{"loss": NaN}')


def test_template_and_stdlib_texts():
    assert jsonio.template_dumps({"q": "café", "n": [1, 2]}) == '{"q": "café", "n": [1, 2]}'
    assert jsonio.stdlib_dumps({"q": "café"}) == '{"q": "caf\\u00e9"}'
    assert jsonio.stdlib_dumps({"b": 1, "a": Path("p")}, sort_keys=True, default=str) == '{"a": "p", "b": 1}'
    assert jsonio.dumps({"b": 1, "a": 2}) == '{"b":1,"a":2}'


def test_no_second_json_codec_in_the_package():
    direct = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "jsonio.py":
            continue
        if re.search(r"^\s*(import (json|orjson)\b|from (json|orjson) import)", path.read_text(), re.M):
            direct.add(rel)
    assert direct <= KNOWN_DIRECT_JSON, f"use oro_assets.jsonio instead of json/orjson in {sorted(direct - KNOWN_DIRECT_JSON)}"
