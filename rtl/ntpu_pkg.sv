// nanoTPU constants shared by the RTL: frame bytes, opcodes, device status codes, memory ids, flag bits
// and the layouts of the ID and status blocks.
//
// Contract: every number here equals its twin in host/include/ntpu/protocol.h (docs/protocol.md and
// docs/isa.md explain them). The host library, the golden model and the RTL must agree byte for byte,
// so a change here is a change of the wire protocol.
`default_nettype none

// Waiver: a table of protocol constants; every module uses only a few of them.
/* verilator lint_off UNUSEDPARAM */
package ntpu_pkg;

  // ---------------------------------------------------------------- framing
  localparam logic [7:0] SOF_CMD = 8'hA5;    // first byte of a host -> device frame
  localparam logic [7:0] SOF_REPLY = 8'h5A;  // first byte of a device -> host frame
  localparam int FRAME_HEADER = 4;           // SOF, SEQ, LEN
  localparam int FRAME_TRAILER = 4;          // CRC32
  // zlib's crc32 over a message followed by its own CRC (little-endian) always gives this value,
  // so the receiver checks a frame without storing the CRC bytes it received.
  localparam logic [31:0] CRC_RESIDUE = 32'h2144DF1C;

  // ---------------------------------------------------------------- opcodes
  typedef enum logic [7:0] {
    OP_NOP = 8'h00,
    OP_INFO = 8'h01,
    OP_WRITE_MEM = 8'h02,
    OP_READ_MEM = 8'h03,
    OP_LOAD_W = 8'h04,
    OP_MATMUL = 8'h05,
    OP_FENCE = 8'h06,
    OP_STATUS = 8'h07,
    OP_COUNTERS = 8'h08,
    OP_ACT = 8'h09,        // 1.1
    OP_RELU_GRAD = 8'h0A,  // 1.1
    OP_COLSUM = 8'h0B,     // 1.1
    OP_SYNC = 8'h0C,       // 1.2
    OP_OPTIM = 8'h0D,      // 1.3
    OP_RUN = 8'h0E         // 1.4
  } opcode_e;

  // Whole payload lengths (opcode included); WRITE_MEM adds its row data.
  localparam int LEN_NOP = 1;
  localparam int LEN_INFO = 1;
  localparam int LEN_MEM_HDR = 6;
  localparam int LEN_LOAD_W = 4;
  localparam int LEN_MATMUL = 8;     // without MATMUL_TRANSPOSE_A
  localparam int LEN_MATMUL_T = 10;  // with MATMUL_TRANSPOSE_A: adds stride
  localparam int LEN_FENCE = 1;
  localparam int LEN_STATUS = 1;
  localparam int LEN_COUNTERS = 2;
  localparam int LEN_ACT = 10;
  localparam int LEN_RELU_GRAD = 10;
  localparam int LEN_COLSUM = 8;
  localparam int LEN_SYNC = 1;
  localparam int LEN_OPTIM = 10;
  localparam int LEN_RUN = 6;
  localparam int RUN_REPLY_BYTES = 2;  // RUN's reply data once its program started: done, u16
  localparam int PROG_LEN_BYTES = 2;   // the u16 LEN before each command of a program
  localparam int LEN_OPTIM_ADAM = 12;  // OPTIM with OPTIM_ADAM: adds s (1.4)
  localparam int CMD_HDR_MAX = 12;  // longest fixed part: OPTIM with ADAM (a core without OS: 10)

  // ---------------------------------------------------------------- memories
  typedef enum logic [7:0] {
    MEM_UB = 8'd0,   // unified buffer: N lanes x 16 bit
    MEM_WB = 8'd1,   // weight buffer: N lanes x 16 bit
    MEM_ACC = 8'd2,  // accumulators: N lanes x 32 bit
    MEM_PM = 8'd3,   // program memory (1.4): rows of 2N bytes
    MEM_OS = 8'd4    // optimizer state (1.4, OS_ROWS > 0): N lanes x 32 bit
  } mem_e;

  // ---------------------------------------------------------------- flag bits
  localparam logic [7:0] LOADW_TRANSPOSE = 8'h01;
  localparam logic [7:0] LOADW_RESERVED = 8'hFE;
  localparam logic [7:0] MATMUL_BF16 = 8'h01;
  localparam logic [7:0] MATMUL_ACCUMULATE = 8'h02;
  localparam logic [7:0] MATMUL_TRANSPOSE_A = 8'h04;
  localparam logic [7:0] MATMUL_RESERVED = 8'hF8;
  localparam logic [7:0] COUNTERS_CLEAR = 8'h01;
  localparam logic [7:0] COUNTERS_RESERVED = 8'hFE;
  // ACT, RELU_GRAD: OUT (bits 3:2) says where the result rows go.
  localparam logic [7:0] ACT_BIAS = 8'h01;
  localparam logic [7:0] ACT_RELU = 8'h02;
  localparam logic [7:0] OUT_UB = 8'h00;    // bf16 -> UB
  localparam logic [7:0] OUT_WB = 8'h04;    // bf16 -> WB
  localparam logic [7:0] OUT_ACC = 8'h08;   // fp32 bits -> ACC
  localparam logic [7:0] OUT_INT8 = 8'h0C;  // ACT only: requantized int8 -> UB
  localparam logic [7:0] OUT_MASK = 8'h0C;
  localparam logic [7:0] ACT_RESERVED = 8'hF0;
  localparam logic [7:0] RELU_GRAD_RESERVED = 8'hF3;
  localparam logic [7:0] COLSUM_ACCUMULATE = 8'h01;
  localparam logic [7:0] COLSUM_RESERVED = 8'hFE;
  localparam logic [7:0] OPTIM_MOMENTUM = 8'h01;
  localparam logic [7:0] OPTIM_ADAM = 8'h02;       // 1.4: Adam, m and v in OS
  localparam logic [7:0] OPTIM_DECOUPLED = 8'h04;  // 1.4: AdamW, with OPTIM_ADAM
  localparam logic [7:0] OPTIM_RESERVED = 8'hF8;
  localparam int ADAM_AUX_ROWS = 9;                // OPTIM ADAM's constant rows

  // ---------------------------------------------------------------- device status (reply byte 0)
  typedef enum logic [7:0] {
    DEV_OK = 8'd0,
    DEV_ERR_CRC = 8'd1,
    DEV_ERR_LENGTH = 8'd2,
    DEV_ERR_OPCODE = 8'd3,
    DEV_ERR_MEM = 8'd4,
    DEV_ERR_RANGE = 8'd5,
    DEV_ERR_ARG = 8'd6,
    DEV_ERR_SEQ = 8'd7     // 1.2
  } dev_status_e;

  // ---------------------------------------------------------------- ID block (INFO)
  localparam int ID_BYTES = 40;
  localparam logic [31:0] ID_MAGIC = 32'h5550544E;  // "NTPU" little-endian
  localparam logic [7:0] VERSION_MAJOR = 8'd1;
  localparam logic [7:0] VERSION_MINOR = 8'd4;
  localparam logic [7:0] DTYPE_INT8_BIT = 8'h01;
  localparam logic [7:0] DTYPE_BF16_BIT = 8'h02;
  localparam logic [7:0] FEATURE_TRANSPOSE_BIT = 8'h01;    // LOAD_W TRANSPOSE
  localparam logic [7:0] FEATURE_TRANSPOSE_A_BIT = 8'h02;  // MATMUL TRANSPOSE_A (1.1)
  localparam logic [7:0] FEATURE_VECTOR_BIT = 8'h04;       // ACT, RELU_GRAD, COLSUM (1.1)
  localparam logic [7:0] FEATURE_OPTIM_BIT = 8'h08;        // OPTIM (1.3)
  localparam logic [7:0] FEATURE_PROGRAM_BIT = 8'h10;      // PM and RUN (1.4)
  localparam logic [7:0] FEATURE_ADAM_BIT = 8'h20;         // OPTIM ADAM, memory OS (1.4)
  localparam logic [7:0] PLATFORM_RTL = 8'd1;

  // ---------------------------------------------------------------- status block (STATUS)
  localparam int STATUS_BYTES = 16;
  localparam int STATUS_OFF_BUSY = 0;        // u8
  localparam int STATUS_OFF_LAST_ERROR = 1;  // u8
  localparam int STATUS_OFF_ERRORS = 4;      // u32
  localparam int STATUS_OFF_COMMANDS = 8;    // u32
  localparam int STATUS_OFF_DROPPED = 12;    // u32

  // ---------------------------------------------------------------- performance counters (COUNTERS)
  localparam int CNT_CYCLES = 0;
  localparam int CNT_ARRAY_BUSY = 1;
  localparam int CNT_MACS = 2;
  localparam int CNT_STALL_LINK = 3;
  localparam int CNT_STALL_WEIGHT = 4;
  localparam int CNT_STALL_HAZARD = 5;
  localparam int CNT_STALL_TX = 6;
  localparam int CNT_RX_BYTES = 7;
  localparam int CNT_TX_BYTES = 8;
  localparam int CNT_COUNT = 9;
  localparam int CNT_W = 64;  // on the wire; a core may count with fewer bits (COUNTER_W)
  localparam int COUNTERS_BYTES = CNT_COUNT * CNT_W / 8;

endpackage
/* verilator lint_on UNUSEDPARAM */

`default_nettype wire
