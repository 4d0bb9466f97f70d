// SPDX-License-Identifier: Apache-2.0
// ECP5 version of rtl/ntpu_pll.sv: one EHXPLLL, CLKOP fed back to CLKFB, the clock taken from CLKOS.
//
// Contract as the generic module's. The EHXPLLL's rules (Lattice TN1263): the phase detector runs at
// CLKIN_HZ / CLKI_DIV (>= 3.125 MHz), CLKOP at that times CLKFB_DIV, the VCO at CLKOP times
// CLKOP_DIV (400..800 MHz), and CLKOS at the VCO / CLKOS_DIV. Taking the output from CLKOS reaches
// rates that are not a multiple of the phase detector's: 25 MHz -> 12 MHz is CLKI_DIV 1,
// CLKFB_DIV 1, CLKOP_DIV 24 (VCO 600 MHz), CLKOS_DIV 50. CLKOUT_HZ must come out exactly (the UART
// divider depends on it); when no setting does, elaboration stops.
`default_nettype none

module ntpu_pll #(
  parameter int CLKIN_HZ = 25_000_000,  // reference frequency
  parameter int CLKOUT_HZ = 12_000_000  // wanted output frequency
) (
  input  logic clk_in,
  output logic clk_out,
  output logic locked
);

  // {CLKI_DIV, CLKFB_DIV, CLKOP_DIV, CLKOS_DIV}, 8 bits each: the first exact setting with the
  // smallest reference and feedback dividers; 0 when there is none.
  function automatic logic [31:0] pick(input longint fin, input longint fout);
    pick = '0;
    for (longint d = 128; d >= 1; d--) begin
      for (longint f = 80; f >= 1; f--) begin
        longint pfd, fop;
        pfd = fin / d;
        fop = pfd * f;
        if (fin % d == 0 && pfd >= 3_125_000 && fop <= 400_000_000) begin
          for (longint p = 128; p >= 1; p--) begin
            if (fop * p >= 400_000_000 && fop * p <= 800_000_000 && (fop * p) % fout == 0 &&
                (fop * p) / fout <= 128) begin
              pick = {8'(d), 8'(f), 8'(p), 8'((fop * p) / fout)};
            end
          end
        end
      end
    end
  endfunction

  localparam logic [31:0] SETTING = pick(64'(CLKIN_HZ), 64'(CLKOUT_HZ));
  localparam int CLKI_DIV = int'(SETTING[31:24]);
  localparam int CLKFB_DIV = int'(SETTING[23:16]);
  localparam int CLKOP_DIV = int'(SETTING[15:8]);
  localparam int CLKOS_DIV = int'(SETTING[7:0]);

  if (CLKOUT_HZ == CLKIN_HZ) begin : g_direct
    assign clk_out = clk_in;
    assign locked = 1'b1;
  end else begin : g_pll
    if (SETTING == '0) begin : g_bad
      initial $fatal(1, "ntpu_pll (ECP5): no exact EHXPLLL setting for this CLKOUT_HZ");
    end

    logic clk_fb;

    EHXPLLL #(
      .PLLRST_ENA     ("DISABLED"),
      .INTFB_WAKE     ("DISABLED"),
      .STDBY_ENABLE   ("DISABLED"),
      .DPHASE_SOURCE  ("DISABLED"),
      .OUTDIVIDER_MUXA("DIVA"),
      .OUTDIVIDER_MUXB("DIVB"),
      .CLKI_DIV       (CLKI_DIV),
      .CLKFB_DIV      (CLKFB_DIV),
      .FEEDBK_PATH    ("CLKOP"),
      .CLKOP_ENABLE   ("ENABLED"),
      .CLKOP_DIV      (CLKOP_DIV),
      .CLKOP_CPHASE   (CLKOP_DIV - 1),  // zero phase: the coarse phase counts from DIV - 1
      .CLKOP_FPHASE   (0),
      .CLKOS_ENABLE   ("ENABLED"),
      .CLKOS_DIV      (CLKOS_DIV),
      .CLKOS_CPHASE   (CLKOS_DIV - 1),
      .CLKOS_FPHASE   (0)
    ) u_pll (
      .CLKI        (clk_in),
      .CLKFB       (clk_fb),
      .CLKOP       (clk_fb),
      .CLKOS       (clk_out),
      .CLKOS2      (),
      .CLKOS3      (),
      .RST         (1'b0),
      .STDBY       (1'b0),
      .PHASESEL0   (1'b0),
      .PHASESEL1   (1'b0),
      .PHASEDIR    (1'b0),
      .PHASESTEP   (1'b0),
      .PHASELOADREG(1'b0),
      .PLLWAKESYNC (1'b0),
      .ENCLKOP     (1'b0),
      .ENCLKOS     (1'b0),
      .ENCLKOS2    (1'b0),
      .ENCLKOS3    (1'b0),
      .LOCK        (locked),
      .INTLOCK     (),
      .REFCLK      (),
      .CLKINTFB    ()
    );
  end

endmodule

`default_nettype wire
