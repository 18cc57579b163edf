from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import pytest

from dreamgym_env.testing import (
    ScriptedOpenAIServer,
    delay,
    drop,
    echo_responder,
    http_error,
    ok,
    raw,
    request_action,
    truncated,
)

TRANSITION = {"reasoning": "r", "next_state": "s", "reward": 0, "done": False}


def chat(action: str = "search[shirt]", **extra: Any) -> dict[str, Any]:
    content = f"# Agent action\n<action>{json.dumps(action)}</action>\nPredict."
    return {"model": "m", "messages": [{"role": "user", "content": content}], **extra}


def post(client: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return client.post("/chat/completions", json=body)


@pytest.fixture
def client(server: ScriptedOpenAIServer):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


def test_url_and_models_endpoint(server, client):
    assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/v1")
    listing = client.get("/models").json()
    assert listing["object"] == "list" and listing["data"][0]["id"] == "scripted-model"


def test_url_before_start_is_an_error():
    with pytest.raises(RuntimeError, match="not started"):
        _ = ScriptedOpenAIServer().url


def test_queue_is_used_in_order_then_responder(server, client):
    server.enqueue(ok(TRANSITION, prompt_tokens=7, completion_tokens=3), ok("plain text"))
    first, second, third = (post(client, chat(f"search[{i}]")).json() for i in range(3))
    assert json.loads(first["choices"][0]["message"]["content"]) == TRANSITION
    assert first["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert first["object"] == "chat.completion" and first["choices"][0]["finish_reason"] == "stop"
    assert second["choices"][0]["message"]["content"] == "plain text"
    assert json.loads(third["choices"][0]["message"]["content"])["next_state"] == "after search[2]"
    assert server.pending == 0 and server.requests_total == 3


def test_received_bodies_and_headers_are_kept(server, client):
    body = chat("click[Buy Now]", response_format={"type": "json_object"})
    client.post("/chat/completions", json=body, headers={"Authorization": "Bearer k"})
    assert server.requests == [body]
    assert server.request_headers[0]["authorization"] == "Bearer k"
    assert request_action(server.requests[0]) == "click[Buy Now]"


def test_http_error_reply(server, client):
    server.enqueue(http_error(429, headers={"Retry-After": "2"}), http_error(500, "oops"))
    limited = post(client, chat())
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["message"] == "scripted error 429"
    failed = post(client, chat())
    assert failed.status_code == 500 and failed.text == "oops"


def test_raw_reply_sends_any_body_as_is(server, client):
    server.enqueue(
        raw("<html>502</html>", content_type="text/html"),
        raw(""),
        raw({"choices": [{"index": 0}]}),
        raw(b"\xff\xfe", status=203, headers={"X-Proxy": "1"}),
    )
    html, empty, no_message, odd = (post(client, chat()) for _ in range(4))
    assert (html.status_code, html.headers["content-type"]) == (200, "text/html")
    assert html.text == "<html>502</html>"
    assert empty.status_code == 200 and empty.content == b""
    assert no_message.json() == {"choices": [{"index": 0}]}
    assert (odd.status_code, odd.content, odd.headers["x-proxy"]) == (203, b"\xff\xfe", "1")


def test_truncated_reply_has_finish_reason_length(server, client):
    server.enqueue(truncated('{"reasoning": "cut'))
    choice = post(client, chat()).json()["choices"][0]
    assert choice["finish_reason"] == "length" and choice["message"]["content"] == '{"reasoning": "cut'


def test_delay_without_then_uses_responder(server, client):
    server.enqueue(delay(0.01))
    content = post(client, chat("search[x]")).json()["choices"][0]["message"]["content"]
    assert json.loads(content)["next_state"] == "after search[x]"


def test_delay_past_client_timeout(server):
    server.enqueue(delay(2.0))
    with httpx.Client(base_url=server.url, timeout=0.2) as short, pytest.raises(httpx.ReadTimeout):
        post(short, chat())


def test_drop_closes_connection_without_answer(server, client):
    server.enqueue(drop())
    with pytest.raises(httpx.RemoteProtocolError):
        post(client, chat())
    assert post(client, chat()).status_code == 200  # the server keeps serving


def test_responder_answers_str_dict_or_reply():
    answers = iter(["text", TRANSITION, http_error(418)])
    with (
        ScriptedOpenAIServer(responder=lambda body: next(answers)) as server,
        httpx.Client(base_url=server.url) as c,
    ):
        assert post(c, chat()).json()["choices"][0]["message"]["content"] == "text"
        assert json.loads(post(c, chat()).json()["choices"][0]["message"]["content"]) == TRANSITION
        assert post(c, chat()).status_code == 418


def test_broken_responder_answers_500_with_reason():
    def broken(body: dict[str, Any]) -> Any:
        raise ValueError("no answer scripted")

    with ScriptedOpenAIServer(responder=broken) as server, httpx.Client(base_url=server.url) as c:
        response = post(c, chat())
    assert response.status_code == 500 and "no answer scripted" in response.json()["error"]["message"]


def test_bad_requests(server, client):
    assert client.post("/chat/completions", content=b"not json").status_code == 400
    assert client.post("/nowhere", json={}).status_code == 404
    assert client.get("/nowhere").status_code == 404
    assert post(client, chat(stream=True)).status_code == 400
    assert server.requests_total == 1  # only the well-formed chat request counts


def test_keep_alive_reuses_one_connection(server, client):
    for _ in range(5):
        assert post(client, chat()).status_code == 200
    assert server.requests_total == 5 and server.connections_total == 1


def test_echo_responder_without_action_block():
    body = {"messages": [{"role": "user", "content": "no block here"}]}
    assert json.loads(echo_responder(body).content)["next_state"] == "after (no action found)"


async def raw_post(host: str, port: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One HTTP/1.1 POST over its own connection (httpx's pool is too slow to hold 256 at once)."""
    reader, writer = await asyncio.open_connection(host, port)
    data = json.dumps(body).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(data)}\r\n\r\n"
    writer.write(head.encode() + data)
    status = int((await reader.readline()).split()[1])
    headers = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    payload = json.loads(await reader.readexactly(int(headers["content-length"])))
    writer.close()
    await writer.wait_closed()
    return status, payload


def test_handles_256_concurrent_requests():
    n = 256
    gate = threading.Barrier(n, timeout=30)

    def all_at_once(body: dict[str, Any]) -> Any:
        gate.wait()  # answers only once all n requests are held together
        return echo_responder(body)

    with ScriptedOpenAIServer(responder=all_at_once) as server:
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])

        async def burst() -> list[tuple[int, dict[str, Any]]]:
            return await asyncio.gather(
                *(raw_post("127.0.0.1", port, chat(f"search[{i}]")) for i in range(n))
            )

        answers = asyncio.run(burst())
        assert server.peak_in_flight == n and server.requests_total == n
    assert [status for status, _ in answers] == [200] * n
    states = [json.loads(payload["choices"][0]["message"]["content"])["next_state"] for _, payload in answers]
    assert states == [f"after search[{i}]" for i in range(n)]


def held_request(server: ScriptedOpenAIServer) -> tuple[threading.Thread, list[int]]:
    """Send one chat request from a thread; return it once the server holds the request."""
    statuses: list[int] = []

    def send() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            statuses.append(post(c, chat()).status_code)

    worker = threading.Thread(target=send)
    worker.start()
    while server.requests_total == 0 and worker.is_alive():
        threading.Event().wait(0.01)
    return worker, statuses


@pytest.mark.parametrize("settings", [{"latency_s": 60.0}, {"replies": [delay(60.0, then=ok("late"))]}])
def test_latency_and_delay_hold_requests_until_close_releases_them(settings):
    server = ScriptedOpenAIServer(**settings).start()
    worker, statuses = held_request(server)
    try:
        assert server.in_flight == 1  # held: 60 s would pass before an answer
    finally:
        server.close()  # releases the held request at once
    worker.join(timeout=10)
    assert statuses == [200] and not worker.is_alive()
