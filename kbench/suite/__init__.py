"""Suites: many models x tasks x datasets in one resumable command (`kbench suite run`)."""
