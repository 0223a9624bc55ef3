"""The pipeline engine: recipes of registered stages, run directories, resume markers."""
