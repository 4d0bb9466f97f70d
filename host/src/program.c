/* SPDX-License-Identifier: Apache-2.0 */
/* Stored command programs (ntpu/program.h): recording goes through the link
 * (link.c appends each payload behind its u16 LEN instead of sending it), upload
 * is WRITE_MEM to PM, and a run is one RUN frame. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ntpu/program.h"

struct ntpu_program {
    const ntpu_device *dev; /* recorded on, and only runs on, this device */
    uint8_t *bytes;         /* [LEN u16][payload] ..., zero-padded to whole rows */
    size_t len, cmds;
    uint32_t rows;
    int uploaded;
    uint32_t pm_addr;
};

ntpu_status ntpu_program_begin(ntpu_device *dev)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (dev->link.rec_on)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "already recording a program");
    ntpu_link_record_begin(&dev->link);
    return NTPU_OK;
}

ntpu_status ntpu_program_end(ntpu_device *dev, ntpu_program **out)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!dev->link.rec_on)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "not recording a program");
    uint8_t *bytes;
    size_t len, cmds;
    ntpu_link_record_end(&dev->link, &bytes, &len, &cmds);
    if (!out) {
        free(bytes);
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "program_end: out is NULL");
    }
    *out = NULL;
    ntpu_program *p = calloc(1, sizeof *p);
    size_t row = 2u * dev->n, rows = (len + row - 1) / row;
    uint8_t *padded = rows ? realloc(bytes, rows * row) : NULL;
    if (!p || (rows && !padded)) {
        free(p);
        free(bytes);
        return ntpu_fail(dev, NTPU_ERR_NO_MEMORY, "out of memory for a program");
    }
    if (rows)
        memset(padded + len, 0, rows * row - len); /* a zero LEN ends the program */
    p->dev = dev;
    p->bytes = padded;
    p->len = len;
    p->cmds = cmds;
    p->rows = (uint32_t)(rows < UINT32_MAX ? rows : UINT32_MAX);
    *out = p;
    return NTPU_OK;
}

uint32_t ntpu_program_rows(const ntpu_program *p)
{
    return p ? p->rows : 0;
}

size_t ntpu_program_commands(const ntpu_program *p)
{
    return p ? p->cmds : 0;
}

/* The checks every call on a finished program makes. */
static ntpu_status check_program(ntpu_device *dev, const ntpu_program *p)
{
    ntpu_status st = ntpu_check_dev(dev);
    if (st != NTPU_OK)
        return st;
    if (!p)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "program is NULL");
    if (p->dev != dev)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "the program was recorded on another device");
    if (dev->link.rec_on)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "recording a program: a program cannot hold another");
    return NTPU_OK;
}

ntpu_status ntpu_program_upload(ntpu_device *dev, ntpu_program *p, uint32_t pm_addr)
{
    ntpu_status st = check_program(dev, p);
    if (st != NTPU_OK)
        return st;
    if (!(dev->info.features & NTPU_FEATURE_PROGRAM_BIT) || dev->info.pm_rows == 0)
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "this device has no program memory (protocol 1.4 PROGRAM)");
    if ((uint64_t)pm_addr + p->rows > dev->info.pm_rows || p->rows > 65535)
        return ntpu_fail(dev, NTPU_ERR_UNSUPPORTED, "a program of %u rows at PM row %u does not fit PM's %u rows",
                         (unsigned)p->rows, (unsigned)pm_addr, (unsigned)dev->info.pm_rows);
    dev->pm_writes++;
    /* The bytes go as they are: a PM row is 2N bytes in wire order. */
    size_t rb = 2u * dev->n, per = (dev->info.max_payload - NTPU_LEN_MEM_HDR) / rb;
    for (uint32_t done = 0; done < p->rows;) {
        uint32_t cnt = (uint32_t)(p->rows - done < per ? p->rows - done : per);
        uint8_t *f = ntpu_link_begin(&dev->link, NTPU_LEN_MEM_HDR + cnt * rb, 0, &st);
        if (!f)
            return st;
        f[0] = NTPU_OP_WRITE_MEM;
        f[1] = NTPU_MEM_PM;
        ntpu_wr16(f + 2, pm_addr + done);
        ntpu_wr16(f + 4, cnt);
        memcpy(f + NTPU_LEN_MEM_HDR, p->bytes + (size_t)done * rb, cnt * rb);
        if ((st = ntpu_link_commit(&dev->link, NULL, NULL)) != NTPU_OK)
            return st;
        done += cnt;
    }
    p->uploaded = 1;
    p->pm_addr = pm_addr;
    return NTPU_OK;
}

ntpu_status ntpu_program_run(ntpu_device *dev, const ntpu_program *p)
{
    ntpu_status st = check_program(dev, p);
    if (st != NTPU_OK)
        return st;
    if (!p->uploaded)
        return ntpu_fail(dev, NTPU_ERR_INVALID_ARG, "the program has not been uploaded to PM");
    uint8_t cmd[NTPU_LEN_RUN] = {NTPU_OP_RUN, 0};
    ntpu_wr16(cmd + 2, p->pm_addr);
    ntpu_wr16(cmd + 4, p->rows);
    return ntpu_link_command(&dev->link, cmd, sizeof cmd, NTPU_RUN_REPLY_BYTES, NULL, NULL);
}

void ntpu_program_free(ntpu_program *p)
{
    if (!p)
        return;
    free(p->bytes);
    free(p);
}
