"""Reading OpenAI-compatible `/v1/completions` and `/v1/chat/completions` answers (the shapes vLLM and SGLang document; see
tests/fixtures/served/ for recorded bodies). Each function takes the parsed JSON of one answer.

* `logprobs` (OpenAI legacy completions): {"tokens": [...], "token_logprobs": [...],
  "top_logprobs": [{token: logprob}, ...], "text_offset": [...]}; with `echo` the prompt's tokens
  come first and the first one has no log-prob (null).
* vLLM's `prompt_logprobs` (an extra parameter): one entry per prompt token, null for the first,
  else {"<token id>": {"logprob": x, "rank": r, "decoded_token": s}, ...}: the prompt token
  itself is always among the entries, with its rank over the full vocabulary.
* vLLM's `return_tokens_as_token_ids`: tokens are written "token_id:<id>", so a top-k entry can be
  matched to a token id without guessing from its text.
* llama.cpp's server answers `/v1/completions` `logprobs` in the chat layout (OpenAI's
  `ChatCompletionTokenLogprob`): {"content": [{"id", "token", "bytes", "logprob", "top_logprobs":
  [{"id", "token", "bytes", "logprob"}, ...]}, ...]}, one entry per generated token (it has no
  `echo`). Entries carrying an `id` are keyed "token_id:<id>" as vLLM's would be.
* chat answers: `choices[0].message.content` holds the reply; it is null when the model wrote none
  (OpenAI's schema: `finish_reason` "length" when the token budget ran out first, e.g. a reasoning
  model; "stop" for an empty reply), and then the answer is the empty text. A null content for any
  other reason ("content_filter", "tool_calls") is no answer.
"""

from __future__ import annotations


class BadAnswer(ValueError):
    """The answer lacks what was asked for (a server that ignored a parameter)."""


def _choice(answer: dict) -> dict:
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise BadAnswer(f"no choices in the answer: {str(answer)[:200]}")
    return choices[0]


def completion_text(answer: dict) -> str:
    text = _choice(answer).get("text")
    if not isinstance(text, str):
        raise BadAnswer("the choice has no text")
    return text


def chat_text(answer: dict) -> str:
    choice = _choice(answer)
    message = choice.get("message")
    if not isinstance(message, dict):
        raise BadAnswer("the choice has no message")
    content = message.get("content")
    if content is None and choice.get("finish_reason") in ("stop", "length"):
        return ""
    if not isinstance(content, str):
        raise BadAnswer(f"the message has no text content (finish_reason {choice.get('finish_reason')!r})")
    return content


def completion_tokens(answer: dict) -> int | None:
    """`usage.completion_tokens`: how many tokens the server generated (None: it does not say)."""
    usage = answer.get("usage") if isinstance(answer, dict) else None
    count = usage.get("completion_tokens") if isinstance(usage, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def token_logprobs(answer: dict) -> list[float | None]:
    """The log-prob of each token: `logprobs.token_logprobs` (prompt tokens first when echoed), or
    the `logprob` of each `logprobs.content[]` entry (the chat layout: generated tokens only)."""
    logprobs = _logprobs(answer)
    values = logprobs.get("token_logprobs")
    if isinstance(values, list):
        return values
    return [_number(entry.get("logprob")) for entry in _content(logprobs)]


def top_logprobs(answer: dict, position: int) -> dict[str, float]:
    """The top log-probs at `position`: {token (text or "token_id:N"): logprob}, from
    `logprobs.top_logprobs[position]` or `logprobs.content[position].top_logprobs`."""
    logprobs = _logprobs(answer)
    if "top_logprobs" in logprobs:
        tops = logprobs["top_logprobs"]
        if not isinstance(tops, list) or len(tops) <= position or not isinstance(tops[position], dict):
            raise BadAnswer("no logprobs.top_logprobs at that position")
        return {str(k): float(v) for k, v in tops[position].items()}
    content = _content(logprobs)
    entries = content[position].get("top_logprobs") if len(content) > position else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise BadAnswer("no logprobs.content[].top_logprobs at that position")
    return {_content_key(e): float(_number(e.get("logprob"))) for e in entries}


def _logprobs(answer: dict) -> dict:
    logprobs = _choice(answer).get("logprobs")
    if not isinstance(logprobs, dict):
        raise BadAnswer("no logprobs in the answer")
    return logprobs


def _content(logprobs: dict) -> list[dict]:
    content = logprobs.get("content")
    if not isinstance(content, list) or not all(isinstance(e, dict) for e in content):
        raise BadAnswer("no logprobs.token_logprobs or logprobs.content in the answer")
    return content


def _content_key(entry: dict) -> str:
    """ "token_id:<id>" where the entry names its token id (llama.cpp's always do), else the token text."""
    token = entry.get("id")
    if isinstance(token, int) and not isinstance(token, bool):
        return f"token_id:{token}"
    if not isinstance(entry.get("token"), str):
        raise BadAnswer("a logprobs.content entry has neither id nor token")
    return entry["token"]


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadAnswer(f"a log-prob is not a number: {value!r}")
    return float(value)


def prompt_logprobs(answer: dict) -> list[dict[int, dict] | None]:
    """vLLM's `prompt_logprobs`: per prompt position None or {token id: {"logprob", "rank", ...}}."""
    entries = _choice(answer).get("prompt_logprobs", answer.get("prompt_logprobs"))
    if not isinstance(entries, list):
        raise BadAnswer("no prompt_logprobs in the answer")
    out: list[dict[int, dict] | None] = []
    for entry in entries:
        if entry is None:
            out.append(None)
            continue
        parsed = {}
        for key, value in entry.items():
            value = value if isinstance(value, dict) else {"logprob": value}
            parsed[int(str(key).removeprefix("token_id:"))] = value
        out.append(parsed)
    return out


def token_id(key: str) -> int | None:
    """The id in a "token_id:N" token string, else None."""
    if key.startswith("token_id:") and key[9:].lstrip("-").isdigit():
        return int(key[9:])
    return None


def cut_at_stop(text: str, stop) -> str:
    """The text before the first stop string: servers differ on whether they return it."""
    cut = len(text)
    for s in stop or ():
        if s and (at := text.find(s)) != -1:
            cut = min(cut, at)
    return text[:cut]
