"""HttpEnv against a real `arena serve` server on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import json
import urllib.request

import pytest

from oro_assets.arena.env import HttpEnv, InProcessEnv
from oro_assets.arena.generator import build_world
from oro_assets.arena.server import running_server
from oro_assets.arena.tools import execute_tool


@pytest.fixture(scope="module")
def world():
    return build_world(5, n_problems=20, n_products=800)


def test_http_env_matches_in_process(world):
    local = InProcessEnv(world.catalogue)
    with running_server(world.catalogue) as url:
        assert url.startswith("http://127.0.0.1:")
        remote = HttpEnv(url, timeout=10)
        for p in world.problems[:8]:
            q = p["query"]
            for kwargs in ({}, {"sort": "priceasc"}, {"price": "50-", "page": 1}, {"service": "COD", "sort": "order"}):
                assert remote.find_product(q, **kwargs) == local.find_product(q, **kwargs)
        ids = ",".join(h["product_id"] for h in local.find_product(world.problems[0]["query"]))
        assert remote.view_product_information(ids) == json.loads(json.dumps(local.view_product_information(ids)))
        pid = world.catalogue.products[0]["product_id"]
        assert remote.get_product_raw(pid) == world.catalogue.get(pid)
        assert remote.get_product_raw("nope") is None
        # arguments ORO's server cannot read: an empty page, an ignored filter (no error either way)
        assert remote.find_product("lamp", page=7) == []
        q0 = world.problems[0]["query"]
        assert execute_tool(remote, "find_product", {"q": q0, "price": "cheap"}) == local.find_product(q0)
        # POST with a JSON body and the /search prefix ORO's proxy uses
        req = urllib.request.Request(f"{url}/search/find_product", data=json.dumps({"q": q0, "page": 1}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert json.loads(resp.read()) == local.find_product(world.problems[0]["query"])


def test_http_env_rejects_non_http_url():
    with pytest.raises(ValueError):
        HttpEnv("file:///etc/passwd")


def _post(url: str, path: str, body: dict) -> tuple[int, object]:
    import urllib.error

    req = urllib.request.Request(f"{url}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_typed_json_arguments_read_as_their_query_string_never_a_dropped_connection(world):
    local = InProcessEnv(world.catalogue)
    q = world.problems[0]["query"]
    hits = local.find_product(q)
    ids = [h["product_id"] for h in hits[:2]]
    with running_server(world.catalogue) as url:
        # a JSON 1.0 travels as "1.0", which ORO's process_page does not read as a page
        assert _post(url, "/find_product", {"q": q, "page": 1.0}) == (200, [])
        assert HttpEnv(url, timeout=10).find_product(q, page=1.0) == []
        assert _post(url, "/find_product", {"q": q, "page": 1}) == (200, json.loads(json.dumps(hits)))
        # a list is a repeated parameter; the server reads its first value
        first = local.find_product(q, service="COD")
        assert _post(url, "/find_product", {"q": q, "page": 1, "service": ["COD", "freeShipping"]}) == (
            200, json.loads(json.dumps(first)))
        assert _post(url, "/view_product_information", {"product_ids": ids}) == (
            200, json.loads(json.dumps(local.view_product_information(ids[0]))))
        assert _post(url, "/find_product", {"q": q, "page": 1, "sort": 1}) == (200, json.loads(json.dumps(hits)))
        code, body = _post(url, "/view_product_information", {})
        assert code == 500 and "error" in body
