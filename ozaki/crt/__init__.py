"""Moduli tables, CRT reconstruction and the Kulisch accumulator (exact integer arithmetic)."""

from . import kulisch
from .moduli import (CRT_SLACK_BITS, check_table, crt_bound, crt_bound_float, max_num_moduli,
                     moduli, num_moduli_for_bits, product, usable_bits)
from .reconstruct import CRTConstants, crt_constants, reconstruct, remainder_near, symmetric

__all__ = ["kulisch", "CRT_SLACK_BITS", "check_table", "crt_bound", "crt_bound_float", "max_num_moduli", "moduli",
           "num_moduli_for_bits", "product", "usable_bits", "CRTConstants",
           "crt_constants", "reconstruct", "remainder_near", "symmetric"]
