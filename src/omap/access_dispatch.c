/* SPDX-License-Identifier: MIT */
/*
 * The map's operation (access.c) is compiled once per instruction-set
 * variant; these definitions of the public names call the variant the map
 * picked when it was created (m->isa: the CPU's, never the data's;
 * docs/dispatch.md).
 */
#include <obl/omap.h>

#include "common/cpu.h"
#include "omap/omap_internal.h"

/* see obl/omap.h */
obl_err obl_omap_access(obl_omap *m, uint64_t op, const void *key, const void *value_in,
                        void *value_out, uint64_t *found)
{
    if (!m)
        return OBL_ERR_INVALID_ARG;
    return OBL_VARIANT_PICK(omap_access, m->isa)(m, op, key, value_in, value_out, found);
}

/* see obl/omap.h */
obl_err obl_omap_access_batch(obl_omap *m, size_t n, const uint64_t *ops, const void *keys,
                              const void *values_in, void *values_out, uint64_t *found,
                              obl_err *errs)
{
    if (!m)
        return OBL_ERR_INVALID_ARG;
    return OBL_VARIANT_PICK(omap_access_batch, m->isa)(m, n, ops, keys, values_in, values_out,
                                                       found, errs);
}

/* see obl/omap.h */
obl_err obl_omap_get(obl_omap *m, const void *key, void *value_out, uint64_t *found)
{
    return obl_omap_access(m, OBL_OMAP_GET, key, NULL, value_out, found);
}

/* see obl/omap.h */
obl_err obl_omap_put(obl_omap *m, const void *key, const void *value, uint64_t *existed)
{
    return obl_omap_access(m, OBL_OMAP_PUT, key, value, NULL, existed);
}

/* see obl/omap.h */
obl_err obl_omap_erase(obl_omap *m, const void *key, uint64_t *existed)
{
    return obl_omap_access(m, OBL_OMAP_ERASE, key, NULL, NULL, existed);
}
