"""``arena serve``: the embedded catalogue over ShoppingBench's search endpoints (stdlib HTTP).

Endpoints (GET query parameters, or POST with a JSON object body): ``/find_product``,
``/view_product_information``, ``/get_product_raw`` and ``/health``; the same paths under a
``/search`` prefix (how ORO's proxy exposes them) also work. Bound to 127.0.0.1 by default.
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from oro_assets.arena.catalogue import Catalogue
from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.tools import ids_argument

MAX_BODY = 1 << 20


class _Handler(BaseHTTPRequestHandler):
    server_version = "oro-arena/1"
    env: InProcessEnv  # set on the subclass made by make_server

    def log_message(self, format: str, *args: Any) -> None:  # quiet by default
        pass

    def _send(self, code: int, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _route(self, path: str, params: dict[str, Any]) -> None:
        path = path.rstrip("/")
        if path.startswith("/search/"):
            path = path[len("/search") :]
        try:
            if path == "/find_product":
                # values go to the environment as they came (JSON bodies keep their types), so HTTP
                # and in-process answers agree; query strings are strings, which it accepts too
                result = self.env.find_product(
                    q=params.get("q", ""),
                    page=params.get("page", 1),
                    shop_id=params.get("shop_id") or None,
                    price=params.get("price") or None,
                    sort=params.get("sort") or "default",
                    service=params.get("service") or None,
                )
            elif path == "/view_product_information":
                result = self.env.view_product_information(ids_argument(params))
            elif path == "/get_product_raw":
                result = self.env.get_product_raw(str(params.get("product_id", "")))
                if result is None:
                    self._send(404, {"error": f"product {params.get('product_id')!r} not found"})
                    return
            elif path == "/health":
                result = {"status": "ok", "products": len(self.env.catalogue)}
            else:
                self._send(404, {"error": f"unknown endpoint {path!r}"})
                return
        except (ValueError, TypeError) as exc:
            self._send(400, {"error": str(exc)})
            return
        except Exception as exc:  # noqa: BLE001 - a bad request must get an answer, not a dropped connection
            self._send(400, {"error": f"{type(exc).__name__}: {exc}"})
            return
        self._send(200, result)

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        url = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        self._route(url.path, params)

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(413, {"error": "request body too large"})
            return
        raw = self.rfile.read(length) if length else b"{}"
        try:
            params = json.loads(raw.decode("utf-8") or "{}")
        except (ValueError, UnicodeDecodeError):
            self._send(400, {"error": "body must be a JSON object"})
            return
        if not isinstance(params, dict):
            self._send(400, {"error": "body must be a JSON object"})
            return
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
    """Serve until interrupted (Ctrl-C); ``announce`` gets the bound base URL once listening."""
    server = make_server(catalogue, host, port)
    if announce is not None:
        announce(f"http://{host}:{server.server_address[1]}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


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
