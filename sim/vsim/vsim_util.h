// What the two Verilator harnesses (vsim.cpp: the core, vsim_board.cpp: a board top) share:
// one-line error messages and the early check of a trace file.
#ifndef NTPU_VSIM_UTIL_H
#define NTPU_VSIM_UTIL_H

#include <cerrno>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

namespace ntpu_vsim_util {

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

} // namespace ntpu_vsim_util

#endif
