"""XTEVAL: the acquisition-utilization gap (docs/definitions.md, "Acquisition-utilization gaps").

    extraction.py    step 1: D^theta with soft prompts (default), discrete prompts or a known-facts file
    softprompt.py    the soft prompts' training pairs (AutoPrompt folders)
    documents.py     the document generator P(d | H, R, T) and the 8 input types
    inference.py     the retrieval test: distractors of every non-gold type, top-1 accuracy
    task.py          the engine's Task: units (extraction seeds, split x fine-tune runs), rows, aggregate
    pipeline.py      its settings (XtevalSettings) and the helpers the units call
    aggregate.py     mean and std as the paper takes them (acc_D over extraction seeds, the rest over runs)
    headline.py      the headline downstream figures with two-level bootstrap intervals, and IID - OOD
    criterion.py     the D^theta criterion a run used (first-token, full-answer, a masked LM's single token)
    report.py        markdown table and the gap chart (PNG)
The gap arithmetic lives in `kbench.metrics.gaps`; everything that runs the network (top-1 probes,
soft-prompt training, the cross-encoder and its fine-tuning) in `kbench.models.training`, reached
through its `Trainer`.
"""
