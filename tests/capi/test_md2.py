"""MD2 (RFC 1319): the test suite of the RFC's appendix A.5."""

import pytest

from cuport.capi.md2 import S, hmac_md2, md2

RFC_1319_SUITE = [
    (b"", "8350e5a3e24c153df2275c9f80692773"),
    (b"a", "32ec01ec4a6dac72c0ab96fb34c0b5d1"),
    (b"abc", "da853b0d3f88d99b30283a69e6ded6bb"),
    (b"message digest", "ab4f496bfb2a530b219ff33031fe06b0"),
    (b"abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b"),
    (b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
     "da33def2a42df13975352846c30338cd"),
    (b"1234567890" * 8, "d5976f79d83d3a0dc9806c3c66f3efd8"),
]


@pytest.mark.parametrize("message, digest", RFC_1319_SUITE)
def test_rfc_1319_suite(message, digest):
    assert md2(message).hex() == digest


def test_s_is_a_permutation():
    assert sorted(S) == list(range(256))


def test_hmac_md2_matches_the_standard_library():
    import hmac

    class MD2:
        block_size = digest_size = 16

        def __init__(self, data=b""):
            self.data = bytes(data)

        def update(self, data):
            self.data += bytes(data)

        def copy(self):
            return MD2(self.data)

        def digest(self):
            return md2(self.data)

    for key in (b"", b"k" * 5, bytes(range(16)), b"long key " * 4):
        for message in (b"", b"x" * 100):
            assert hmac_md2(key, message) == hmac.new(key, message, MD2).digest()
