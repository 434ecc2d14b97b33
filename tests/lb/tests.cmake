# SPDX-License-Identifier: MIT
# The load balancer (obl/lb.h): batch size, model batches, overflow,
# traces, bad input; keys, values and ops secret under memcheck.
obl_add_test(test_lb lb/test_lb.c TIMEOUT 300)
target_link_libraries(test_lb PRIVATE m)
