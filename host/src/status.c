/* SPDX-License-Identifier: Apache-2.0 */
/* Status names and the error-text helpers every other file uses. */
#include <stdio.h>

#include "internal.h"

const char *ntpu_status_str(ntpu_status s)
{
    switch (s) {
    case NTPU_OK: return "ok";
    case NTPU_ERR_INVALID_ARG: return "invalid argument";
    case NTPU_ERR_NO_DEVICE: return "no device";
    case NTPU_ERR_IO: return "link I/O error";
    case NTPU_ERR_TIMEOUT: return "timeout";
    case NTPU_ERR_DEVICE: return "device error";
    case NTPU_ERR_NO_MEMORY: return "out of memory";
    case NTPU_ERR_UNSUPPORTED: return "not supported by the device";
    case NTPU_ERR_FILE: return "file error";
    case NTPU_ERR_FORMAT: return "bad file format";
    }
    return "unknown status";
}

const char *ntpu_dev_status_str(unsigned dev_status)
{
    static const char *const names[] = {"OK",      "ERR_CRC",   "ERR_LENGTH", "ERR_OPCODE",
                                        "ERR_MEM", "ERR_RANGE", "ERR_ARG",    "ERR_SEQ"};
    return dev_status < sizeof names / sizeof names[0] ? names[dev_status] : "unknown device status";
}

void ntpu_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

void ntpu_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    ntpu_one_line(err);
}

char *ntpu_thread_error(void)
{
    static _Thread_local char text[NTPU_THREAD_ERRMSG_LEN];
    return text;
}

ntpu_status ntpu_errst(char *err, size_t errlen, ntpu_status st, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        ntpu_one_line(err);
    }
    return st;
}

ntpu_status ntpu_fail(ntpu_device *dev, ntpu_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *err = dev ? dev->err : ntpu_thread_error();
    vsnprintf(err, dev ? sizeof dev->err : NTPU_THREAD_ERRMSG_LEN, fmt, ap);
    va_end(ap);
    ntpu_one_line(err);
    return st;
}
