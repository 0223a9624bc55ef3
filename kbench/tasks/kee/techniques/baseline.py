"""Baseline: the unmodified model with greedy decoding (MAPLE's "base").

Parameters: none. Every other technique is compared with this one (Gain, Loss, PRS).
"""

from __future__ import annotations

from kbench.tasks.kee.techniques import register_technique
from kbench.tasks.kee.techniques.base import Technique, greedy_answers


@register_technique("baseline")
class Baseline(Technique):
    family = "baseline"

    def run(self, context, items):
        return greedy_answers(context, [context.answer_prompt(i.question) for i in items], items)
