from cases.floating import CASES
from runner import check


def test_floating():
    errors = check(CASES, "floating")
    assert not errors, "\n".join(errors[:60])
