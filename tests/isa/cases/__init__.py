"""Instruction cases, one module per family: each defines CASES (a list of ptxgen.Case)."""
