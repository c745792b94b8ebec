"""MD2 (RFC 1319) and HMAC (RFC 2104) over it: the digest of INTEGRITY_CHECK slot 1.

No Python library offers MD2 any more, so it is written out here. MD2's block and
digest are 16 bytes; HMAC-MD2 therefore pads its key to 16 bytes.
"""

from __future__ import annotations

# RFC 1319's substitution table S, "constructed from the digits of pi".
S = bytes((
    41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19,
    98, 167, 5, 243, 192, 199, 115, 140, 152, 147, 43, 217, 188, 76, 130, 202,
    30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229, 18,
    190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245, 142, 187, 47, 238, 122,
    169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137, 11, 34, 95, 33,
    128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3,
    255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198,
    79, 184, 56, 210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4, 241,
    69, 157, 112, 89, 100, 113, 135, 32, 134, 91, 207, 101, 230, 45, 168, 2,
    27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15,
    85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38,
    44, 83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77, 82,
    106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74,
    120, 136, 149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57,
    242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114, 248, 235, 117, 75, 10,
    49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131, 20,
))
BLOCK = 16


def md2(message: bytes) -> bytes:
    """RFC 1319, steps 1-5."""
    pad = BLOCK - len(message) % BLOCK
    data = bytearray(message) + bytes([pad]) * pad  # step 1: always pad, 1..16 bytes
    checksum = bytearray(BLOCK)  # step 2: append the checksum
    last = 0
    for i in range(0, len(data), BLOCK):
        for j in range(BLOCK):
            checksum[j] ^= S[data[i + j] ^ last]
            last = checksum[j]
    data += checksum
    x = bytearray(48)  # steps 3-4: the 48-byte state, 18 rounds a block
    for i in range(0, len(data), BLOCK):
        for j in range(BLOCK):
            x[16 + j] = data[i + j]
            x[32 + j] = x[16 + j] ^ x[j]
        t = 0
        for round_ in range(18):
            for k in range(48):
                x[k] ^= S[t]
                t = x[k]
            t = (t + round_) & 0xFF
    return bytes(x[:BLOCK])  # step 5


def hmac_md2(key: bytes, message: bytes) -> bytes:
    """RFC 2104 with H = MD2 (B = 16)."""
    if len(key) > BLOCK:
        key = md2(key)
    key = key.ljust(BLOCK, b"\0")
    inner = md2(bytes(k ^ 0x36 for k in key) + message)
    return md2(bytes(k ^ 0x5C for k in key) + inner)
