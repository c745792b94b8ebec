from cases.compare import CASES
from runner import check


def test_compare():
    errors = check(CASES, "compare")
    assert not errors, "\n".join(errors[:60])
