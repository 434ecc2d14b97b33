/* SPDX-License-Identifier: MIT */
/*
 * The oblivious tree build (src/oram/build.c) is compiled once per
 * instruction-set variant with its external names suffixed on the command
 * line (CMakeLists.txt, OBL_VARIANT_RENAME); these definitions of the
 * unsuffixed names call the tree's variant, and pass a test's setting to
 * every variant's copy of the build's switches.
 */
#include "common/cores.h"
#include "common/cpu.h"
#include "oram/nroram_internal.h"

#define BD_DECLARE(v)                                                                        \
    obl_err nr_build_##v(obl_nroram *o, uint64_t n, const unsigned char *data, size_t ss,    \
                         size_t data_len, const uint64_t *ids, nr_id_fn id_fn,              \
                         const void *id_ctx, uint32_t *leaves_out);                        \
    obl_err nr_build_par_##v(obl_nroram *o, uint64_t n, const unsigned char *data, size_t ss,\
                             size_t data_len, const uint64_t *ids, nr_id_fn id_fn,          \
                             const void *id_ctx, uint32_t *leaves_out, unsigned threads);
OBL_VARIANT_EACH(BD_DECLARE)

/* see nroram_internal.h */
obl_err nr_build(obl_nroram *o, uint64_t n, const unsigned char *data, size_t ss,
                 size_t data_len, const uint64_t *ids, nr_id_fn id_fn, const void *id_ctx,
                 uint32_t *leaves_out)
{
    return OBL_VARIANT_PICK(nr_build, o->isa)(o, n, data, ss, data_len, ids, id_fn, id_ctx,
                                              leaves_out);
}

/* see nroram_internal.h */
obl_err nr_build_par(obl_nroram *o, uint64_t n, const unsigned char *data, size_t ss,
                     size_t data_len, const uint64_t *ids, nr_id_fn id_fn, const void *id_ctx,
                     uint32_t *leaves_out, unsigned threads)
{
    return OBL_VARIANT_PICK(nr_build_par, o->isa)(o, n, data, ss, data_len, ids, id_fn, id_ctx,
                                                  leaves_out, threads);
}

/* see nroram_internal.h */
unsigned nr_build_threads(unsigned asked)
{
    return asked ? asked : obl_cores();
}

#ifdef OBL_TESTING
#define BD_DECLARE_SET(v)                                                                    \
    void nr_build_set_blocks_##v(size_t l2_bytes, size_t l3_bytes);                          \
    void nr_build_set_packing_##v(int allow);                                                \
    void nr_build_set_leaf_mask_##v(uint64_t mask);                                          \
    void nr_build_set_par_fault_##v(int on);
OBL_VARIANT_EACH(BD_DECLARE_SET)

/* see nroram_internal.h */
void nr_build_set_blocks(size_t l2_bytes, size_t l3_bytes)
{
#define BD_BLOCKS(v) nr_build_set_blocks_##v(l2_bytes, l3_bytes);
    OBL_VARIANT_EACH(BD_BLOCKS)
}

/* see nroram_internal.h */
void nr_build_set_packing(int allow)
{
#define BD_PACKING(v) nr_build_set_packing_##v(allow);
    OBL_VARIANT_EACH(BD_PACKING)
}

/* see nroram_internal.h */
void nr_build_set_leaf_mask(uint64_t mask)
{
#define BD_LEAF_MASK(v) nr_build_set_leaf_mask_##v(mask);
    OBL_VARIANT_EACH(BD_LEAF_MASK)
}

/* see nroram_internal.h */
void nr_build_set_par_fault(int on)
{
#define BD_PAR_FAULT(v) nr_build_set_par_fault_##v(on);
    OBL_VARIANT_EACH(BD_PAR_FAULT)
}
#endif
