"""`api=chat`: the spec option, the chat form's marked message line (round trip, refusal of plain
prompts naming --prompt chat) and the reading of chat answers (a vLLM-shaped body, see
tests/fixtures/served/SOURCE.md; null content)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbench.errors import UserError
from kbench.evaluate.prompts import build_prompts, question_turn
from kbench.models.served import chat, parse
from kbench.models.served.spec import ServedSpec
from kbench.models.served.tokenizer import NoTokenizer
from tests.question_rows import question_row

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "served"


def test_api_option_is_parsed_recorded_and_checked():
    assert ServedSpec.from_arg("openai:http://h").api == "completions"
    spec = ServedSpec.from_arg("openai:http://h;model=m;api=chat")
    assert spec.api == "chat" and spec.describe()["api"] == "chat" and "api='chat'" in repr(spec)
    with pytest.raises(UserError, match="api='chats'; choose completions or chat"):
        ServedSpec.from_arg("openai:http://h;api=chats")


def test_messages_round_trip_deterministically():
    messages = [{"role": "user", "content": "Réponds.\nQuelle est la capitale ?"}, {"role": "assistant", "content": "Paris"},
                {"content": "And Germany?", "role": "user"}]
    line = chat.render(messages)
    assert line.startswith(chat.CHAT_MARK) and "\n" not in line  # one line: newlines inside contents are escaped
    assert chat.messages_of(line) == [{"role": m["role"], "content": m["content"]} for m in messages]
    assert chat.render(chat.messages_of(line)) == line  # the cache key does not depend on key order or spacing


def test_the_task_prompt_builders_hand_their_messages_through():
    tokenizer = chat.ChatTokenizer(NoTokenizer("m"))
    row = question_row(id="q0", relation="P36", subject="France", object="Paris", answers=["Paris"])
    [prompt] = build_prompts([row], "chat", tokenizer, "causal")
    assert chat.messages_of(prompt.text) == [{"role": "user", "content": f"Answer the question with a short answer.\n{row['question']}"}]
    assert prompt.gold == "Paris"  # bare after the generation prompt, as with a local template
    assert chat.messages_of(question_turn(tokenizer, "Recite.", "Answer", chat=True))[0]["content"] == "Recite."


@pytest.mark.parametrize("prompt", ["France is in", "Answer the question.\nQuestion: Where?\nAnswer:",
                                    chat.CHAT_MARK + '[{"role": "robot", "content": "x"}]'])
def test_plain_prompts_are_refused_naming_the_flag(prompt):
    with pytest.raises(UserError, match="api=chat takes the chat prompt form: use --prompt chat"):
        chat.messages_of(prompt)


def test_a_prefilled_reply_after_the_turn_is_refused():
    with pytest.raises(UserError, match="adds 'Verdict:' after the chat turn.*api=completions with ;tokenizer=FOLDER"):
        chat.messages_of(chat.render([{"role": "user", "content": "Is it true?"}]) + "Verdict:")


def test_chat_tokenizer_renders_only_a_generation_prompt_and_keeps_the_token_surface():
    tokenizer = chat.ChatTokenizer(NoTokenizer("m"))
    assert tokenizer.chat_template and tokenizer.bos_token_id is None
    with pytest.raises(UserError, match="server applies the chat template"):
        tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tokenize=True)
    with pytest.raises(UserError, match="has no tokenizer"):
        tokenizer(" Paris", add_special_tokens=False)  # tokens still come from the wrapped tokenizer


def test_chat_answer_text_and_null_content():
    answer = json.loads((FIXTURES / "vllm_chat_completion.json").read_text())
    assert parse.chat_text(answer) == "Paris\n"
    answer["choices"][0]["message"]["content"] = None
    assert parse.chat_text(answer) == ""  # finish_reason "stop": an empty reply
    answer["choices"][0]["finish_reason"] = "content_filter"
    with pytest.raises(parse.BadAnswer, match="content_filter"):
        parse.chat_text(answer)
    with pytest.raises(parse.BadAnswer, match="no message"):
        parse.chat_text({"choices": [{"index": 0, "text": "Paris"}]})
