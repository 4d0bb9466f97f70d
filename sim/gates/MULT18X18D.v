// SPDX-License-Identifier: Apache-2.0
// Simulation model of the ECP5 MULT18X18D for gate-level simulation of a board netlist (make fpga-test).
//
// Yosys ships only a black box for it (share/lattice/cells_bb_ecp5.v). synth_ecp5 maps each multiply
// to one combinational MULT18X18D (share/lattice/dsp_map_18x18.v: every REG_*_CLK "NONE", C, SOURCEA
// and SOURCEB tied low, no cascade), so this model is that and only that: P = A * B, each operand
// signed when SIGNEDA / SIGNEDB is high (Lattice TN1267). Elaboration stops on a netlist that uses
// any of the block's registers or its bypass, which this model does not have.
// Plain Verilog, like the netlist and Yosys's cell models it is compiled with.
`default_nettype none

module MULT18X18D (A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0,
  B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0, C17, C16, C15,
  C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0, SIGNEDA, SIGNEDB, SOURCEA,
  SOURCEB, CLK3, CLK2, CLK1, CLK0, CE3, CE2, CE1, CE0, RST3, RST2, RST1, RST0, SRIA17, SRIA16,
  SRIA15, SRIA14, SRIA13, SRIA12, SRIA11, SRIA10, SRIA9, SRIA8, SRIA7, SRIA6, SRIA5, SRIA4, SRIA3,
  SRIA2, SRIA1, SRIA0, SRIB17, SRIB16, SRIB15, SRIB14, SRIB13, SRIB12, SRIB11, SRIB10, SRIB9,
  SRIB8, SRIB7, SRIB6, SRIB5, SRIB4, SRIB3, SRIB2, SRIB1, SRIB0, SROA17, SROA16, SROA15, SROA14,
  SROA13, SROA12, SROA11, SROA10, SROA9, SROA8, SROA7, SROA6, SROA5, SROA4, SROA3, SROA2, SROA1,
  SROA0, SROB17, SROB16, SROB15, SROB14, SROB13, SROB12, SROB11, SROB10, SROB9, SROB8, SROB7,
  SROB6, SROB5, SROB4, SROB3, SROB2, SROB1, SROB0, ROA17, ROA16, ROA15, ROA14, ROA13, ROA12, ROA11,
  ROA10, ROA9, ROA8, ROA7, ROA6, ROA5, ROA4, ROA3, ROA2, ROA1, ROA0, ROB17, ROB16, ROB15, ROB14,
  ROB13, ROB12, ROB11, ROB10, ROB9, ROB8, ROB7, ROB6, ROB5, ROB4, ROB3, ROB2, ROB1, ROB0, ROC17,
  ROC16, ROC15, ROC14, ROC13, ROC12, ROC11, ROC10, ROC9, ROC8, ROC7, ROC6, ROC5, ROC4, ROC3, ROC2,
  ROC1, ROC0, P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19,
  P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0, SIGNEDP);
  input wire A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0, B17,
             B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0, C17, C16,
             C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0, SIGNEDA,
             SIGNEDB, SOURCEA, SOURCEB, CLK3, CLK2, CLK1, CLK0, CE3, CE2, CE1, CE0, RST3, RST2,
             RST1, RST0, SRIA17, SRIA16, SRIA15, SRIA14, SRIA13, SRIA12, SRIA11, SRIA10, SRIA9,
             SRIA8, SRIA7, SRIA6, SRIA5, SRIA4, SRIA3, SRIA2, SRIA1, SRIA0, SRIB17, SRIB16, SRIB15,
             SRIB14, SRIB13, SRIB12, SRIB11, SRIB10, SRIB9, SRIB8, SRIB7, SRIB6, SRIB5, SRIB4,
             SRIB3, SRIB2, SRIB1, SRIB0;
  output wire SROA17, SROA16, SROA15, SROA14, SROA13, SROA12, SROA11, SROA10, SROA9, SROA8, SROA7,
              SROA6, SROA5, SROA4, SROA3, SROA2, SROA1, SROA0, SROB17, SROB16, SROB15, SROB14,
              SROB13, SROB12, SROB11, SROB10, SROB9, SROB8, SROB7, SROB6, SROB5, SROB4, SROB3,
              SROB2, SROB1, SROB0, ROA17, ROA16, ROA15, ROA14, ROA13, ROA12, ROA11, ROA10, ROA9,
              ROA8, ROA7, ROA6, ROA5, ROA4, ROA3, ROA2, ROA1, ROA0, ROB17, ROB16, ROB15, ROB14,
              ROB13, ROB12, ROB11, ROB10, ROB9, ROB8, ROB7, ROB6, ROB5, ROB4, ROB3, ROB2, ROB1,
              ROB0, ROC17, ROC16, ROC15, ROC14, ROC13, ROC12, ROC11, ROC10, ROC9, ROC8, ROC7, ROC6,
              ROC5, ROC4, ROC3, ROC2, ROC1, ROC0, P35, P34, P33, P32, P31, P30, P29, P28, P27, P26,
              P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9,
              P8, P7, P6, P5, P4, P3, P2, P1, P0, SIGNEDP;
  parameter REG_INPUTA_CLK = "NONE";
  parameter REG_INPUTA_CE = "CE0";
  parameter REG_INPUTA_RST = "RST0";
  parameter REG_INPUTB_CLK = "NONE";
  parameter REG_INPUTB_CE = "CE0";
  parameter REG_INPUTB_RST = "RST0";
  parameter REG_INPUTC_CLK = "NONE";
  parameter REG_INPUTC_CE = "CE0";
  parameter REG_INPUTC_RST = "RST0";
  parameter REG_PIPELINE_CLK = "NONE";
  parameter REG_PIPELINE_CE = "CE0";
  parameter REG_PIPELINE_RST = "RST0";
  parameter REG_OUTPUT_CLK = "NONE";
  parameter REG_OUTPUT_CE = "CE0";
  parameter REG_OUTPUT_RST = "RST0";
  parameter CLK0_DIV = "ENABLED";
  parameter CLK1_DIV = "ENABLED";
  parameter CLK2_DIV = "ENABLED";
  parameter CLK3_DIV = "ENABLED";
  parameter HIGHSPEED_CLK = "NONE";
  parameter GSR = "ENABLED";
  parameter CAS_MATCH_REG = "FALSE";
  parameter SOURCEB_MODE = "B_SHIFT";
  parameter MULT_BYPASS = "DISABLED";
  parameter RESETMODE = "SYNC";

  generate
    if (REG_INPUTA_CLK != "NONE" || REG_INPUTB_CLK != "NONE" || REG_INPUTC_CLK != "NONE" ||
        REG_PIPELINE_CLK != "NONE" || REG_OUTPUT_CLK != "NONE" || MULT_BYPASS != "DISABLED")
    begin : g_unsupported
      initial $fatal(1, "MULT18X18D model: only the combinational multiplier Yosys maps to is modelled");
    end
  endgenerate

  wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
  wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
  wire signed [18:0] a_x = {SIGNEDA & a[17], a};
  wire signed [18:0] b_x = {SIGNEDB & b[17], b};
  wire signed [37:0] p_x = a_x * b_x;

  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18,
          P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1,
          P0} = p_x[35:0];
  assign SIGNEDP = SIGNEDA | SIGNEDB;
  // No cascade and no shift chain: low.
  assign {SROA17, SROA16, SROA15, SROA14, SROA13, SROA12, SROA11, SROA10, SROA9, SROA8, SROA7,
          SROA6, SROA5, SROA4, SROA3, SROA2, SROA1, SROA0, SROB17, SROB16, SROB15, SROB14, SROB13,
          SROB12, SROB11, SROB10, SROB9, SROB8, SROB7, SROB6, SROB5, SROB4, SROB3, SROB2, SROB1,
          SROB0, ROA17, ROA16, ROA15, ROA14, ROA13, ROA12, ROA11, ROA10, ROA9, ROA8, ROA7, ROA6,
          ROA5, ROA4, ROA3, ROA2, ROA1, ROA0, ROB17, ROB16, ROB15, ROB14, ROB13, ROB12, ROB11,
          ROB10, ROB9, ROB8, ROB7, ROB6, ROB5, ROB4, ROB3, ROB2, ROB1, ROB0, ROC17, ROC16, ROC15,
          ROC14, ROC13, ROC12, ROC11, ROC10, ROC9, ROC8, ROC7, ROC6, ROC5, ROC4, ROC3, ROC2, ROC1,
          ROC0} = '0;

  wire unused_ok = &{1'b0, C17, C16, C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2,
                     C1, C0, SOURCEA, SOURCEB, CLK3, CLK2, CLK1, CLK0, CE3, CE2, CE1, CE0, RST3,
                     RST2, RST1, RST0, SRIA17, SRIA16, SRIA15, SRIA14, SRIA13, SRIA12, SRIA11,
                     SRIA10, SRIA9, SRIA8, SRIA7, SRIA6, SRIA5, SRIA4, SRIA3, SRIA2, SRIA1, SRIA0,
                     SRIB17, SRIB16, SRIB15, SRIB14, SRIB13, SRIB12, SRIB11, SRIB10, SRIB9, SRIB8,
                     SRIB7, SRIB6, SRIB5, SRIB4, SRIB3, SRIB2, SRIB1, SRIB0, 1'b0};
endmodule

`default_nettype wire
