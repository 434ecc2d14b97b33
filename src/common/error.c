/* SPDX-License-Identifier: MIT */
/*
 * Error names and messages, and the version string. The table is indexed by
 * the stable numeric code of obl/obl.h.
 */
#include <obl/obl.h>

static const struct {
    const char *name;
    const char *message;
} obl_err_table[OBL_ERR_COUNT] = {
    {"OBL_OK", "success"},
    {"OBL_ERR_INVALID_ARG", "invalid argument (NULL pointer, zero or out-of-range size)"},
    {"OBL_ERR_NOMEM", "out of memory: the allocator returned NULL"},
    {"OBL_ERR_TOO_LARGE", "size too large: the structure would overflow its limits"},
    {"OBL_ERR_RANGE", "index out of range (index >= N)"},
    {"OBL_ERR_RANDOM", "the randomness source failed"},
    {"OBL_ERR_STASH_OVERFLOW",
     "ORAM stash overflow: the access completed, no data lost (a build: nothing created)"},
    {"OBL_ERR_FULL", "map full: no free slot for a new key"},
    {"OBL_ERR_DUPLICATE_KEY", "duplicate key in bulk input"},
    {"OBL_ERR_STATE", "structure state forbids this call"},
    {"OBL_ERR_UNSUPPORTED", "not supported by this build"},
    {"OBL_ERR_IO", "an operating-system call failed"},
};

/* see obl/obl.h */
const char *obl_strerror(obl_err err)
{
    if ((unsigned)err >= OBL_ERR_COUNT)
        return "unknown error code";
    return obl_err_table[err].message;
}

/* see obl/obl.h */
const char *obl_err_name(obl_err err)
{
    if ((unsigned)err >= OBL_ERR_COUNT)
        return "OBL_ERR_UNKNOWN";
    return obl_err_table[err].name;
}

/* see obl/obl.h */
const char *obl_version(void) { return OBL_VERSION_STRING; }
