/* SPDX-License-Identifier: MIT */
/* Negative control: a load at a secret index. memcheck must report it. */
#include <stdio.h>

#include "common/secret.h"

static unsigned table[256];

int main(void)
{
    for (unsigned i = 0; i < 256; i++)
        table[i] = i * 7u;
    volatile unsigned secret_storage = 77;
    unsigned long secret = secret_storage;
    OBL_SECRET(&secret, sizeof(secret));
    volatile unsigned v = table[secret & 255]; /* the planted leak */
    unsigned out = v;
    OBL_DECLASSIFY(&out, sizeof(out));
    printf("leak_index done %u\n", out);
    return 0;
}
