# Oblivious map tests (issue 4): SipHash vectors, reference-model streams at
# several capacities and fills up to the maximum load, adversarial keys, bulk
# build, queue overflow (map unchanged), bad input and allocation failure.
# `test_omap --long` also measures the queue failure rate at maximum load.
obl_add_test(test_omap omap/test_omap.c TIMEOUT 300)
