/* SPDX-License-Identifier: MIT */
/*
 * Private: the bitonic network on columns (columns.c), the vector sort the
 * load balancer and obl_sort_columns run.
 */
#ifndef OBL_SRC_SORT_COLUMNS_H
#define OBL_SRC_SORT_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#include "ct.h"
#include "common/trace.h"

/* n rows (a power of two) as ncol (<= 8) columns; the key is the first kw
 * (1 or 2) columns, the first most significant. Public: all but the
 * columns' contents. */
typedef struct col_arr {
    uint64_t *const *col;
    size_t ncol, kw, n;
    unsigned threads;
} col_arr;

/* Sorts the rows ascending by key (equal keys in no particular order).
 * Secret: the columns. Public: the sizes and the thread count. */
void col_sort(const col_arr *s);

/* The last stage of col_sort alone (n a power of two): sorts ascending
 * rows that form a bitonic sequence (one rise and one fall, cyclically).
 * Secret: the columns. Public: the sizes. */
void col_merge(const col_arr *s);

#endif /* OBL_SRC_SORT_COLUMNS_H */
