"""XTEVAL's training on the model's network, run through `kbench.models.training.Trainer.run`:
the per-relation soft prompts (`softprompt.py`) and the cross-encoder with its fine-tuning
(`crossencoder.py`)."""
