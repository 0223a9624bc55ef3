"""Pure metric functions: answer matching, EM/F1, gains and losses, standardised scores."""
