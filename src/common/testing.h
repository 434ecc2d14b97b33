/* SPDX-License-Identifier: MIT */
/*
 * Test switches. The library users link has none: there a switch is a
 * compile-time constant at its default and its setter does not exist. Only
 * the test build (`obl_traced`, compiled with OBL_TESTING) makes a switch a
 * variable that a test may change. Test-only functions go inside
 * `#ifdef OBL_TESTING`; the symbol check (tests/pkg/check_symbols.py) fails
 * on any mutable global of the production library.
 */
#ifndef OBL_SRC_TESTING_H
#define OBL_SRC_TESTING_H

/* OBL_TEST_KNOB(type, name, default): a file-scope switch (unused in builds
 * whose code never reads it, such as one without AVX-512). */
#ifdef OBL_TESTING
#define OBL_TEST_KNOB(type, name, value) static type name = value
#else
#define OBL_TEST_KNOB(type, name, value) static const type name __attribute__((unused)) = value
#endif

#endif /* OBL_SRC_TESTING_H */
