"""FakeMediaWikiServer: a local HTTP server (127.0.0.1) answering the MediaWiki API requests the wiki env sends.

Responses have MediaWiki's shapes (``format=json&formatversion=2``): ``query.normalized``,
``query.redirects``, ``query.pages[]`` with ``missing``/``extract``/``pageprops``, and
``query.search[]``. Title normalisation follows MediaWiki: first letter upper-cased, ``_`` -> space.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class FakeMediaWikiServer:
    def __init__(self, pages: dict[str, str], redirects: dict[str, str] | None = None,
                 disambiguation: set[str] | None = None) -> None:
        self.pages = pages  # title -> plain-text extract
        self.redirects = redirects or {}
        self.disambiguation = disambiguation or set()
        self.requests: list[dict[str, str]] = []
        self.fail_next = 0  # answer this many requests with HTTP 503
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                params = {k: v[0] for k, v in parse_qs(url.query).items()}
                server.requests.append(params)
                if server.fail_next > 0:
                    server.fail_next -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                if url.path != "/w/api.php":
                    self.send_response(404)
                    self.end_headers()
                    return
                body = json.dumps(server.answer(params)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/w/api.php"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def __enter__(self) -> "FakeMediaWikiServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @staticmethod
    def _mw_normalize(title: str) -> str:
        t = " ".join(title.replace("_", " ").split())
        return t[:1].upper() + t[1:]

    def answer(self, p: dict[str, str]) -> dict:
        if p.get("action") != "query" or p.get("format") != "json":
            return {"error": {"code": "badparams", "info": "unsupported request"}}
        if p.get("list") == "search":
            words = p["srsearch"].lower().split()
            scored = []
            for title, text in self.pages.items():
                n = sum((title + " " + text).lower().count(w) for w in words)
                if n:
                    scored.append((-n, title))
            hits = [{"ns": 0, "title": t} for _, t in sorted(scored)[: int(p.get("srlimit", 10))]]
            return {"batchcomplete": True, "query": {"searchinfo": {"totalhits": len(scored)}, "search": hits}}
        query: dict = {}
        asked = p["titles"]
        title = self._mw_normalize(asked)
        if title != asked:
            query["normalized"] = [{"fromencoded": False, "from": asked, "to": title}]
        if p.get("redirects") and title in self.redirects:
            query["redirects"] = [{"from": title, "to": self.redirects[title]}]
            title = self.redirects[title]
        if title in self.pages:
            page = {"pageid": 1000 + sorted(self.pages).index(title), "ns": 0, "title": title,
                    "extract": self.pages[title]}
            if title in self.disambiguation:
                page["pageprops"] = {"disambiguation": ""}
        else:
            page = {"ns": 0, "title": title, "missing": True}
        query["pages"] = [page]
        return {"batchcomplete": True, "query": query}
