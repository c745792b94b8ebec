"""The programs `cuport run` puts first on PATH (see cli.py)."""
