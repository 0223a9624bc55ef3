"""Export a built dataset as a task for another evaluation harness.

* `items`   - which task a dataset's rows belong to (`EXPORTS`: each task's own `export.py`) and
              the split as that task's documents: the prompt exactly as `kbench evaluate` builds it,
              its stop strings, the gold and its aliases.
* `lmeval`  - an lm-evaluation-harness task folder (YAML, utils.py, data.jsonl).
* `inspect` - an Inspect (`inspect_ai`) task file with its data beside it.
* `standalone` - kbench's answer matching as source text, so an exported task scores exactly
  as kbench does without kbench installed.
"""
