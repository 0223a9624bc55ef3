"""Data cards (README.md with Hub metadata) for built datasets, and publishing to the Hub."""
