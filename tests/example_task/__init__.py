"""A package, so that pytest imports this folder's conftest.py as `example_task.conftest`: a second
module named plain `conftest` would shadow tests/conftest.py for the modules that `from conftest import`."""
