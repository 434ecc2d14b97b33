/* SPDX-License-Identifier: MIT */
/*
 * CPU feature detection for the run-time choice of variant (common/cpu.h).
 * Like BLAKE3's and zstd's dispatchers: cpuid for the instructions, xgetbv
 * for the operating system's support of the AVX and AVX-512 register state
 * (a CPU with AVX-512 under an OS that does not save ZMM state must not run
 * it). The answer is computed once, when the library is loaded
 * (cpu_facts): in a virtual machine every cpuid is a VM exit of thousands
 * of cycles, and the sorts, which keep no structure, pick per call
 * (docs/dispatch.md).
 * OBL_CT_VARIANT is still read on every pick.
 *
 * In a dispatching build this file is compiled for plain x86-64 (no SSE4,
 * no AES), so that on a CPU without the portable variant's instructions it
 * runs and reports -1 instead of faulting (CMakeLists.txt).
 */
#include "common/cpu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

static void cpu_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

static uint64_t cpu_xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static int cpu_all(uint32_t reg, uint32_t bits) { return (reg & bits) == bits; }

/* The best variant the CPU and OS support, -1 below the portable one.
 * Feature sets: the x86-64 psABI levels v2, v3, v4 (what gcc's -march=
 * x86-64-vN assumes), each with AES-NI and PCLMUL. */
static int cpu_best(void)
{
    uint32_t r[4], max;
    cpu_cpuid(0, 0, r);
    max = r[0];
    if (max < 1)
        return -1;
    cpu_cpuid(1, 0, r);
    const uint32_t c1 = r[2], d1 = r[3];
    /* v2: SSE3 0, PCLMUL 1, SSSE3 9, CX16 13, SSE4.1 19, SSE4.2 20, POPCNT
     * 23, AES 25 (ecx); SSE2 26 (edx). LAHF-SAHF: extended leaf below. */
    const uint32_t v2c = 1u << 0 | 1u << 1 | 1u << 9 | 1u << 13 | 1u << 19 | 1u << 20 |
                         1u << 23 | 1u << 25;
    cpu_cpuid(0x80000000u, 0, r);
    uint32_t ext = 0;
    if (r[0] >= 0x80000001u) {
        cpu_cpuid(0x80000001u, 0, r);
        ext = r[2];
    }
    if (!cpu_all(c1, v2c) || !(d1 & 1u << 26) || !(ext & 1u << 0))
        return -1;
    /* v3: FMA 12, MOVBE 22, OSXSAVE 27, AVX 28, F16C 29 (ecx of leaf 1);
     * BMI1 3, AVX2 5, BMI2 8 (ebx of leaf 7); LZCNT 5 (extended ecx);
     * XCR0 bits 1-2 (SSE and AVX state saved by the OS). */
    const uint32_t v3c = 1u << 12 | 1u << 22 | 1u << 27 | 1u << 28 | 1u << 29;
    if (!cpu_all(c1, v3c) || max < 7 || !(ext & 1u << 5))
        return OBL_ISA_PORTABLE;
    cpu_cpuid(7, 0, r);
    const uint32_t b7 = r[1];
    const uint64_t xcr0 = cpu_xgetbv0();
    if (!cpu_all(b7, 1u << 3 | 1u << 5 | 1u << 8) || (xcr0 & 0x6) != 0x6)
        return OBL_ISA_PORTABLE;
    /* v4: AVX512F 16, DQ 17, CD 28, BW 30, VL 31 (ebx of leaf 7); XCR0 bits
     * 5-7 (opmask, upper halves of ZMM0-15, ZMM16-31). */
    const uint32_t v4b = 1u << 16 | 1u << 17 | 1u << 28 | 1u << 30 | 1u << 31;
    if (!cpu_all(b7, v4b) || (xcr0 & 0xe6) != 0xe6)
        return OBL_ISA_AVX2;
    return OBL_ISA_AVX512;
}
#else
static int cpu_best(void) { return -1; }
#endif

/* cpu_best of this process, read once at load, before any thread of the
 * program exists (so no lock and no race): CPU and OS facts do not change
 * while it runs. A pick from another constructor that runs first asks
 * the CPU itself. */
static int cpu_cached = -2;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor)) static void cpu_init(void) { cpu_cached = cpu_best(); }
#endif

static int cpu_facts(void) { return cpu_cached == -2 ? cpu_best() : cpu_cached; }

/* The best variant built into this library. */
static int cpu_built(void)
{
#if defined(OBL_DISPATCH) && defined(OBL_BUILT_AVX512)
    return OBL_ISA_AVX512;
#elif defined(OBL_DISPATCH)
    return OBL_ISA_AVX2;
#elif defined(__AVX512F__) && defined(__AVX512BW__)
    return OBL_ISA_AVX512; /* native: the class of the one variant */
#elif defined(__AVX2__)
    return OBL_ISA_AVX2;
#else
    return OBL_ISA_PORTABLE;
#endif
}

static const char *const cpu_names[OBL_ISA_COUNT] = {"portable", "avx2", "avx512"};

/* see common/cpu.h */
const char *obl_isa_name(int v)
{
    return v >= 0 && v < OBL_ISA_COUNT ? cpu_names[v] : "unsupported";
}

/* see common/cpu.h */
int obl_isa_runs(int v)
{
    if (v < 0 || v >= OBL_ISA_COUNT)
        return 0;
#if defined(OBL_DISPATCH)
    return v <= cpu_built() && v <= cpu_facts();
#else
    /* a native build runs its one variant, on the CPU it was built for */
    return v == cpu_built() && cpu_facts() >= 0;
#endif
}

/* see common/cpu.h */
int obl_isa_pick(void)
{
    int best = cpu_facts();
    if (best < 0)
        return -1;
#if defined(OBL_DISPATCH)
    if (best > cpu_built())
        best = cpu_built();
    const char *env = getenv("OBL_CT_VARIANT");
    if (env && *env) {
        int cap = -1;
        for (int v = 0; v < OBL_ISA_COUNT; v++)
            if (!strcmp(env, cpu_names[v]))
                cap = v;
        if (cap < 0)
            return -1;
        if (cap < best)
            best = cap;
    }
    return best;
#else
    /* native: one variant, whatever the environment says */
    return cpu_built();
#endif
}
