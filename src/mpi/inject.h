/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for obl_mpi's tests (obl-mpi --fault): a rank spoils its
 * own sends in one epoch, so that the receivers' checks can be seen to
 * fire. Not part of obl/mpi.h: test hooks stay out of public headers.
 */
#ifndef OBL_SRC_MPI_INJECT_H
#define OBL_SRC_MPI_INJECT_H

#include <stdint.h>

#include <obl/mpi.h>

enum {
    MPI_INJECT_NONE = 0,
    MPI_INJECT_TAMPER = 1,   /* flip a byte of the sealed message */
    MPI_INJECT_REPLAY = 2,   /* send the message twice: the copy is a replay */
    MPI_INJECT_TRUNCATE = 3, /* send the message without its last byte */
    MPI_INJECT_KILL = 4,     /* the rank kills itself (SIGKILL) */
    MPI_INJECT_SILENT = 5    /* the rank stops sending and sleeps */
};

/* From now on, rank `rank` applies fault `kind` to its sends of `epoch`. */
void obl_mpi_inject(obl_mpi *m, int kind, int rank, uint64_t epoch);

#endif /* OBL_SRC_MPI_INJECT_H */
