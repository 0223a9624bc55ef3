"""Model loading, the batched runner, and forward hooks for interventions."""
