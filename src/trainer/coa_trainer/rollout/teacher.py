"""Teachers for `coa_trainer collect`: what produces a turn's continuation in the shared loop (rollout.run_turns).

- a Hugging Face model directory: `rollout.ModelSampler`, the trainer's own batched loop (ids end to end);
- an OpenAI-compatible endpoint (vLLM, SGLang, `transformers serve`, a hosted API): `EndpointSampler` below, text in
  and text out — `/v1/completions` with the prompt rendered here (the chat template of a local tokenizer) and the
  closing tags as stop strings, or `/v1/chat/completions` with each observation sent as a user turn.

Requests run `concurrency` at a time; a failed request (connection refused or closed, timeout, HTTP 429/5xx, a
body that is not the API's JSON) is retried with exponential backoff, every failure is counted (`stats`), and a
sample whose retries are spent is marked failed (`RlTrajectory.error`) — never an exception out of the loop.

How the text answers are read (OpenAI semantics differ between servers): `transformers serve` returns the text
with the stop string and whatever the last token merged after it (`</search>\\n\\n`), as the model-directory teacher
writes it; vLLM and OpenAI drop the stop string, so a turn that opened an action (or an answer) and stopped
without closing it gets the closing tag back (vLLM's `stop_reason` says which stop when it is given). A server
that ignores `stop` has its text cut after the first closing tag (and the whitespace right after it)."""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any

from pydantic import BaseModel, StrictStr, ValidationError

from ..rollout.agentio import AgentIO
from ..rollout.loop import RlTrajectory, TurnOut, add_since
from ..base.errors import CoaError
from ..contracts.error_code import ErrorCode


class TeacherError(CoaError):
    """A teacher that cannot be used (found before sampling starts)."""

    code = ErrorCode.bad_teacher


class RequestFailed(RuntimeError):
    def __init__(self, message: str, retryable: bool):
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True)
class Completion:
    """The parts of an OpenAI-compatible (chat) completion answer the teacher reads: its first choice's text, why it
    finished, which stop ended it (vLLM `stop_reason`, SGLang `matched_stop`: a string, a token id, or -1 for the
    end of sequence; None when the server does not say) and the token counts when the server reports both."""

    text: str
    finish_reason: str | None
    stop_reason: str | int | None
    prompt_tokens: int | None
    completion_tokens: int | None


class Endpoint:
    """One OpenAI-compatible base URL (…/v1): JSON requests with retries, backoff and counted errors."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
    ):
        self.url = url.rstrip("/")
        self.api_key, self.timeout_s, self.max_retries, self.backoff_s = api_key, timeout_s, max_retries, backoff_s
        self.stats: dict[str, float] = {
            "requests": 0,
            "retries": 0,
            "errors": 0,
            "failed": 0,
            "timeouts": 0,
            "http_errors": 0,
            "connection_errors": 0,
            "bad_responses": 0,
            "completion_tokens": 0,
        }
        self._lock = threading.Lock()

    def _count(self, **inc: float) -> None:
        with self._lock:
            for k, v in inc.items():
                self.stats[k] = self.stats.get(k, 0) + v

    def _once(self, method: str, path: str, body: dict | None) -> dict:
        data = json.dumps(body).encode("utf-8") if body is not None else None
        headers = {
            "Content-Type": "application/json",
            **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
        }
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:300]
            self._count(http_errors=1)
            # 408/409/429 and 5xx are the server being busy or broken for a moment; other 4xx are our request
            raise RequestFailed(
                f"{method} {path} → HTTP {e.code}: {detail}", e.code in (408, 409, 429) or e.code >= 500
            ) from e
        except TimeoutError as e:
            self._count(timeouts=1)
            raise RequestFailed(f"{method} {path}: no answer within {self.timeout_s:g}s ({e})", True) from e
        except urllib.error.URLError as e:
            if isinstance(e.reason, (TimeoutError, socket.timeout)):
                self._count(timeouts=1)
                raise RequestFailed(f"{method} {path}: no answer within {self.timeout_s:g}s", True) from e
            self._count(connection_errors=1)
            raise RequestFailed(f"{method} {path}: {e.reason}", True) from e
        except (HTTPException, ConnectionError, OSError) as e:  # closed mid-answer, reset, refused
            self._count(connection_errors=1)
            raise RequestFailed(f"{method} {path}: connection failed ({type(e).__name__}: {e})", True) from e
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._count(bad_responses=1)
            raise RequestFailed(f"{method} {path}: the answer is not JSON ({raw[:80]!r})", True) from None
        if not isinstance(value, dict):
            self._count(bad_responses=1)
            raise RequestFailed(f"{method} {path}: the answer is not a JSON object", True)
        return value

    def request(self, method: str, path: str, body: dict | None = None, retries: int | None = None) -> dict:
        """The JSON answer; RequestFailed once retries are spent (or at once for an error that will not pass)."""
        retries = self.max_retries if retries is None else retries
        self._count(requests=1)
        for attempt in range(retries + 1):
            try:
                return self._once(method, path, body)
            except RequestFailed as e:
                self._count(errors=1)
                if not e.retryable or attempt == retries:
                    self._count(failed=1)
                    raise
                self._count(retries=1)
                # exponential backoff with jitter, so concurrent retries do not arrive together
                time.sleep(self.backoff_s * (2**attempt) * (0.5 + random.random() / 2))
        raise AssertionError("unreachable")

    def probe(self, model: str | None, api: str) -> str | None:
        """The endpoint speaks the OpenAI API: GET /models lists `model` (default: its first), or — a server whose
        listing fails or is empty (`transformers serve` lists the Hugging Face cache, not the model it serves) — a
        one-token request to `api` is answered in the API's shape. Raises TeacherError saying what was wrong,
        before any sampling. Returns the model name to send (None: the server's only model)."""
        hint = "" if self.url.endswith("/v1") else f" (OpenAI-compatible servers answer under …/v1: try {self.url}/v1)"
        retries = min(self.max_retries, 2)
        listing_problem = None
        try:
            listing = self.request("GET", "/models", retries=retries)
            ids = _listed_ids(listing)
            if ids is not None:
                if model is None and ids:
                    return ids[0]
                if model is None or model in ids:
                    listing_problem = "GET /models lists no model" if not ids else None
                else:
                    listing_problem = f"GET /models does not list {model!r} (it lists {', '.join(ids[:5])})"
            else:
                listing_problem = (
                    f'GET /models answered {json.dumps(listing)[:160]} (expected {{"data": [{{"id": …}}]}})'
                )
        except RequestFailed as e:
            if "HTTP" not in str(e):  # refused, closed, timed out: nothing is listening there
                raise TeacherError(f"teacher endpoint {self.url} is not reachable: {e}{hint}") from None
            listing_problem = str(e)
        if listing_problem is None:
            return model
        path, body = (
            ("/chat/completions", {"messages": [{"role": "user", "content": "Say yes."}]})
            if api == "chat"
            else ("/completions", {"prompt": "Say yes."})
        )
        body = {**body, "max_tokens": 1, "temperature": 0, **({"model": model} if model else {})}
        try:
            answer = self.request("POST", path, body, retries=retries)
        except RequestFailed as e:
            raise TeacherError(
                f"teacher endpoint {self.url} is not OpenAI-compatible: {listing_problem}; POST {path} "
                f"failed: {e}{hint}"
            ) from None
        if not isinstance(choices := answer.get("choices"), list) or not choices:
            raise TeacherError(
                f"teacher endpoint {self.url} is not OpenAI-compatible: {listing_problem}; POST {path} "
                f'answered {json.dumps(answer)[:160]} (expected {{"choices": [...]}}){hint}'
            )
        return model


class _ListedModel(BaseModel):
    id: StrictStr


class _ModelListing(BaseModel):
    """GET /models' answer in the OpenAI API's shape, as far as it is read: the served models' ids."""

    data: list[_ListedModel]


def _listed_ids(listing: object) -> list[str] | None:
    """The model ids a GET /models answer lists; None when it is not in the API's shape."""
    try:
        return [m.id for m in _ModelListing.model_validate(listing).data]
    except ValidationError:
        return None


class EndpointSampler:
    """A teacher behind an OpenAI-compatible endpoint, as a rollout.Sampler (text in, text out)."""

    def __init__(
        self,
        endpoint: Endpoint,
        io: AgentIO,
        model: str | None,
        api: str,
        *,
        temperature: float,
        top_p: float,
        concurrency: int,
        seed: int | None = None,
    ):
        self.endpoint, self.io, self.t, self.model, self.api = endpoint, io, io.t, model, api
        self.temperature, self.top_p, self.concurrency, self.seed = temperature, top_p, concurrency, seed
        self.tok = io.tok  # optional: token counts and observation cuts; None → characters / 4
        self.stops = [self.t.action_close] + ([self.t.answer_close] if self.t.answer_close else [])
        self.messages: dict[int, list[dict]] = {}  # chat API: the conversation of each trajectory
        self._turns: dict[int, int] = {}
        self._keys: dict[int, int] = {}
        # whether the server's text includes a matched stop string (transformers serve) or drops it (OpenAI, vLLM);
        # None: unknown (a turn that opened a tag and stopped without closing it is then taken as stopped on it)
        self.stops_in_text: bool | None = None

    def probe_stops(self, prompt: str, messages: list[dict] | None) -> bool | None:
        """Find out whether the server returns matched stop strings: greedy 8 tokens, then the same request with
        the first two characters of that answer as the stop string. Inconclusive (None) when the model answers
        nothing first or something else the second time."""

        def ask(stop: list[str] | None) -> str | None:
            body: dict[str, Any] = {
                "max_tokens": 8,
                "temperature": 0,
                **({"model": self.model} if self.model else {}),
                **({"stop": stop} if stop else {}),
            }
            path, body = (
                ("/chat/completions", {**body, "messages": messages})
                if self.api == "chat"
                else ("/completions", {**body, "prompt": prompt})
            )
            try:
                return self._read(self.endpoint.request("POST", path, body)).text
            except RequestFailed:
                return None

        first = ask(None) or ""
        probe = first.lstrip()[:2]
        if len(probe) < 2 or not probe.strip():
            return None
        second = ask([probe])
        if second is None:
            return None
        lead = first[: first.index(probe)]
        self.stops_in_text = True if second.startswith(lead + probe) else (False if second == lead else None)
        return self.stops_in_text

    # ------------------------------------------------------------ prompts
    def start(self, tr: RlTrajectory, prompt: str, messages: list[dict] | None, key: str) -> None:
        """Set a trajectory up: its prompt text (completions) or messages (chat), and its sample key (seeds)."""
        tr.prompt = prompt
        tr.length = self._count_tokens(prompt)
        self._turns[id(tr)] = 0
        self._keys[id(tr)] = zlib.crc32(key.encode())
        if messages is not None:
            self.messages[id(tr)] = [dict(m) for m in messages]

    # ------------------------------------------------------------ Sampler
    def turn(self, trajs: list[RlTrajectory], max_new_tokens: int, timings: dict) -> list[TurnOut]:
        t0 = time.time()
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            outs = list(pool.map(lambda tr: self._turn_one(tr, max_new_tokens), trajs))
        add_since(timings, "generate", t0)
        return outs

    def _body(self, tr: RlTrajectory, max_new_tokens: int) -> tuple[str, dict]:
        sampled = self.temperature > 0
        # per sample and turn: a server that honours seeds repeats a collection
        seed = (
            (self.seed * 1_000_003 + self._keys.get(id(tr), 0) * 31 + self._turns.get(id(tr), 0)) % (2**31)
            if sampled and self.seed is not None
            else None
        )
        body: dict[str, Any] = {
            "max_tokens": max_new_tokens,
            "temperature": self.temperature,
            "stop": self.stops,
            **({"model": self.model} if self.model is not None else {}),
            **({"top_p": self.top_p} if sampled else {}),
            **({"seed": seed} if seed is not None else {}),
        }
        if self.api == "chat":
            return "/chat/completions", {**body, "messages": self.messages[id(tr)]}
        return "/completions", {**body, "prompt": tr.prompt + tr.text}

    def _turn_one(self, tr: RlTrajectory, max_new_tokens: int) -> TurnOut:
        start = len(tr.text)
        path, body = self._body(tr, max_new_tokens)
        try:
            answer = self._read(self.endpoint.request("POST", path, body))
        except RequestFailed as e:
            tr.error = str(e)
            return TurnOut(False, False, start)
        self._turns[id(tr)] = self._turns.get(id(tr), 0) + 1
        text, stopped = self._close(answer.text, answer.finish_reason, answer.stop_reason)
        tr.text += text
        if self.api == "chat":
            self.messages[id(tr)].append({"role": "assistant", "content": text})
        if answer.prompt_tokens is not None and answer.completion_tokens is not None:
            tr.length = answer.prompt_tokens + answer.completion_tokens
            self.endpoint._count(completion_tokens=answer.completion_tokens)
        else:
            tr.length = self._count_tokens(tr.prompt + tr.text)
            self.endpoint._count(completion_tokens=self._count_tokens(text))
        return TurnOut(stopped, stopped and self.io.text_ended_with_action(text), start)

    def _read(self, answer: dict) -> Completion:
        choices = answer.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            self.endpoint._count(bad_responses=1, failed=1, errors=1)
            raise RequestFailed(f"the answer has no choices: {json.dumps(answer)[:200]}", False)
        c = choices[0]
        text = c.get("text") if self.api == "completions" else (c.get("message") or {}).get("content")
        if text is None and self.api == "chat":  # a chat answer may carry no content (tool calls only)
            text = ""
        if not isinstance(text, str):
            self.endpoint._count(bad_responses=1, failed=1, errors=1)
            raise RequestFailed(f"the answer's choice has no text: {json.dumps(c)[:200]}", False)
        usage = answer.get("usage")
        prompt_tokens, completion_tokens = (
            (usage.get("prompt_tokens"), usage.get("completion_tokens")) if isinstance(usage, dict) else (None, None)
        )
        both = isinstance(prompt_tokens, int) and isinstance(completion_tokens, int)
        # vLLM says which stop ended a choice in `stop_reason` (a string, a token id, or null for EOS), SGLang in
        # `matched_stop`; neither is in the OpenAI API
        reason = c.get("stop_reason", c.get("matched_stop"))
        if reason is None and ("stop_reason" in c or "matched_stop" in c):
            reason = -1  # known: the end of sequence
        return Completion(
            text, c.get("finish_reason"), reason, prompt_tokens if both else None, completion_tokens if both else None
        )

    def _close(self, text: str, finish: str | None, stop_reason: str | int | None) -> tuple[str, bool]:
        """(the turn's text, whether it stopped on a stop rather than a length limit) — see the module doc."""
        hits = [(i, s) for s in self.stops if (i := text.find(s)) >= 0]
        if hits:
            i, s = min(hits)
            end = i + len(s)
            while end < len(text) and text[end] in " \t\r\n":
                end += 1
            return text[:end], True
        if finish == "length":
            return text, False
        if isinstance(stop_reason, str) and stop_reason in self.stops:
            return text + stop_reason, True
        if self.stops_in_text is True or stop_reason is not None:
            return text, True  # a server that shows its stops (or said which it was): this was the end of sequence
        t = self.t
        if text.rfind(t.action_open) > text.rfind(t.action_close):  # stopped on the action's closing tag
            return text + t.action_close, True
        if t.answer_open and t.answer_close and text.rfind(t.answer_open) > text.rfind(t.answer_close):
            return text + t.answer_close, True
        return text, True  # EOS

    def query(self, tr: RlTrajectory, start: int) -> str:
        return self.io.text_query(tr.text[start:])

    def observe(self, tr: RlTrajectory, text: str, max_obs_tokens: int) -> None:
        body, cut = self._cut(text, max_obs_tokens)
        tr.truncated = tr.truncated or cut
        obs = f"{self.t.obs_open}{body}{self.t.obs_close}"
        tr.text += obs
        tr.length += self._count_tokens(obs)
        if self.api == "chat":
            self.messages[id(tr)].append({"role": "user", "content": obs})

    def simulate(self, trajs: list[RlTrajectory], max_obs_tokens: int, timings: dict) -> None:
        raise TeacherError("an endpoint teacher cannot simulate observations")

    def size(self, tr: RlTrajectory) -> int:
        return tr.length

    def cut(self, tr: RlTrajectory, max_len: int) -> None:
        if tr.length > max_len:  # text from a server cannot be cut at a token: say it ran over
            tr.truncated, tr.finished = True, False

    # ------------------------------------------------------------ token counts
    def _count_tokens(self, text: str) -> int:
        if self.tok is not None:
            return len(self.tok.encode(text, add_special_tokens=False))
        return (len(text) + 3) // 4

    def _cut(self, body: str, max_tokens: int) -> tuple[str, bool]:
        if self.tok is not None:
            ids = self.tok.encode(body, add_special_tokens=False)
            if len(ids) <= max_tokens:
                return body, False
            return self.tok.decode(ids[:max_tokens], skip_special_tokens=False), True
        return (body, False) if len(body) <= 4 * max_tokens else (body[: 4 * max_tokens], True)


def api_key(env_name: str) -> str | None:
    return os.environ.get(env_name) or None
