/* SPDX-License-Identifier: MIT */
/*
 * Run-time choice of the instruction-set variant of the hot code.
 *
 * The hot sources (CMakeLists.txt, OBL_VARIANT_SOURCES) are compiled once per
 * variant with their external names suffixed (OBL_V below), and every
 * structure picks one variant when it is created (obl_isa_pick) and keeps
 * it: the choice depends on the CPU and the environment, never on data, and
 * costs one indirect call per operation, not a test per access. The
 * variants (docs/dispatch.md):
 *   OBL_ISA_PORTABLE  x86-64-v2 + AES-NI + PCLMUL (any CPU an enclave runs on)
 *   OBL_ISA_AVX2      x86-64-v3 (AVX2, BMI2, FMA) + AES-NI + PCLMUL
 *   OBL_ISA_AVX512    x86-64-v4 (AVX-512 F/BW/CD/DQ/VL) + AES-NI + PCLMUL
 * A build with OBL_NATIVE=ON compiles the hot sources once for the build
 * machine (-march=native, variant name `native`) and always picks it.
 */
#ifndef OBL_SRC_COMMON_CPU_H
#define OBL_SRC_COMMON_CPU_H

enum {
    OBL_ISA_PORTABLE = 0,
    OBL_ISA_AVX2 = 1,
    OBL_ISA_AVX512 = 2,
    OBL_ISA_COUNT = 3
};

/* The variant a structure created now takes: the best one this library was
 * built with that the CPU and the operating system support (cpuid, and
 * xgetbv for the saved AVX/AVX-512 state), lowered to at most the one the
 * environment variable OBL_CT_VARIANT names ("portable", "avx2",
 * "avx512"; unset or empty: no limit). -1 when the CPU lacks the portable
 * variant's instructions or OBL_CT_VARIANT holds another word: the
 * creating call then returns OBL_ERR_UNSUPPORTED. Compiled for plain
 * x86-64, so that it runs (and says no) on any CPU. Public. */
int obl_isa_pick(void);

/* 1 if variant v is built into this library and the CPU and operating
 * system support it (ignoring OBL_CT_VARIANT). Public. */
int obl_isa_runs(int v);

/* "portable", "avx2", "avx512", and "unsupported" for -1. A native build
 * names the class of its one variant (its -march's AVX-512 or AVX2, else
 * portable). */
const char *obl_isa_name(int v);

/* OBL_V(name): the name with the variant's suffix (name_avx2 ...), for the
 * external names of a variant source. OBL_VARIANT is set by the build. */
#define OBL_V_CAT_(n, v) n##_##v
#define OBL_V_CAT(n, v) OBL_V_CAT_(n, v)
#define OBL_V(name) OBL_V_CAT(name, OBL_VARIANT)

/* Declares the per-variant copies of an object `name` of type T (an
 * operations table), whichever of them this build holds. */
#define OBL_VARIANT_DECLARE(T, name) \
    extern T name##_portable, name##_avx2, name##_avx512, name##_native

/* The address of variant v's copy of `name` (v from obl_isa_pick, >= 0). */
#if defined(OBL_DISPATCH)
#if defined(OBL_BUILT_AVX512)
#define OBL_VARIANT_PICK(name, v) \
    ((v) == OBL_ISA_AVX512 ? &name##_avx512 : (v) == OBL_ISA_AVX2 ? &name##_avx2 : &name##_portable)
#else
#define OBL_VARIANT_PICK(name, v) ((v) == OBL_ISA_AVX2 ? &name##_avx2 : &name##_portable)
#endif
#else
#define OBL_VARIANT_PICK(name, v) ((void)(v), &name##_native)
#endif

/* CALL(v) for every variant v this build holds (its suffix). */
#if defined(OBL_DISPATCH) && defined(OBL_BUILT_AVX512)
#define OBL_VARIANT_EACH(CALL) CALL(portable) CALL(avx2) CALL(avx512)
#elif defined(OBL_DISPATCH)
#define OBL_VARIANT_EACH(CALL) CALL(portable) CALL(avx2)
#else
#define OBL_VARIANT_EACH(CALL) CALL(native)
#endif

#endif /* OBL_SRC_COMMON_CPU_H */
