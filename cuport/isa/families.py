"""Import every instruction family so that its lowerings register themselves."""

from . import bits, compare, control, convert, data, floating, integer, memory  # noqa: F401
