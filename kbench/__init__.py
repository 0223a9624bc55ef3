"""kbench: build knowledge-probing benchmarks and evaluate what language models know."""

__version__ = "0.1.0"
