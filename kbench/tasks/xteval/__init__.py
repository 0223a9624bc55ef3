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
    compare.py       runs compared on facts, part by part (`kbench report`)
    gaps.py          the gap arithmetic (usable knowledge, gap 1, gap 2)
    training/        soft prompts and the cross-encoder, trained on the model's network
    cli.py           `kbench evaluate xteval`
The top-1 probes are `kbench.models.training.probes`; soft-prompt training and the cross-encoder's
fine-tuning (`training/`) run on the network through `kbench.models.training.Trainer.run`.
"""
