// SPDX-License-Identifier: Apache-2.0
// iCE40 version of rtl/ntpu_pll.sv: SB_PLL40_PAD in SIMPLE feedback mode, the reference taken
// straight from its pad (on the iCE40UP5K-SG48, pin 35 is the PLL's pad).
//
// Contract as the generic module's. CLKOUT_HZ must be CLKIN_HZ * (DIVF+1) / 2^DIVQ exactly with
// DIVR = 0, i.e. a VCO of 533..1066 MHz that is a multiple of the reference; anything else stops
// elaboration rather than running at a nearby frequency (the UART divider depends on it). The
// settings equal what `icepll -i 12 -o F` prints for such frequencies.
`default_nettype none

module ntpu_pll #(
  parameter int CLKIN_HZ = 12_000_000,  // reference frequency, 10..133 MHz
  parameter int CLKOUT_HZ = 24_000_000  // wanted output frequency
) (
  input  logic clk_in,
  output logic clk_out,
  output logic locked
);

  // DIVQ: the output divider 2^DIVQ (1..6) that puts the VCO in range; 0 when none does.
  function automatic int pick_divq(input int fin, input int fout);
    pick_divq = 0;
    for (int q = 6; q >= 1; q--) begin
      if (64'(fout) * 64'(1 << q) >= 64'd533_000_000 && 64'(fout) * 64'(1 << q) <= 64'd1_066_000_000 &&
          (64'(fout) * 64'(1 << q)) % 64'(fin) == 64'd0) begin
        pick_divq = q;
      end
    end
  endfunction

  localparam int DIVQ = pick_divq(CLKIN_HZ, CLKOUT_HZ);
  localparam int DIVF = int'((64'(CLKOUT_HZ) * 64'(1 << DIVQ)) / 64'(CLKIN_HZ)) - 1;
  // Loop filter for the phase detector frequency (the reference, as DIVR = 0), as icepll picks it.
  localparam int FILTER = (CLKIN_HZ < 17_000_000) ? 1 : (CLKIN_HZ < 26_000_000) ? 2 :
                          (CLKIN_HZ < 44_000_000) ? 3 : (CLKIN_HZ < 66_000_000) ? 4 :
                          (CLKIN_HZ < 101_000_000) ? 5 : 6;

  if (CLKOUT_HZ == CLKIN_HZ) begin : g_direct
    assign clk_out = clk_in;
    assign locked = 1'b1;
  end else begin : g_pll
    if (CLKIN_HZ < 10_000_000 || CLKIN_HZ > 133_000_000 || DIVQ == 0 || DIVF < 0 || DIVF > 127) begin : g_bad
      initial $fatal(1, "ntpu_pll (iCE40): no exact PLL setting for this CLKOUT_HZ");
    end

    SB_PLL40_PAD #(
      .FEEDBACK_PATH("SIMPLE"),
      .PLLOUT_SELECT("GENCLK"),
      .DIVR(4'd0),
      .DIVF(7'(DIVF)),
      .DIVQ(3'(DIVQ)),
      .FILTER_RANGE(3'(FILTER))
    ) u_pll (
      .PACKAGEPIN   (clk_in),
      .PLLOUTCORE   (),
      .PLLOUTGLOBAL (clk_out),
      .EXTFEEDBACK  (1'b0),
      .DYNAMICDELAY (8'd0),
      .LOCK         (locked),
      .BYPASS       (1'b0),
      .RESETB       (1'b1),
      .LATCHINPUTVALUE(1'b0),
      .SDO          (),
      .SDI          (1'b0),
      .SCLK         (1'b0)
    );
  end

endmodule

`default_nettype wire
