"""A server actune did not start is asked what it serves before the first request (issue #49 item 3). A stand-in
HTTP server (a fake: ``GET /v1/models`` only) answers as vLLM does; the stages' own use is tested on the real
server in tests/eval/test_eval_server.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from actune.serve.adapters import check_serves
from actune.serve.errors import ServeError


@pytest.fixture
def fake_models_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path != "/v1/models":
                self.send_error(404)
                return
            body = json.dumps({"data": [{"id": "smollm2-135m", "max_model_len": 4096}, {"id": "tuned-r1"}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_a_model_the_server_does_not_serve_is_named_before_any_request(fake_models_server: str) -> None:
    check_serves([fake_models_server], "smollm2-135m", "bootstrap.model")  # served: nothing to say
    check_serves([fake_models_server], "tuned-r1", "bootstrap.model")
    with pytest.raises(ServeError) as e:
        check_serves([fake_models_server], "SmolLM2-135M-Instruct", "bootstrap.model")
    assert str(e.value) == (f"{fake_models_server} serves 'smollm2-135m', 'tuned-r1', not 'SmolLM2-135M-Instruct': "
                            "set bootstrap.model to the name the server answers to (vLLM's --served-model-name)")
    # an endpoint that lists nothing (no route, nothing listening) is left to the stage's retries
    check_serves([fake_models_server.replace("/v1", "/nothing"), "http://127.0.0.1:9/v1"], "x", "bootstrap.model")
