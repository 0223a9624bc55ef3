"""`kbench check`: trust a backend before trusting its numbers (docs/checks.md).

A short probe (`probe.py`) goes through the model a few ways; each check (`checks.py`) compares what
came back with what must hold whatever the model knows: the capabilities a backend claims, greedy
decoding against its own log-probs, a request against itself repeated, batched, reordered and
seeded, the model against other backends (`--against`), and raw against chat-formatted prompts.
`run.py` runs them, writes check.json (schema check.v1.json) and renders the table.
"""
