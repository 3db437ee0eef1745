// Join time: from a node's start to its clock within 100 us of the server's (issue 16).
#include <doctest/doctest.h>
