/* SPDX-License-Identifier: MIT */
/*
 * The one core count of the library and its programs: what a thread count
 * of 0 means (the pool, the sharded map, the tree builds) and the shard
 * count obl-bench's default plan takes.
 */
#ifndef OBL_SRC_COMMON_CORES_H
#define OBL_SRC_COMMON_CORES_H

/* The CPUs this process may run on: the size of its affinity mask
 * (sched_getaffinity; a process pinned to k CPUs gets k), or, where the
 * mask cannot be read, the online CPUs; at least 1. */
unsigned obl_cores(void);

#endif /* OBL_SRC_COMMON_CORES_H */
