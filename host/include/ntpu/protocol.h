/* nanoTPU wire protocol: frame layout, opcodes, device status codes and the
 * layouts of the blocks the device sends back. docs/protocol.md and docs/isa.md
 * explain every field; rtl/ntpu_pkg.sv holds the same numbers for the RTL.
 *
 * Frame (both directions), all multi-byte fields little-endian:
 *   SOF(1) SEQ(1) LEN(2) PAYLOAD(LEN) CRC32(4)
 * CRC-32 is IEEE 802.3 (zlib's crc32) over SEQ, LEN and PAYLOAD.
 */
#ifndef NTPU_PROTOCOL_H
#define NTPU_PROTOCOL_H

#include <stdint.h>

#define NTPU_SOF_CMD 0xA5u   /* first byte of a host -> device frame */
#define NTPU_SOF_REPLY 0x5Au /* first byte of a device -> host frame */
#define NTPU_FRAME_HEADER 4u /* SOF, SEQ, LEN */
#define NTPU_FRAME_TRAILER 4u /* CRC32 */
#define NTPU_FRAME_OVERHEAD (NTPU_FRAME_HEADER + NTPU_FRAME_TRAILER)

/* Opcodes: the first payload byte of a command frame. */
enum ntpu_opcode {
    NTPU_OP_NOP = 0x00,       /* [op]                                        -> status            */
    NTPU_OP_INFO = 0x01,      /* [op]                                        -> status, ID block  */
    NTPU_OP_WRITE_MEM = 0x02, /* [op][mem][addr u16][rows u16][rows*row bytes] -> status          */
    NTPU_OP_READ_MEM = 0x03,  /* [op][mem][addr u16][rows u16]               -> status, rows      */
    NTPU_OP_LOAD_W = 0x04,    /* [op][flags][wb_addr u16]                    -> status            */
    NTPU_OP_MATMUL = 0x05,    /* [op][flags][ub_addr u16][acc_addr u16][rows u16]([stride u16]) -> status */
    NTPU_OP_FENCE = 0x06,     /* [op]                                        -> status when idle  */
    NTPU_OP_STATUS = 0x07,    /* [op]                                        -> status, status block */
    NTPU_OP_COUNTERS = 0x08,  /* [op][flags]                                 -> status, counters  */
    /* version 1.1 (feature bit VECTOR) */
    NTPU_OP_ACT = 0x09,       /* [op][flags][src u16][dst u16][rows u16][aux u16]  -> status       */
    NTPU_OP_RELU_GRAD = 0x0A, /* [op][flags][src u16][dst u16][rows u16][mask u16] -> status       */
    NTPU_OP_COLSUM = 0x0B,    /* [op][flags][src u16][dst u16][rows u16]           -> status       */
    /* version 1.2 */
    NTPU_OP_SYNC = 0x0C,      /* [op], any SEQ; executes nothing   -> status, expected_seq u8      */
    /* version 1.3 (feature bit OPTIM) */
    NTPU_OP_OPTIM = 0x0D,     /* [op][flags][p u16][g u16][rows u16][aux u16]      -> status       */
                              /* 1.4, flags ADAM: ... [aux u16][s u16] (LEN 12)                    */
    /* version 1.4 (feature bit PROGRAM) */
    NTPU_OP_RUN = 0x0E,       /* [op][flags][addr u16][rows u16]: the program in PM -> status, done u16 */
};

/* Command lengths (whole payload, opcode included). WRITE_MEM adds its data. */
#define NTPU_LEN_NOP 1u
#define NTPU_LEN_INFO 1u
#define NTPU_LEN_MEM_HDR 6u
#define NTPU_LEN_LOAD_W 4u
#define NTPU_LEN_MATMUL 8u   /* without NTPU_MATMUL_TRANSPOSE_A */
#define NTPU_LEN_MATMUL_T 10u /* with NTPU_MATMUL_TRANSPOSE_A: adds stride u16 */
#define NTPU_LEN_FENCE 1u
#define NTPU_LEN_STATUS 1u
#define NTPU_LEN_COUNTERS 2u
#define NTPU_LEN_ACT 10u
#define NTPU_LEN_RELU_GRAD 10u
#define NTPU_LEN_COLSUM 8u
#define NTPU_LEN_SYNC 1u
#define NTPU_LEN_OPTIM 10u
#define NTPU_LEN_OPTIM_ADAM 12u /* with NTPU_OPTIM_ADAM: adds s u16 (1.4) */
#define NTPU_LEN_RUN 6u
#define NTPU_RUN_REPLY_BYTES 2u /* RUN's reply data once its program started: done, u16 */
#define NTPU_PROG_LEN_BYTES 2u  /* the u16 LEN before each command of a program */

/* Memory ids of WRITE_MEM / READ_MEM. UB and WB rows are N lanes of 16 bits,
 * ACC rows are N lanes of 32 bits; lane 0 first, each lane little-endian. */
enum ntpu_mem {
    NTPU_MEM_UB = 0,  /* unified buffer: activations (int8 in the low byte, or bf16) */
    NTPU_MEM_WB = 1,  /* weight buffer: weight tiles, N rows each                    */
    NTPU_MEM_ACC = 2, /* accumulators: int32 or fp32                                  */
    NTPU_MEM_PM = 3,  /* program memory (1.4, feature PROGRAM): rows of 2N bytes      */
    NTPU_MEM_OS = 4,  /* optimizer state: fp32, as ACC rows (1.4, feature ADAM)       */
};

#define NTPU_LOADW_TRANSPOSE 0x01u /* LOAD_W flags: PE(i,n) takes WB[wb_addr+n][i] */
#define NTPU_MATMUL_BF16 0x01u     /* MATMUL flags: operands are bf16 (else int8)   */
#define NTPU_MATMUL_ACCUMULATE 0x02u /* MATMUL flags: chain starts at ACC (else 0)  */
#define NTPU_MATMUL_TRANSPOSE_A 0x04u /* MATMUL flags: rows are columns of N x N UB blocks */
#define NTPU_COUNTERS_CLEAR 0x01u  /* COUNTERS flags: zero all counters after reading */

/* ACT flags. Bits 3:2 (OUT) pick the destination, shared with RELU_GRAD. */
#define NTPU_ACT_BIAS 0x01u  /* add ACC[aux] (fp32, or int32 wrapping in int8 mode) */
#define NTPU_ACT_RELU 0x02u  /* negative -> 0 (fp32: sign set and not NaN) */
#define NTPU_OUT_UB 0x00u    /* bf16 -> UB[dst + r] */
#define NTPU_OUT_WB 0x04u    /* bf16 -> WB[dst + r] */
#define NTPU_OUT_ACC 0x08u   /* fp32, bit for bit -> ACC[dst + r] */
#define NTPU_OUT_INT8 0x0Cu  /* ACT only: int8 mode, requantized int8 -> UB[dst + r] */
#define NTPU_OUT_MASK 0x0Cu
#define NTPU_COLSUM_ACCUMULATE 0x01u /* COLSUM flags: the sum starts at ACC[dst] (else +0) */
#define NTPU_OPTIM_MOMENTUM 0x01u /* OPTIM flags: momentum (state rows ACC[p + rows ..]); else plain SGD */
#define NTPU_OPTIM_ADAM 0x02u      /* OPTIM flags (1.4): Adam, m = OS[s ..], v = OS[s + rows ..]       */
#define NTPU_OPTIM_DECOUPLED 0x04u /* OPTIM flags (1.4), with ADAM: AdamW's decoupled weight decay     */
#define NTPU_ADAM_AUX_ROWS 9u      /* OPTIM ADAM's constant rows at aux (NTPU_ADAM_K_*, numerics.h)   */

/* Device status: the first payload byte of every reply. */
enum ntpu_dev_status {
    NTPU_DEV_OK = 0,
    NTPU_DEV_ERR_CRC = 1,    /* frame CRC did not match; the frame was discarded           */
    NTPU_DEV_ERR_LENGTH = 2, /* LEN over max_payload, or wrong for the opcode               */
    NTPU_DEV_ERR_OPCODE = 3, /* unknown opcode                                              */
    NTPU_DEV_ERR_MEM = 4,    /* unknown memory id                                           */
    NTPU_DEV_ERR_RANGE = 5,  /* address + rows past the end of the memory                   */
    NTPU_DEV_ERR_ARG = 6,    /* reserved flag bits set, or a field value the command forbids */
    NTPU_DEV_ERR_SEQ = 7,    /* SEQ is not the one the device expects; the frame was not run (1.2) */
};

/* ID block returned by INFO (40 bytes after the status byte; 32 from a 1.3
 * device, whose missing fields read as 0). */
#define NTPU_ID_MAGIC 0x5550544Eu /* "NTPU" */
#define NTPU_ID_BYTES 40u
#define NTPU_ID_BYTES_1_3 32u /* what a device before 1.4 sends */
#define NTPU_ID_OFF_MAGIC 0         /* u32 */
#define NTPU_ID_OFF_VERSION_MAJOR 4 /* u8  */
#define NTPU_ID_OFF_VERSION_MINOR 5 /* u8  */
#define NTPU_ID_OFF_ROWS 6          /* u8: array rows (N) */
#define NTPU_ID_OFF_COLS 7          /* u8: array columns (N) */
#define NTPU_ID_OFF_DTYPES 8        /* u8: bit0 int8, bit1 bf16 */
#define NTPU_ID_OFF_FEATURES 9      /* u8: NTPU_FEATURE_* bits */
#define NTPU_ID_OFF_MAX_PAYLOAD 10  /* u16 */
#define NTPU_ID_OFF_UB_ROWS 12      /* u32 */
#define NTPU_ID_OFF_WB_ROWS 16      /* u32 */
#define NTPU_ID_OFF_ACC_ROWS 20     /* u32 */
#define NTPU_ID_OFF_CLOCK_HZ 24     /* u32: 0 in simulation */
#define NTPU_ID_OFF_PLATFORM 28     /* u8: 0 golden model, 1 RTL */
#define NTPU_ID_OFF_PM_ROWS 32      /* u32: program memory rows (1.4, feature PROGRAM) */
#define NTPU_ID_OFF_OS_ROWS 36      /* u32: optimizer-state rows (1.4, feature ADAM)   */
#define NTPU_DTYPE_INT8_BIT 0x01u
#define NTPU_DTYPE_BF16_BIT 0x02u
#define NTPU_FEATURE_TRANSPOSE_BIT 0x01u   /* LOAD_W TRANSPOSE */
#define NTPU_FEATURE_TRANSPOSE_A_BIT 0x02u /* MATMUL TRANSPOSE_A (1.1) */
#define NTPU_FEATURE_VECTOR_BIT 0x04u      /* ACT, RELU_GRAD, COLSUM (1.1) */
#define NTPU_FEATURE_OPTIM_BIT 0x08u       /* OPTIM (1.3) */
#define NTPU_FEATURE_PROGRAM_BIT 0x10u     /* PM and RUN (1.4) */
#define NTPU_FEATURE_ADAM_BIT 0x20u        /* OPTIM ADAM, memory OS (1.4) */
#define NTPU_VERSION_MAJOR 1u
#define NTPU_VERSION_MINOR 4u

/* Status block returned by STATUS (16 bytes after the status byte). */
#define NTPU_STATUS_BYTES 16u
#define NTPU_STATUS_OFF_BUSY 0          /* u8: commands still executing  */
#define NTPU_STATUS_OFF_LAST_ERROR 1    /* u8: last non-OK status sent   */
#define NTPU_STATUS_OFF_ERRORS 4        /* u32: replies with non-OK status */
#define NTPU_STATUS_OFF_COMMANDS 8      /* u32: commands executed OK     */
#define NTPU_STATUS_OFF_DROPPED 12      /* u32: bytes dropped hunting SOF */

/* Performance counters returned by COUNTERS: u64 each, in this order. */
enum ntpu_counter {
    NTPU_CNT_CYCLES = 0,       /* clock cycles                                  */
    NTPU_CNT_ARRAY_BUSY,       /* cycles a row of activations entered the array */
    NTPU_CNT_MACS,             /* rows * N * N summed over MATMULs (exact)      */
    NTPU_CNT_STALL_LINK,       /* idle: waiting for command bytes               */
    NTPU_CNT_STALL_WEIGHT,     /* MATMUL waiting for its weight tile to load    */
    NTPU_CNT_STALL_HAZARD,     /* waiting for earlier work to drain (ordering)  */
    NTPU_CNT_STALL_TX,         /* reply bytes held back by the host             */
    NTPU_CNT_RX_BYTES,         /* bytes received                                */
    NTPU_CNT_TX_BYTES,         /* bytes sent                                    */
    NTPU_CNT_COUNT
};
#define NTPU_COUNTERS_BYTES (8u * NTPU_CNT_COUNT)

#endif
