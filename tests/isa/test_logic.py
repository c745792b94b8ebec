from cases.logic import CASES
from runner import check


def test_logic_and_shifts():
    errors = check(CASES, "logic")
    assert not errors, "\n".join(errors[:40])
