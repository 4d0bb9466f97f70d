// SPDX-License-Identifier: Apache-2.0
// ntpu_vsim_pkg: functions of vsim's simulation forms (sim/vsim/*.sv) that synthesis has no use for.
`default_nettype none

package ntpu_vsim_pkg;
  // The number of set bits of a thermometer code t (ones at the bottom: 2^k - 1 has k): the link's
  // byte counts. In Verilator a population count is ~23 instructions (VL_COUNTONES_I: shifts, masks,
  // a multiply); for a thermometer code the exponent of a double is ~5: (t >> 1) + 1 = 2^(k-1) for
  // k >= 1 and 1 for k = 0, exact as a double (a power of two <= 2^63), so its biased exponent minus
  // 1023 is k - 1 (k >= 1) or 0, and t[0] adds the 1 back. Only for thermometer codes.
  function automatic logic [7:0] therm_count(input logic [63:0] t);
    therm_count = 8'({7'd0, t[0]} + 8'($realtobits($itor((t >> 1) + 64'd1)) >> 52) - 8'd255);
  endfunction

endpackage

`default_nettype wire
