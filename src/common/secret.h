/* SPDX-License-Identifier: MIT */
/*
 * Secret tracking. In the `ct` build (OBL_CT_CHECK defined) OBL_SECRET marks
 * memory as undefined for valgrind memcheck, which then reports any branch or
 * address computed from it ("Conditional jump or move depends on
 * uninitialised value", "Use of uninitialised value of size 8"). A cmov or a
 * mask select on it stays silent. OBL_DECLASSIFY marks memory defined again:
 * use it where the design reveals a value (a tree ORAM's leaf label) or where
 * a test reads a result. In every other build both are no-ops.
 */
#ifndef OBL_SRC_SECRET_H
#define OBL_SRC_SECRET_H

#ifdef OBL_CT_CHECK
#include <valgrind/memcheck.h>
#define OBL_SECRET(ptr, len) ((void)VALGRIND_MAKE_MEM_UNDEFINED((ptr), (len)))
#define OBL_DECLASSIFY(ptr, len) ((void)VALGRIND_MAKE_MEM_DEFINED((ptr), (len)))
#define OBL_CT_CHECKING 1
#else
#define OBL_SECRET(ptr, len) ((void)(ptr), (void)(len))
#define OBL_DECLASSIFY(ptr, len) ((void)(ptr), (void)(len))
#define OBL_CT_CHECKING 0
#endif

/* Declassify one scalar lvalue in place and yield its value. */
#define OBL_DECLASSIFY_VAL(x) (OBL_DECLASSIFY(&(x), sizeof(x)), (x))

#endif /* OBL_SRC_SECRET_H */
