"""XTEVAL: the acquisition-utilization gap (REFERENCE.md, "XTEVAL").

    extraction.py    step 1 with soft prompts or a known-facts file (discrete prompts: the
                     extraction task, `kbench.evaluate.engine.evaluate_task("extraction", ...)`)
    softprompt.py    OptiPrompt-style per-relation soft prompts (frozen model, safetensors)
    probes.py        teacher-forced top-1 probes with soft-prompt slots
    documents.py     the document generator P(d | H, R, T) and the 8 input types
    crossencoder.py  the cross-encoder (fresh scalar head) and its InfoNCE fine-tuning
    inference.py     the retrieval test: distractors of every non-gold type, top-1 accuracy
    pipeline.py      splits x seeds, per-unit checkpoints, results.json
    report.py        markdown table and the gap chart (PNG)
The gap arithmetic lives in `kbench.metrics.gaps`.
"""
