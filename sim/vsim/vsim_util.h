/* SPDX-License-Identifier: Apache-2.0 */
// What the two Verilator harnesses (vsim.cpp: the core, vsim_board.cpp: a board top) share:
// one-line error messages, the early check of a trace file, and the byte queues on each side of
// the link.
#ifndef NTPU_VSIM_UTIL_H
#define NTPU_VSIM_UTIL_H

#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace ntpu_vsim_util
{

inline void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
inline void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

// The FST writer does not report an unwritable file; find out before the model is built.
// An empty path (no trace) is fine.
inline bool trace_writable(const std::string &path, char *err, size_t errlen)
{
    if (path.empty())
        return true;
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) {
        set_err(err, errlen, "vsim: cannot write trace file '%s': %s", path.c_str(), std::strerror(errno));
        return false;
    }
    std::fclose(f);
    return true;
}

// Bytes waiting for their reader, oldest first: [head, end) of a vector. push() may reallocate,
// so data() is valid only until the next push; compact() reuses the space already taken.
struct byte_queue {
    std::vector<uint8_t> buf;
    size_t head = 0;

    void reserve(size_t n)
    {
        buf.reserve(n);
    }
    size_t size() const
    {
        return buf.size() - head;
    }
    bool empty() const
    {
        return head == buf.size();
    }
    const uint8_t *data() const
    {
        return buf.data() + head;
    }
    void push(const uint8_t *p, size_t n)
    {
        buf.insert(buf.end(), p, p + n);
    }
    void push(uint8_t b)
    {
        buf.push_back(b);
    }
    uint8_t pop()
    {
        return buf[head++];
    } // not empty()
    void drop(size_t n)
    {
        head += n;
    } // n <= size()
    // Moves up to n bytes to dst; returns how many.
    size_t take(uint8_t *dst, size_t n)
    {
        size_t k = size() < n ? size() : n;
        if (k)
            std::memcpy(dst, data(), k);
        head += k;
        return k;
    }
    void compact()
    {
        if (head == buf.size()) {
            buf.clear();
            head = 0;
        } else if (head > 4096 && head > buf.size() / 2) {
            buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(head));
            head = 0;
        }
    }
};

} // namespace ntpu_vsim_util

#endif
