"""``arena serve``: the embedded catalogue over ORO's search-server endpoints (stdlib HTTP).

GET endpoints as ORO's server (``src/search_engine/server.py``) has them, answering as it does on
every input (docs/oro-server-parity.md): ``/find_product`` (``q,page,shop_id,price,sort,service``:
what it cannot read is ignored, a missing or bad page or an empty query gives ``[]``),
``/view_product_information`` (``product_ids``; unknown ids left out), ``/get_product_raw``
(``product_ids`` -> full documents), ``/health`` and ``/`` (usage). A repeated parameter counts
once, by its first value. ORO's server fails (HTTP 500) where it cannot read the input at all:
``/view_product_information`` without ``product_ids``, a page of digits ``int()`` refuses.
Ours only: ``/get_product_raw?product_id=X`` (one document or 404, what ``HttpEnv`` asks), POST
with the parameters as a JSON object (each value read as the query string would carry it), and
the same paths under a ``/search`` prefix (how ORO's proxy exposes them). Bound to 127.0.0.1 by
default.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from oro_assets import jsonio
from oro_assets.arena.catalogue import Catalogue
from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.search import ServerError, query_value

MAX_BODY = 1 << 20
USAGE = {"/find_product": "q,page,shop_id,price,sort,service", "/view_product_information": "product_ids"}


class _Handler(BaseHTTPRequestHandler):
    server_version = "oro-arena/1"
    env: InProcessEnv  # set on the subclass made by make_server

    def log_message(self, format: str, *args: Any) -> None:  # quiet by default
        pass

    def _send(self, code: int, payload: Any) -> None:
        body = jsonio.stdlib_dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _route(self, path: str, params: dict[str, str]) -> None:
        path = path.rstrip("/")
        if path.startswith("/search/"):
            path = path[len("/search") :]
        try:
            if path == "/find_product":
                result: Any = self.env.find_product(
                    q=params.get("q"),
                    page=params.get("page"),
                    shop_id=params.get("shop_id"),
                    price=params.get("price"),
                    sort=params.get("sort"),
                    service=params.get("service"),
                )
            elif path == "/view_product_information":
                result = self.env.view_product_information(params.get("product_ids"))
            elif path == "/get_product_raw" and "product_ids" not in params and "product_id" in params:
                result = self.env.get_product_raw(params["product_id"])
                if result is None:
                    self._send(404, {"error": f"product {params['product_id']!r} not found"})
                    return
            elif path == "/get_product_raw":
                by_id = self.env.catalogue.by_id
                found = (by_id.get(pid) for pid in params.get("product_ids", "").split(","))
                result = [dict(p) for p in found if p is not None]
            elif path == "/health":
                result = {"status": "ok", "products": len(self.env.catalogue)}
            elif path in ("", "/search"):
                result = USAGE
            else:
                self._send(404, {"error": f"unknown endpoint {path!r}"})
                return
        except ServerError as exc:
            self._send(500, {"error": f"internal server error: {exc}"})
            return
        except Exception as exc:  # noqa: BLE001 - a bad request must get an answer, not a dropped connection
            self._send(500, {"error": f"internal server error: {type(exc).__name__}: {exc}"})
            return
        self._send(200, result)

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        url = urllib.parse.urlsplit(self.path)
        params: dict[str, str] = {}
        for key, value in urllib.parse.parse_qsl(url.query, keep_blank_values=True):
            params.setdefault(key, value)  # the first of a repeated parameter, as Flask's args.get
        self._route(url.path, params)

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, {"error": "request body too large"})
            return
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = jsonio.loads(raw.decode("utf-8") or "{}")
        except (ValueError, UnicodeDecodeError):
            self._send(400, {"error": "body must be a JSON object"})
            return
        if not isinstance(body, dict):
            self._send(400, {"error": "body must be a JSON object"})
            return
        params = {k: v for k, v in ((str(k), query_value(v)) for k, v in body.items()) if v is not None}
        self._route(url.path, params)


def make_server(catalogue: Catalogue, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    env = InProcessEnv(catalogue)
    catalogue.index  # build the BM25 index before accepting requests  # noqa: B018
    handler = type("ArenaHandler", (_Handler,), {"env": env})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve(catalogue: Catalogue, host: str = "127.0.0.1", port: int = 8765,
          announce: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted (Ctrl-C) or terminated (SIGTERM: ``docker stop``, a supervisor, even when the process
    was started with SIGTERM ignored, as a background job of some shells is); ``announce`` gets the bound base URL
    once listening."""
    server = make_server(catalogue, host, port)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # raises KeyboardInterrupt
    if announce is not None:
        announce(f"http://{host}:{server.server_address[1]}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def running_server(catalogue: Catalogue, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve in a background thread; yields the base URL (``http://127.0.0.1:<port>``)."""
    server = make_server(catalogue, host, port)
    thread = threading.Thread(target=server.serve_forever, name="arena-serve", daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
