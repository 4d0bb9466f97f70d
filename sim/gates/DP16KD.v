// SPDX-License-Identifier: Apache-2.0
// Simulation model of the ECP5 DP16KD block RAM for gate-level simulation of a board netlist
// (make fpga-test).
//
// The DP16KD in Yosys's share/ecp5/cells_sim.v declares the ports and parameters and nothing else:
// its outputs never change. This model has the behaviour the netlist relies on (Lattice TN1264):
// 18 Kbit, true dual port, both ports as wide (1, 2, 4, 9 or 18 bits), no output register
// (REGMODE "NOREG": DO changes at the clock edge that reads), chip selects decoded against
// CSDECODE, and the three write modes: NORMAL (DO holds during a write), WRITETHROUGH (DO shows
// the new word), READBEFOREWRITE (DO shows the old one). At 18 bits AD1 / AD0 are the byte
// enables of a write. The output reset (RST) clears DO at the clock edge. Elaboration stops on
// output registers, inverted clocks or mixed widths, which this model does not have.
// Plain Verilog, like the netlist and Yosys's cell models it is compiled with.
`default_nettype none

module DP16KD (DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6,
  DIA5, DIA4, DIA3, DIA2, DIA1, DIA0, ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5,
  ADA4, ADA3, ADA2, ADA1, ADA0, CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0, DIB17, DIB16, DIB15,
  DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
  ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0, CEB,
  OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0, DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10,
  DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0, DOB17, DOB16, DOB15, DOB14, DOB13,
  DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0);
  input wire DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5,
             DIA4, DIA3, DIA2, DIA1, DIA0;
  input wire ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0;
  input wire CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0;
  input wire DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5,
             DIB4, DIB3, DIB2, DIB1, DIB0;
  input wire ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0;
  input wire CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0;
  output wire DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5,
              DOA4, DOA3, DOA2, DOA1, DOA0;
  output wire DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5,
              DOB4, DOB3, DOB2, DOB1, DOB0;

  parameter DATA_WIDTH_A = 18;
  parameter DATA_WIDTH_B = 18;
  parameter REGMODE_A = "NOREG";
  parameter REGMODE_B = "NOREG";
  parameter RESETMODE = "SYNC";
  parameter ASYNC_RESET_RELEASE = "SYNC";
  parameter CSDECODE_A = "0b000";
  parameter CSDECODE_B = "0b000";
  parameter WRITEMODE_A = "NORMAL";
  parameter WRITEMODE_B = "NORMAL";
  parameter CLKAMUX = "CLKA";
  parameter CLKBMUX = "CLKB";
  parameter GSR = "ENABLED";
  parameter WID = 0;
  parameter INIT_DATA = "STATIC";
  parameter INITVAL_00 = 320'h0;
  parameter INITVAL_01 = 320'h0;
  parameter INITVAL_02 = 320'h0;
  parameter INITVAL_03 = 320'h0;
  parameter INITVAL_04 = 320'h0;
  parameter INITVAL_05 = 320'h0;
  parameter INITVAL_06 = 320'h0;
  parameter INITVAL_07 = 320'h0;
  parameter INITVAL_08 = 320'h0;
  parameter INITVAL_09 = 320'h0;
  parameter INITVAL_0A = 320'h0;
  parameter INITVAL_0B = 320'h0;
  parameter INITVAL_0C = 320'h0;
  parameter INITVAL_0D = 320'h0;
  parameter INITVAL_0E = 320'h0;
  parameter INITVAL_0F = 320'h0;
  parameter INITVAL_10 = 320'h0;
  parameter INITVAL_11 = 320'h0;
  parameter INITVAL_12 = 320'h0;
  parameter INITVAL_13 = 320'h0;
  parameter INITVAL_14 = 320'h0;
  parameter INITVAL_15 = 320'h0;
  parameter INITVAL_16 = 320'h0;
  parameter INITVAL_17 = 320'h0;
  parameter INITVAL_18 = 320'h0;
  parameter INITVAL_19 = 320'h0;
  parameter INITVAL_1A = 320'h0;
  parameter INITVAL_1B = 320'h0;
  parameter INITVAL_1C = 320'h0;
  parameter INITVAL_1D = 320'h0;
  parameter INITVAL_1E = 320'h0;
  parameter INITVAL_1F = 320'h0;
  parameter INITVAL_20 = 320'h0;
  parameter INITVAL_21 = 320'h0;
  parameter INITVAL_22 = 320'h0;
  parameter INITVAL_23 = 320'h0;
  parameter INITVAL_24 = 320'h0;
  parameter INITVAL_25 = 320'h0;
  parameter INITVAL_26 = 320'h0;
  parameter INITVAL_27 = 320'h0;
  parameter INITVAL_28 = 320'h0;
  parameter INITVAL_29 = 320'h0;
  parameter INITVAL_2A = 320'h0;
  parameter INITVAL_2B = 320'h0;
  parameter INITVAL_2C = 320'h0;
  parameter INITVAL_2D = 320'h0;
  parameter INITVAL_2E = 320'h0;
  parameter INITVAL_2F = 320'h0;
  parameter INITVAL_30 = 320'h0;
  parameter INITVAL_31 = 320'h0;
  parameter INITVAL_32 = 320'h0;
  parameter INITVAL_33 = 320'h0;
  parameter INITVAL_34 = 320'h0;
  parameter INITVAL_35 = 320'h0;
  parameter INITVAL_36 = 320'h0;
  parameter INITVAL_37 = 320'h0;
  parameter INITVAL_38 = 320'h0;
  parameter INITVAL_39 = 320'h0;
  parameter INITVAL_3A = 320'h0;
  parameter INITVAL_3B = 320'h0;
  parameter INITVAL_3C = 320'h0;
  parameter INITVAL_3D = 320'h0;
  parameter INITVAL_3E = 320'h0;
  parameter INITVAL_3F = 320'h0;

  localparam W = DATA_WIDTH_A;
  localparam SHIFT = (W == 1) ? 0 : (W == 2) ? 1 : 2;  // address bits below a word (widths 1, 2, 4)

  generate
    if (DATA_WIDTH_B != W || !(W == 1 || W == 2 || W == 4 || W == 9 || W == 18) ||
        REGMODE_A != "NOREG" || REGMODE_B != "NOREG" || CLKAMUX != "CLKA" || CLKBMUX != "CLKB")
    begin : g_unsupported
      initial $fatal(1, "DP16KD model: only equal widths, NOREG and plain clocks are modelled");
    end
  endgenerate

  // The array as 9-bit granules (widths 9 and 18) or as bits (widths 1, 2, 4: no parity bits).
  // INITVAL_xx holds 32 granules of 9 bits (18-bit words in 20-bit fields, as Yosys writes them).
  reg [8:0] mem9 [0:2047];
  reg       mem1 [0:16383];
  wire [64*320-1:0] init = {INITVAL_3F, INITVAL_3E, INITVAL_3D, INITVAL_3C, INITVAL_3B, INITVAL_3A,
                            INITVAL_39, INITVAL_38,
                            INITVAL_37, INITVAL_36, INITVAL_35, INITVAL_34, INITVAL_33, INITVAL_32,
                            INITVAL_31, INITVAL_30, INITVAL_2F, INITVAL_2E, INITVAL_2D, INITVAL_2C,
                            INITVAL_2B, INITVAL_2A, INITVAL_29, INITVAL_28, INITVAL_27, INITVAL_26,
                            INITVAL_25, INITVAL_24, INITVAL_23, INITVAL_22, INITVAL_21, INITVAL_20,
                            INITVAL_1F, INITVAL_1E, INITVAL_1D, INITVAL_1C, INITVAL_1B, INITVAL_1A,
                            INITVAL_19, INITVAL_18, INITVAL_17, INITVAL_16, INITVAL_15, INITVAL_14,
                            INITVAL_13, INITVAL_12, INITVAL_11, INITVAL_10, INITVAL_0F, INITVAL_0E,
                            INITVAL_0D, INITVAL_0C, INITVAL_0B, INITVAL_0A, INITVAL_09, INITVAL_08,
                            INITVAL_07, INITVAL_06, INITVAL_05, INITVAL_04, INITVAL_03, INITVAL_02,
                            INITVAL_01, INITVAL_00};
  integer i;
  initial begin
    for (i = 0; i < 1024; i = i + 1) begin
      mem9[2*i] = init[20*i +: 9];
      mem9[2*i+1] = init[20*i+9 +: 9];
    end
    for (i = 0; i < 16384; i = i + 1) mem1[i] = init[20*(i/16) + i%16];
  end

  wire [17:0] di_a = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7,
                       DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
  wire [13:0] ad_a = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2,
                       ADA1, ADA0};
  wire [17:0] di_b = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7,
                       DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
  wire [13:0] ad_b = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2,
                       ADB1, ADB0};

  // Port A.
  reg [17:0] do_a_q = 18'h0;
  wire [2:0] cs_a = {CSA2, CSA1, CSA0};
  // CSDECODE_A is "0bXYZ": the digits' ASCII codes end in the bits.
  wire en_a = CEA && cs_a == {CSDECODE_A[16], CSDECODE_A[8], CSDECODE_A[0]};
  wire [13:0] bit_a = (ad_a >> SHIFT) * W;
  always @(posedge CLKA) begin : g_port_a
    integer b;
    if (RSTA) begin
      do_a_q <= 18'h0;
    end else if (en_a) begin
      if (W == 18) begin
        if (!WEA || WRITEMODE_A == "READBEFOREWRITE")
          do_a_q <= {mem9[{ad_a[13:4], 1'b1}], mem9[{ad_a[13:4], 1'b0}]};
        if (WEA && WRITEMODE_A == "WRITETHROUGH") do_a_q <= di_a;
        if (WEA && ad_a[0]) mem9[{ad_a[13:4], 1'b0}] <= di_a[8:0];
        if (WEA && ad_a[1]) mem9[{ad_a[13:4], 1'b1}] <= di_a[17:9];
      end else if (W == 9) begin
        if (!WEA || WRITEMODE_A == "READBEFOREWRITE") do_a_q <= {9'h0, mem9[ad_a[13:3]]};
        if (WEA && WRITEMODE_A == "WRITETHROUGH") do_a_q <= {9'h0, di_a[8:0]};
        if (WEA) mem9[ad_a[13:3]] <= di_a[8:0];
      end else begin
        for (b = 0; b < W; b = b + 1) begin
          if (!WEA || WRITEMODE_A == "READBEFOREWRITE") do_a_q[b] <= mem1[bit_a + b];
          if (WEA && WRITEMODE_A == "WRITETHROUGH") do_a_q[b] <= di_a[b];
          if (WEA) mem1[bit_a + b] <= di_a[b];
        end
      end
    end
  end

  // Port B.
  reg [17:0] do_b_q = 18'h0;
  wire [2:0] cs_b = {CSB2, CSB1, CSB0};
  // CSDECODE_B is "0bXYZ": the digits' ASCII codes end in the bits.
  wire en_b = CEB && cs_b == {CSDECODE_B[16], CSDECODE_B[8], CSDECODE_B[0]};
  wire [13:0] bit_b = (ad_b >> SHIFT) * W;
  always @(posedge CLKB) begin : g_port_b
    integer b;
    if (RSTB) begin
      do_b_q <= 18'h0;
    end else if (en_b) begin
      if (W == 18) begin
        if (!WEB || WRITEMODE_B == "READBEFOREWRITE")
          do_b_q <= {mem9[{ad_b[13:4], 1'b1}], mem9[{ad_b[13:4], 1'b0}]};
        if (WEB && WRITEMODE_B == "WRITETHROUGH") do_b_q <= di_b;
        if (WEB && ad_b[0]) mem9[{ad_b[13:4], 1'b0}] <= di_b[8:0];
        if (WEB && ad_b[1]) mem9[{ad_b[13:4], 1'b1}] <= di_b[17:9];
      end else if (W == 9) begin
        if (!WEB || WRITEMODE_B == "READBEFOREWRITE") do_b_q <= {9'h0, mem9[ad_b[13:3]]};
        if (WEB && WRITEMODE_B == "WRITETHROUGH") do_b_q <= {9'h0, di_b[8:0]};
        if (WEB) mem9[ad_b[13:3]] <= di_b[8:0];
      end else begin
        for (b = 0; b < W; b = b + 1) begin
          if (!WEB || WRITEMODE_B == "READBEFOREWRITE") do_b_q[b] <= mem1[bit_b + b];
          if (WEB && WRITEMODE_B == "WRITETHROUGH") do_b_q[b] <= di_b[b];
          if (WEB) mem1[bit_b + b] <= di_b[b];
        end
      end
    end
  end

  assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5,
          DOA4, DOA3, DOA2, DOA1, DOA0} = do_a_q;
  assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5,
          DOB4, DOB3, DOB2, DOB1, DOB0} = do_b_q;
endmodule

`default_nettype wire
