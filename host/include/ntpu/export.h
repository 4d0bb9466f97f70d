/* SPDX-License-Identifier: Apache-2.0 */
/* NTPU_API marks the functions libntpu.so exports; everything else stays hidden. */
#ifndef NTPU_EXPORT_H
#define NTPU_EXPORT_H
#if defined(__GNUC__)
#define NTPU_API __attribute__((visibility("default")))
#else
#define NTPU_API
#endif
#endif
