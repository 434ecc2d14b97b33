/* SPDX-License-Identifier: MIT */
/*
 * obl: oblivious algorithms for trusted execution environments.
 *
 * This umbrella header holds what every module shares: the error codes and
 * their names, the optional caller-supplied allocator and the optional
 * caller-supplied randomness hook. The library has no global mutable state:
 * every structure carries its own allocator, PRG and statistics.
 */
#ifndef OBL_OBL_H
#define OBL_OBL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The library is compiled with every symbol hidden; what a public header
 * declares between OBL_API_BEGIN and OBL_API_END is exported, nothing else
 * (the shared library's symbol table, and libobl.a whose other symbols are
 * local). Every header of include/obl/ wraps its declarations so.
 */
#if defined(__GNUC__) || defined(__clang__)
#define OBL_API_BEGIN _Pragma("GCC visibility push(default)")
#define OBL_API_END _Pragma("GCC visibility pop")
#else
#define OBL_API_BEGIN
#define OBL_API_END
#endif

OBL_API_BEGIN

#define OBL_VERSION_MAJOR 0
#define OBL_VERSION_MINOR 1
#define OBL_VERSION_PATCH 0
#define OBL_VERSION_STRING "0.1.0"

#if defined(__GNUC__) || defined(__clang__)
#define OBL_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define OBL_WARN_UNUSED
#endif

/*
 * Error codes. The numbers are stable: they are part of the ABI and never
 * reused. Errors report public failures only (bad parameters, memory,
 * randomness, capacity events). A secret outcome such as "key not found" is
 * never an error: it comes back as a 0/1 output after the full access
 * sequence.
 */
typedef enum obl_err {
    OBL_OK = 0,
    OBL_ERR_INVALID_ARG = 1,    /* NULL pointer, zero or absurd size, bad flag */
    OBL_ERR_NOMEM = 2,          /* the allocator returned NULL */
    OBL_ERR_TOO_LARGE = 3,      /* sizes overflow size_t or the format's limits */
    OBL_ERR_RANGE = 4,          /* index >= N (a public error, see the module) */
    OBL_ERR_RANDOM = 5,         /* the randomness source failed */
    OBL_ERR_STASH_OVERFLOW = 6, /* ORAM stash full: nothing lost, see module */
    OBL_ERR_FULL = 7,           /* map at capacity: a new key found no slot */
    OBL_ERR_DUPLICATE_KEY = 8,  /* bulk build input holds a key twice */
    OBL_ERR_STATE = 9,          /* structure is in a state that forbids the call */
    OBL_ERR_UNSUPPORTED = 10,   /* feature not built into this library */
    OBL_ERR_IO = 11             /* an operating-system call failed */
} obl_err;

/* Number of distinct error codes, for tables indexed by code. */
#define OBL_ERR_COUNT 12

/* A short English sentence for `err`; never NULL, also for unknown codes. */
const char *obl_strerror(obl_err err);

/* The code's identifier, for example "OBL_ERR_NOMEM"; "OBL_ERR_UNKNOWN" else. */
const char *obl_err_name(obl_err err);

/*
 * Caller-supplied allocator. `alloc` returns `size` bytes aligned to `align`
 * (a power of two, at most 4096) or NULL; `free` receives the same size back
 * and may be given NULL. Pass NULL where a module asks for an allocator to use
 * the default one (obl_default_allocator).
 */
typedef struct obl_allocator {
    void *(*alloc)(void *opaque, size_t size, size_t align);
    void (*free)(void *opaque, void *ptr, size_t size);
    void *opaque;
} obl_allocator;

/*
 * The allocator used when none is given: the C library's aligned_alloc and
 * free. obl asks for 4096-byte alignment only for memory it reads at random
 * (the ORAM trees); on Linux, the default allocator gives every block of
 * 4 MiB and more (whatever alignment was asked: the trees and the builds'
 * working arrays alike) a 2 MiB alignment, rounds it up to a multiple of
 * that and advises it for transparent huge pages (MADV_HUGEPAGE), which
 * makes the random accesses cheaper (fewer TLB misses) and the first touch
 * of fresh memory faster (fewer page faults; both measured in docs/oram.md,
 * "Huge pages"). A caller's allocator can wrap it, to count bytes for
 * example.
 */
obl_allocator obl_default_allocator(void);

/*
 * Caller-supplied randomness: fill `len` bytes of `buf` with uniformly random
 * bytes and return 0, or return non-zero on failure (reported as
 * OBL_ERR_RANDOM). obl calls it only to seed a structure's PRG. NULL means
 * getrandom(2).
 */
typedef int (*obl_random_fn)(void *opaque, void *buf, size_t len);

/* Library version as a string, for logs. */
const char *obl_version(void);

/* The instruction-set variant a structure created now takes: "avx512",
 * "avx2" or "portable", the best this library holds that the CPU runs,
 * lowered to at most the one the environment variable OBL_CT_VARIANT names
 * (for tests and comparisons); "unsupported" when creation would return
 * OBL_ERR_UNSUPPORTED. A structure keeps the variant it was created with
 * (obl_nroram_variant, obl_roram_variant, obl_omap_variant). A build with
 * OBL_NATIVE=ON has one variant, named by its -march's class, and ignores
 * OBL_CT_VARIANT. Public: it depends on the CPU and the environment, never
 * on data (docs/dispatch.md). */
const char *obl_ct_variant(void);

OBL_API_END

#ifdef __cplusplus
}
#endif

#endif /* OBL_OBL_H */
