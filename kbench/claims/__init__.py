"""The papers' claims as tests over a suite folder (`kbench claims DIR`)."""
