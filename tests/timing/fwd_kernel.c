/* SPDX-License-Identifier: MIT */
/*
 * The control kernel (fwd_kernel.h) in inline assembly, so that no
 * compiler moves the pointer loads: the reload form is gcc 12's code of
 * col_step (span 8, two columns, ascending), the register form the same
 * instructions with the pointers held in r9 and r10.
 */
#include "fwd_kernel.h"

#if defined(__x86_64__) && defined(__GNUC__)

int dd_fwd_available(void) { return 1; }

/* One compare-exchange of 16 rows per iteration: load x (rows i) and y
 * (rows i + 8) of column 0, lane mask of x > y, AND/XOR swap, store x and
 * y; the same swap on column 1 under the same mask. The reload form takes
 * every base from cols (%0) as gcc 12 did, each right after the store
 * before it; the register form holds both in r9 and r10. */
__attribute__((target("avx512f,avx512dq"))) void dd_fwd_kernel(uint64_t *const *cols, size_t n,
                                                                size_t passes, int reload)
{
    if (reload) /* public */
        __asm__ volatile(
            "mov %2, %%r11\n"
            "2: xor %%edx, %%edx\n xor %%ecx, %%ecx\n"
            "1: mov 0(%0), %%r8\n lea 0x40(%%rdx), %%rsi\n lea (%%r8,%%rdx,1), %%rdi\n"
            "vmovdqu64 0x40(%%r8,%%rdx,1), %%zmm3\n vmovdqu64 (%%rdi), %%zmm2\n"
            "vpcmpnleuq %%zmm3, %%zmm2, %%k0\n vpmovm2q %%k0, %%zmm0\n"
            "vmovdqa32 %%zmm0, %%zmm1\n add $0x10, %%rcx\n"
            "vpternlogd $0x60, %%zmm3, %%zmm2, %%zmm1\n"
            "vpxord %%zmm2, %%zmm1, %%zmm2\n vpxord %%zmm3, %%zmm1, %%zmm1\n"
            "vmovdqu64 %%zmm2, (%%rdi)\n mov 0(%0), %%rdi\n vmovdqu64 %%zmm1, (%%rdi,%%rsi,1)\n"
            "mov 8(%0), %%r8\n lea (%%r8,%%rdx,1), %%rdi\n vmovdqu64 (%%r8,%%rsi,1), %%zmm2\n"
            "sub $-128, %%rdx\n vmovdqu64 (%%rdi), %%zmm4\n"
            "vpternlogd $0x60, %%zmm2, %%zmm4, %%zmm0\n"
            "vpxord %%zmm4, %%zmm0, %%zmm1\n vpxord %%zmm2, %%zmm0, %%zmm0\n"
            "vmovdqu64 %%zmm1, (%%rdi)\n mov 8(%0), %%rdi\n vmovdqu64 %%zmm0, (%%rdi,%%rsi,1)\n"
            "cmp %1, %%rcx\n jb 1b\n dec %%r11\n jnz 2b\n"
            :
            : "r"(cols), "r"(n), "r"(passes)
            : "rcx", "rdx", "rsi", "rdi", "r8", "r11", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4",
              "k0", "cc", "memory");
    else
        __asm__ volatile(
            "mov %2, %%r11\n mov 0(%0), %%r9\n mov 8(%0), %%r10\n"
            "2: xor %%edx, %%edx\n xor %%ecx, %%ecx\n"
            "1: lea 0x40(%%rdx), %%rsi\n lea (%%r9,%%rdx,1), %%rdi\n"
            "vmovdqu64 0x40(%%r9,%%rdx,1), %%zmm3\n vmovdqu64 (%%rdi), %%zmm2\n"
            "vpcmpnleuq %%zmm3, %%zmm2, %%k0\n vpmovm2q %%k0, %%zmm0\n"
            "vmovdqa32 %%zmm0, %%zmm1\n add $0x10, %%rcx\n"
            "vpternlogd $0x60, %%zmm3, %%zmm2, %%zmm1\n"
            "vpxord %%zmm2, %%zmm1, %%zmm2\n vpxord %%zmm3, %%zmm1, %%zmm1\n"
            "vmovdqu64 %%zmm2, (%%rdi)\n vmovdqu64 %%zmm1, (%%r9,%%rsi,1)\n"
            "lea (%%r10,%%rdx,1), %%rdi\n vmovdqu64 (%%r10,%%rsi,1), %%zmm2\n"
            "sub $-128, %%rdx\n vmovdqu64 (%%rdi), %%zmm4\n"
            "vpternlogd $0x60, %%zmm2, %%zmm4, %%zmm0\n"
            "vpxord %%zmm4, %%zmm0, %%zmm1\n vpxord %%zmm2, %%zmm0, %%zmm0\n"
            "vmovdqu64 %%zmm1, (%%rdi)\n vmovdqu64 %%zmm0, (%%r10,%%rsi,1)\n"
            "cmp %1, %%rcx\n jb 1b\n dec %%r11\n jnz 2b\n"
            :
            : "r"(cols), "r"(n), "r"(passes)
            : "rcx", "rdx", "rsi", "rdi", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2", "xmm3",
              "xmm4", "k0", "cc", "memory");
}

#else

int dd_fwd_available(void) { return 0; }

void dd_fwd_kernel(uint64_t *const *cols, size_t n, size_t passes, int reload)
{
    (void)cols;
    (void)n;
    (void)passes;
    (void)reload;
}

#endif
