"""The `kbench` command line. Commands stay thin: parse, validate, call the library.

Heavy libraries (torch, transformers, polars, datasets) are imported inside the commands so
that `kbench --help` answers at once.
"""
