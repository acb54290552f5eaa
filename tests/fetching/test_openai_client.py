"""The demo server against the official ``openai`` client and its strict types: every reply,
streamed or not, for every model including ``judge``, validates as ``ChatCompletion``,
``ChatCompletionChunk`` or ``Model`` (pydantic strict mode), and ``models.retrieve`` works.

The raw bytes are read with the standard library, so nothing the client tolerates (it builds
its objects without validating them) hides a missing field."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")
from openai.types import Model  # noqa: E402
from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402

from grade_kit.demo.server import JUDGE_MODEL, DemoServer  # noqa: E402
from grade_kit.demo.setups import SETUPS  # noqa: E402
from grade_kit.judges.llm import judge_prompt  # noqa: E402
from grade_kit.reading.task_files import load_tasks  # noqa: E402
from grade_kit.schema import Run  # noqa: E402
from tests.paths import FIXTURES  # noqa: E402

TASKS = load_tasks(FIXTURES / "tasks").records
TOOLS = [{"type": "function", "function": {"name": "sql", "description": "run SQL",
                                           "parameters": {"type": "object", "properties": {
                                               "query": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    srv = DemoServer(TASKS, FIXTURES / "packs", latency_scale=0.0, faults=False).start()
    yield srv
    srv.stop()


def _post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _events(raw: bytes) -> list[dict[str, Any]]:
    data = [line.removeprefix(b"data: ") for line in raw.split(b"\n")
            if line.startswith(b"data: ")]
    assert data and data[-1] == b"[DONE]"
    return [json.loads(d) for d in data[:-1]]


def _judge_body() -> dict[str, Any]:
    run = Run.model_validate({
        "run_id": "r1", "setup": "careful", "task_id": TASKS[0].task_id, "repeat": 1,
        "status": "delivered", "response": {"key_findings": ["A finding."], "text": "x"}})
    return {"model": JUDGE_MODEL, "temperature": 0,
            "messages": [{"role": "user", "content": judge_prompt(TASKS[0], run)}]}


def _bodies() -> list[tuple[str, dict[str, Any]]]:
    asked = [{"role": "user", "content": TASKS[0].prompt}]
    out = [(f"{setup} plain", {"model": setup, "messages": asked}) for setup in SETUPS]
    out += [(f"{setup} tools", {"model": setup, "messages": asked, "tools": TOOLS})
            for setup in SETUPS]
    out.append(("judge", _judge_body()))
    return out


@pytest.mark.parametrize(("name", "body"), _bodies(), ids=[n for n, _ in _bodies()])
def test_every_reply_validates_strictly(server: DemoServer, name: str,
                                        body: dict[str, Any]) -> None:
    status, raw = _post(server.url, body)
    assert status == 200, raw
    whole = ChatCompletion.model_validate(json.loads(raw), strict=True)
    assert whole.usage is not None
    assert whole.usage.total_tokens == (whole.usage.prompt_tokens
                                        + whole.usage.completion_tokens)
    status, raw = _post(server.url, {**body, "stream": True,
                                     "stream_options": {"include_usage": True}})
    assert status == 200, raw
    chunks = [ChatCompletionChunk.model_validate(e, strict=True) for e in _events(raw)]
    assert len(chunks) >= 3
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == (whole.choices[0].message.content or "")
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(usage) == 1 and usage[0].total_tokens == whole.usage.total_tokens
    assert chunks[-1].choices == [] and chunks[-2].choices[0].finish_reason == (
        whole.choices[0].finish_reason)


def test_models_list_and_retrieve_with_the_official_client(server: DemoServer) -> None:
    client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)
    listed = client.models.list()
    assert sorted(m.id for m in listed.data) == sorted([*SETUPS, JUDGE_MODEL])
    with urllib.request.urlopen(server.url + "/models", timeout=30) as reply:
        for entry in json.loads(reply.read())["data"]:
            Model.model_validate(entry, strict=True)
    one = client.models.retrieve("judge")
    assert (one.id, one.object) == ("judge", "model")
    Model.model_validate(one.model_dump(), strict=True)
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")


def test_the_official_client_streams_the_judge(server: DemoServer) -> None:
    """The judge used to answer plain JSON to stream=True: the client's stream then yielded
    nothing, without an error."""
    client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)
    body = _judge_body()
    chunks = list(client.chat.completions.create(model=JUDGE_MODEL, messages=body["messages"],
                                                 temperature=0, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    verdict = json.loads(text)
    assert isinstance(verdict, dict) and verdict
    whole = client.chat.completions.create(model=JUDGE_MODEL, messages=body["messages"],
                                           temperature=0)
    assert whole.choices[0].message.content == text and whole.usage is not None
