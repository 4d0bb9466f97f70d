// SPDX-License-Identifier: Apache-2.0
// floor(d / s) and d mod s (0 <= r < s) for a two's complement d in -128..127 and s in 1..255:
// ntpu_seq's CONV_T setup (the phase of a tap offset, docs/isa.md 1.5). Combinational, eight
// restoring steps on |d|; s = 0 gives garbage (the command processor rejects it).
`default_nettype none

module ntpu_floor_div8 (
  input  logic [7:0]        d,  // two's complement
  input  logic [7:0]        s,
  output logic signed [8:0] q,
  output logic [7:0]        r
);
  logic [7:0] a, qa;
  logic [8:0] ra;

  always @* begin
    a = d[7] ? 8'(-d) : d;
    ra = 9'd0;
    qa = 8'd0;
    for (int i = 7; i >= 0; i--) begin
      ra = {ra[7:0], a[i]};
      if (ra >= {1'b0, s}) begin
        ra = ra - {1'b0, s};
        qa[i] = 1'b1;
      end
    end
    if (!d[7]) begin
      q = $signed({1'b0, qa});
      r = ra[7:0];
    end else if (ra == 9'd0) begin
      q = -$signed({1'b0, qa});
      r = 8'd0;
    end else begin
      q = -$signed({1'b0, qa}) - 9'sd1;
      r = s - ra[7:0];
    end
  end
endmodule

`default_nettype wire
