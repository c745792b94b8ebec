"""Every enum constant and integer #define of cuda.h, by its C name: `K.CU_STREAM_NON_BLOCKING`."""

from types import SimpleNamespace

from cuport.capi import table

K = SimpleNamespace(**table.constants())
