/* SPDX-License-Identifier: MIT */
/* Negative control: a branch on a secret. memcheck must report it. */
#include <stdio.h>

#include "common/secret.h"

int main(void)
{
    volatile unsigned secret_storage = 42;
    unsigned secret = secret_storage;
    OBL_SECRET(&secret, sizeof(secret));
    int r = 0;
    if (secret > 10) /* the planted leak */
        r = 1;
    printf("leak_branch done %d\n", r);
    return 0;
}
