"""XTEVAL: the acquisition-utilization gap (REFERENCE.md, "XTEVAL").

    extraction.py    step 1: D^theta, the facts a model predicts at top-1 (discrete or soft prompts)
    softprompt.py    OptiPrompt-style per-relation soft prompts (frozen model)
    documents.py     the document generator P(d | H, R, T) and the 8 input types
    crossencoder.py  the cross-encoder (fresh scalar head) and its InfoNCE fine-tuning
    inference.py     the retrieval test: distractors of every non-gold type, top-1 accuracy
    pipeline.py      splits x seeds, per-unit checkpoints, results.json
    report.py        markdown table and the gap chart (PNG)
"""
