"""Served models: any OpenAI-compatible server (vLLM, SGLang, TGI, `transformers serve`, llama.cpp,
hosted APIs) as a kbench backend, selected by `--model openai:URL;key=value...` (`spec.py`).

    spec.py       the `--model` syntax and the API-key / URL hygiene
    client.py     HTTP with a concurrency bound, retries (429/5xx/time-outs/resets/bad JSON), replicas
    probe.py      what the server actually returns, measured once at open: the model's capabilities
    tokenizer.py  the server's `/tokenize` as a tokenizer, or a local tokenizer folder
    backend.py    `ServedModel`, the `LanguageModel` the tasks call; registered as backend "openai"
"""
