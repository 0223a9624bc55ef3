"""`api=chat`: the spec option, chat `Prompt` values as the messages a chat request posts (refusal of
plain prompts naming --prompt chat, and of a prefilled reply), their canonical form, and the reading
of chat answers (a vLLM-shaped body, see tests/fixtures/served/SOURCE.md; null content)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbench.errors import UserError
from kbench.evaluate.prompts import build_probes, question_turn
from kbench.models.prompt import Message, Prompt, assistant, user
from kbench.models.served import chat, parse
from kbench.models.served.spec import ServedSpec
from tests.question_rows import question_row

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "served"


def test_api_option_is_parsed_recorded_and_checked():
    assert ServedSpec.from_arg("openai:http://h").api == "completions"
    spec = ServedSpec.from_arg("openai:http://h;model=m;api=chat")
    assert spec.api == "chat" and spec.describe()["api"] == "chat" and "api='chat'" in repr(spec)
    with pytest.raises(UserError, match="api='chats'; choose completions or chat"):
        ServedSpec.from_arg("openai:http://h;api=chats")


def test_a_chat_prompt_is_a_value_with_a_canonical_form():
    turns = [user("Réponds.\nQuelle est la capitale ?"), assistant("Paris"), user("And Germany?")]
    prompt = Prompt.chat(turns)
    assert prompt == Prompt.chat(list(turns)) and hash(prompt) == hash(Prompt.chat(list(turns)))  # frozen, hashable
    assert chat.messages_of(prompt) == [m.as_dict() for m in turns]
    assert json.loads(prompt.messages_json()) == [m.as_dict() for m in turns] and "\n" not in prompt.messages_json()
    assert prompt.key == {"messages": [m.as_dict() for m in turns], "reply": ""}  # what the result cache keys on
    assert Prompt("France is in").key == "France is in"  # plain text keeps the key it had as a string
    with pytest.raises(ValueError, match="role"):
        Message("robot", "x")


def test_the_task_prompt_builders_hand_their_messages_through():
    row = question_row(id="q0", relation="P36", subject="France", object="Paris", answers=["Paris"])
    [probe] = build_probes([row], "chat", "causal")
    assert chat.messages_of(probe.prompt) == [{"role": "user", "content": f"Answer the question with a short answer.\n{row['question']}"}]
    assert probe.gold == "Paris"  # bare after the generation prompt, as with a local template
    assert chat.messages_of(question_turn("Recite.", "Answer", chat=True))[0]["content"] == "Recite."


@pytest.mark.parametrize("prompt", ["France is in", Prompt("Answer the question.\nQuestion: Where?\nAnswer:")])
def test_plain_prompts_are_refused_naming_the_flag(prompt):
    with pytest.raises(UserError, match="api=chat takes the chat prompt form: use --prompt chat"):
        chat.messages_of(prompt)


def test_a_prefilled_reply_after_the_turn_is_refused():
    with pytest.raises(UserError, match="adds 'Verdict:' after the chat turn.*api=completions with ;tokenizer=FOLDER"):
        chat.messages_of(Prompt.chat([user("Is it true?")]).then("Verdict:"))


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
