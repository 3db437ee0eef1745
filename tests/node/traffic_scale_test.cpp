// Road traffic at scale: the spatial index along the road against a brute-force search (issue 16).
#include <doctest/doctest.h>
