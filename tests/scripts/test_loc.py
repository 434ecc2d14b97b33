# SPDX-License-Identifier: MIT
import os
import tempfile
import unittest

import helpers  # noqa: F401
from obllib import loc

C_FILE = """\
/* File comment: not counted. */
#include <stdint.h>
#include "oram.h"

struct node {
    uint64_t key;   // a member
    uint8_t value[8];
};

typedef struct node node_t;
static const int table[4] = {
    1, 2, 3, 4,
};
static int helper(int x);

int oram_read(struct node *n,
              int x)
{
    if (x) {
        return helper(x); /* a comment inside */
    }
    // comment-only line
    return 0;
}

static int helper(int x) { return x + 1; }
"""

H_FILE = """\
#ifndef ORAM_H
#define ORAM_H
typedef struct oram oram;
int oram_read(struct node *n, int x);
static inline int twice(int x)
{
    return 2 * x;
}
#endif
"""


class TestLoc(unittest.TestCase):
    def test_classify_c(self):
        cats = loc.classify(C_FILE)
        lines = C_FILE.split("\n")
        got = {lines[i]: c for i, c in enumerate(cats) if c}
        self.assertEqual(got["#include <stdint.h>"], "other")
        self.assertEqual(got["struct node {"], "def")
        self.assertEqual(got["    uint64_t key;   // a member"], "def")
        self.assertEqual(cats[7], "def")    # "};" closing the struct
        self.assertEqual(cats[12], "other")  # "};" closing the table
        self.assertEqual(got["typedef struct node node_t;"], "def")
        self.assertEqual(got["static const int table[4] = {"], "other")
        self.assertEqual(got["static int helper(int x);"], "other")
        self.assertEqual(got["int oram_read(struct node *n,"], "alg")
        self.assertEqual(got["        return helper(x); /* a comment inside */"], "alg")
        self.assertEqual(got["static int helper(int x) { return x + 1; }"], "alg")
        self.assertIsNone(cats[0])
        self.assertEqual(sum(c is not None for c in cats), 20)
        self.assertEqual(cats.count("alg"), 9)  # 8 of oram_read (one comment line) + 1
        self.assertEqual(cats.count("other"), 6)
        self.assertEqual(cats.count("def"), 5)

    def test_classify_header(self):
        cats = loc.classify(H_FILE, header=True)
        self.assertEqual(cats.count("alg"), 4)
        self.assertEqual(cats.count("def"), 5)

    def test_tree(self):
        with tempfile.TemporaryDirectory() as d:
            for rel, text in (("src/oram/circuit.c", C_FILE), ("src/oram/oram_int.h", H_FILE),
                              ("include/obl/oram.h", H_FILE), ("src/ct.h", H_FILE),
                              ("baselines/array.c", C_FILE), ("src/oram/notes.txt", "x\n")):
                os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w") as f:
                    f.write(text)
            counts = loc.count_tree(d)
            self.assertEqual(set(counts), {"oram", "ct", "baseline_array"})
            self.assertEqual(counts["oram"], {"def": 15, "alg": 17, "other": 6, "files": 3})
            t = loc.loc_table(d)
            self.assertEqual(t.rows[-1][0], "oram")
            self.assertEqual(t.rows[-1][4], "38")


if __name__ == "__main__":
    unittest.main()
