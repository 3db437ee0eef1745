# Included by ctest after the discovered doctest cases (TEST_INCLUDE_FILES): tests whose figures are
# timing claims run with no other test beside them, so that `ctest -j2` on a 2-core machine measures the
# claim and not the neighbour. A test renamed here must be renamed in its source too.
foreach(_name
    "recording: 30 s of configs/drivers.toml read completely by @mcap/core with the SUMMARY's counts, and a recorder killed -9 at a random moment keeps every message older than 100 ms")
  set_tests_properties("${_name}" PROPERTIES RUN_SERIAL TRUE)
endforeach()
