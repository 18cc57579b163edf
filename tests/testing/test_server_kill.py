"""ScriptedOpenAIServer.kill: a crash, not a polite stop (the endpoint failover tests need one)."""

from __future__ import annotations

import http.client
import json
import threading
import time
from urllib.parse import urlsplit

import pytest

from dreamgym_env.testing import ScriptedOpenAIServer, delay

BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Action: search[x]"}]})
NO_ANSWER = (http.client.HTTPException, ConnectionError, OSError)


def connect(server: ScriptedOpenAIServer) -> http.client.HTTPConnection:
    parts = urlsplit(server.url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)


def post(connection: http.client.HTTPConnection) -> int:
    connection.request("POST", "/v1/chat/completions", BODY, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status


def test_close_keeps_serving_a_kept_alive_connection():
    server = ScriptedOpenAIServer().start()
    connection = connect(server)
    assert post(connection) == 200
    server.close()
    assert post(connection) == 200  # why a failover test needs kill()
    connection.close()


def test_kill_cuts_kept_alive_connections_and_closes_the_port():
    server = ScriptedOpenAIServer().start()
    connection, later = connect(server), connect(server)
    assert post(connection) == 200
    server.kill()
    with pytest.raises(NO_ANSWER):
        post(connection)
    with pytest.raises(ConnectionRefusedError):
        post(later)
    assert server.requests_total == 1


def test_kill_answers_no_request_in_flight():
    server = ScriptedOpenAIServer([delay(5.0)]).start()
    outcome: list[object] = []

    def held_request() -> None:
        connection = connect(server)
        try:
            outcome.append(post(connection))
        except NO_ANSWER as exc:
            outcome.append(exc)

    thread = threading.Thread(target=held_request)
    thread.start()
    deadline = time.monotonic() + 10
    while server.in_flight == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    server.kill()
    thread.join(timeout=10)
    assert len(outcome) == 1 and isinstance(outcome[0], NO_ANSWER)
