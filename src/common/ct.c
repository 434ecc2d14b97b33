/* SPDX-License-Identifier: MIT */
/*
 * Out-of-line, explicitly named variants of the constant-time block moves,
 * one per instruction set, each compiled with a target attribute so that one
 * binary holds all of them. They wrap the inline versions of src/ct.h (one
 * source), which the library's hot paths use when the build targets the set;
 * these exist so that the micro-benchmark and the tests can compare and
 * check every variant on the same machine.
 */
#include "ct.h"
#include "common/cpu.h"

#include <obl/obl.h>

void obl_ct_cmov_portable_fn(uint64_t ctl, void *dst, const void *src, size_t len)
{
    obl_ct_cmov_portable(ctl, dst, src, len);
}

void obl_ct_cswap_portable_fn(uint64_t ctl, void *a, void *b, size_t len)
{
    obl_ct_cswap_portable(ctl, a, b, len);
}

#if OBL_CT_X86

__attribute__((target("avx2"))) void obl_ct_cmov_avx2(uint64_t ctl, void *dst,
                                                       const void *src, size_t len)
{
    obl_ct_cmov_avx2_inl(ctl, dst, src, len);
}

__attribute__((target("avx2"))) void obl_ct_cswap_avx2(uint64_t ctl, void *a, void *b,
                                                        size_t len)
{
    obl_ct_cswap_avx2_inl(ctl, a, b, len);
}

__attribute__((target("avx512f,avx512bw"))) void
obl_ct_cmov_avx512(uint64_t ctl, void *dst, const void *src, size_t len)
{
    obl_ct_cmov_avx512_inl(ctl, dst, src, len);
}

__attribute__((target("avx512f,avx512bw"))) void obl_ct_cswap_avx512(uint64_t ctl, void *a,
                                                                      void *b, size_t len)
{
    obl_ct_cswap_avx512_inl(ctl, a, b, len);
}

int obl_ct_cpu_has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}

int obl_ct_cpu_has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

#else /* not x86-64: the named SIMD variants fall back to the portable code */

void obl_ct_cmov_avx2(uint64_t ctl, void *dst, const void *src, size_t len)
{
    obl_ct_cmov_portable(ctl, dst, src, len);
}
void obl_ct_cswap_avx2(uint64_t ctl, void *a, void *b, size_t len)
{
    obl_ct_cswap_portable(ctl, a, b, len);
}
void obl_ct_cmov_avx512(uint64_t ctl, void *dst, const void *src, size_t len)
{
    obl_ct_cmov_portable(ctl, dst, src, len);
}
void obl_ct_cswap_avx512(uint64_t ctl, void *a, void *b, size_t len)
{
    obl_ct_cswap_portable(ctl, a, b, len);
}
int obl_ct_cpu_has_avx2(void) { return 0; }
int obl_ct_cpu_has_avx512(void) { return 0; }

#endif

/* see obl/obl.h */
const char *obl_ct_variant(void) { return obl_isa_name(obl_isa_pick()); }
