/* SPDX-License-Identifier: MIT */
/*
 * The control kernel of the column sort's timing finding (docs/timing.md,
 * "Findings"): one pass of span 8 over two columns of 64-bit words, the
 * compare-exchange of rows i .. i + 7 with i + 8 .. i + 15, in AVX-512,
 * exactly as gcc 12 compiled the sort's pass before the fix. Its addresses
 * and branches are functions of n only.
 */
#ifndef OBL_TESTS_FWD_KERNEL_H
#define OBL_TESTS_FWD_KERNEL_H

#include <stddef.h>
#include <stdint.h>

/* 1 if this build has the kernel (x86-64 with GNU C). */
int dd_fwd_available(void);

/* passes (>= 1) passes over rows 0 .. n - 1 (n a multiple of 16) of the
 * columns cols[0] and cols[1]. Both pointers are read once, before the
 * first pass; with reload 1 each is also read from cols again between
 * the two vector stores of its column (the compiled sort's code), so that
 * the second store's address comes from a load behind a pending store.
 * Needs AVX-512 F and DQ. */
void dd_fwd_kernel(uint64_t *const *cols, size_t n, size_t passes, int reload);

#endif /* OBL_TESTS_FWD_KERNEL_H */
